// Package ccheck compares generated Go bindings with C's view of the same
// headers: the layout, value and symbol tests that gen emits call it with a
// Go table and the table the C compiler produced (package internal/ctest of
// each binding).
package ccheck

import (
	"testing"

	"github.com/gocuda/cuda/internal/dl"
)

// Size is a type's size and alignment.
type Size struct {
	Name        string
	Size, Align uintptr
}

// Offset is a field's offset, named Type.Field.
type Offset struct {
	Name   string
	Offset uintptr
}

// Value is an enumerator's or integer constant's value.
type Value struct {
	Name  string
	Value int64
}

// Symbol is a function's C name and the procedure that calls it.
type Symbol struct {
	Name string
	Proc *dl.Proc
}

// Layout checks every Go type's size and alignment and every field's offset
// against C's, and that both sides list the same number of each.
func Layout(t *testing.T, sizes []Size, cSizes map[string][2]uintptr, offsets []Offset, cOffsets map[string]uintptr) {
	t.Helper()
	if len(cSizes) != len(sizes) {
		t.Errorf("C has %d types, Go %d", len(cSizes), len(sizes))
	}
	for _, g := range sizes {
		want, ok := cSizes[g.Name]
		switch {
		case !ok:
			t.Errorf("%s: C does not know it", g.Name)
		case g.Size != want[0]:
			t.Errorf("%s: size %d, C %d", g.Name, g.Size, want[0])
		case g.Align != want[1] && !(want[1] > 8 && g.Align == 8):
			// Go aligns nothing beyond 8 bytes; the generated doc says so.
			t.Errorf("%s: alignment %d, C %d", g.Name, g.Align, want[1])
		}
	}
	if len(cOffsets) != len(offsets) {
		t.Errorf("C has %d field offsets, Go %d", len(cOffsets), len(offsets))
	}
	for _, g := range offsets {
		if want, ok := cOffsets[g.Name]; !ok || g.Offset != want {
			t.Errorf("%s: offset %d, C %d (known to C: %v)", g.Name, g.Offset, want, ok)
		}
	}
}

// Values checks every enumerator and integer constant against C's.
func Values(t *testing.T, values []Value, cValues map[string]int64) {
	t.Helper()
	if len(cValues) != len(values) {
		t.Errorf("C has %d values, Go %d", len(cValues), len(values))
	}
	for _, g := range values {
		if want, ok := cValues[g.Name]; !ok || g.Value != want {
			t.Errorf("%s = %d, C %d (known to C: %v)", g.Name, g.Value, want, ok)
		}
	}
}

// Symbols checks that each function looks up the symbol that C code
// compiled against the headers calls: cSymbols gives C's by C name, and
// cPerThread C's when compiled for the per-thread default stream (nil when
// the package has no such option). A per-thread name that the headers
// define inline (listed in wrappers) is not a library symbol: the function
// keeps the default one.
func Symbols(t *testing.T, symbols []Symbol, cSymbols, cPerThread map[string]string, wrappers []string) {
	t.Helper()
	if len(cSymbols) != len(symbols) {
		t.Errorf("C has %d functions, Go %d", len(cSymbols), len(symbols))
	}
	inline := map[string]bool{}
	for _, w := range wrappers {
		inline[w] = true
	}
	for _, g := range symbols {
		if want := cSymbols[g.Name]; g.Proc.Name() != want {
			t.Errorf("%s: looks up %s, C calls %q", g.Name, g.Proc.Name(), want)
		}
		if cPerThread == nil {
			if g.Proc.PerThreadName() != "" {
				t.Errorf("%s: has per-thread symbol %s, but the package has no per-thread option", g.Name, g.Proc.PerThreadName())
			}
			continue
		}
		got, want := g.Proc.PerThreadName(), cPerThread[g.Name]
		if got == "" {
			got = g.Proc.Name()
		}
		if got != want && !(inline[want] && got == g.Proc.Name()) {
			t.Errorf("%s: looks up %s for the per-thread default stream, C calls %q", g.Name, got, want)
		}
	}
}
