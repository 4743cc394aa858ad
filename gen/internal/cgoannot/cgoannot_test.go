package cgoannot

import (
	"testing"
)

// calls make one call each with a pointer to their own local variable, as
// code that reads a result through an out parameter does (var d int32;
// cudart.GetDevice(&d)), and return what it read. Each calls its function
// directly: through a func value, escape analysis would move the variable
// to the heap whatever the annotations.
var calls = []struct {
	name string
	call func() (int32, error)
	// allocs is the heap allocations of one call.
	allocs float64
}{
	{"none", func() (int32, error) { var v int32; err := Plain(&v); return v, err }, 1},
	{"nocallback", func() (int32, error) { var v int32; err := NoCallback(&v); return v, err }, 1},
	{"noescape", func() (int32, error) { var v int32; err := NoEscape(&v); return v, err }, 1},
	{"both", func() (int32, error) { var v int32; err := Both(&v); return v, err }, 0},
}

// TestEscape checks what the annotations change: cgo keeps a pointer
// argument off the heap only when the function is both noescape and
// nocallback; either alone changes nothing about where it lives.
func TestEscape(t *testing.T) {
	for _, c := range calls {
		got := testing.AllocsPerRun(100, func() {
			if v, err := c.call(); err != nil || v != 7 {
				t.Fatalf("%s: read %d, %v; want 7, nil", c.name, v, err)
			}
		})
		if got != c.allocs {
			t.Errorf("%s: %v allocations per call, want %v", c.name, got, c.allocs)
		}
	}
}

// BenchmarkCall calls the stand-in with a pointer to a variable of the
// call (local), and with a pointer to one variable declared outside the
// loop, already on the heap (hoisted).
func BenchmarkCall(b *testing.B) {
	for _, c := range calls {
		b.Run("local/"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.call(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	hoisted := []struct {
		name string
		call func(*int32) error
	}{{"none", Plain}, {"nocallback", NoCallback}, {"noescape", NoEscape}, {"both", Both}}
	for _, c := range hoisted {
		b.Run("hoisted/"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			var v int32
			for b.Loop() {
				if err := c.call(&v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
