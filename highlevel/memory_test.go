package highlevel

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gocuda/cuda/cudart"
)

// tagAllocator is an Allocator that records its name in its failures.
type tagAllocator string

func (a tagAllocator) Malloc(int) (MemoryPointer, error) {
	return MemoryPointer{}, errors.New(string(a))
}

func allocName(t *testing.T) string {
	t.Helper()
	_, err := Alloc(1)
	if err == nil {
		t.Fatal("Alloc through a test allocator succeeded")
	}
	return err.Error()
}

func TestAllocatorHooks(t *testing.T) {
	prev := SetAllocator(tagAllocator("base"))
	defer SetAllocator(prev)
	if got := allocName(t); got != "base" {
		t.Fatalf("Alloc used %q, want base", got)
	}
	err := UsingAllocator(tagAllocator("outer"), func() error {
		if got := allocName(t); got != "outer" {
			t.Errorf("in UsingAllocator: %q, want outer", got)
		}
		UsingAllocator(tagAllocator("inner"), func() error {
			if got := allocName(t); got != "inner" {
				t.Errorf("nested: %q, want inner", got)
			}
			return nil
		})
		if got := allocName(t); got != "outer" {
			t.Errorf("after nested: %q, want outer", got)
		}
		return errors.New("from fn")
	})
	if err == nil || err.Error() != "from fn" {
		t.Errorf("UsingAllocator returned %v, want fn's error", err)
	}
	if got := allocName(t); got != "base" {
		t.Errorf("after UsingAllocator: %q, want base", got)
	}
	func() {
		defer func() { recover() }()
		UsingAllocator(tagAllocator("panics"), func() error { panic("boom") })
	}()
	if got := allocName(t); got != "base" {
		t.Errorf("after a panic in fn: %q, want base", got)
	}
	if old := SetAllocator(tagAllocator("second")); old != tagAllocator("base") {
		t.Errorf("SetAllocator returned %v, want base", old)
	}
}

// TestAllocatorOverlapping runs UsingAllocator in many goroutines at once
// (under -race): whatever the order they end in, SetAllocator's allocator
// is back at the end.
func TestAllocatorOverlapping(t *testing.T) {
	prev := SetAllocator(tagAllocator("base"))
	defer SetAllocator(prev)
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Go(func() {
			name := tagAllocator("g" + string(rune('a'+i%26)))
			UsingAllocator(name, func() error {
				a, _ := GetAllocator()
				if a == nil {
					t.Error("no allocator")
				}
				return nil
			})
		})
	}
	wg.Wait()
	if got := allocName(t); got != "base" {
		t.Errorf("after overlapping calls: %q, want base", got)
	}
}

func TestArrayElementTypes(t *testing.T) {
	type point struct{ X, Y float32 }
	type named struct {
		ID   int
		Name string
	}
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"float32", checkElem[float32]()},
		{"struct of floats", checkElem[point]()},
		{"array", checkElem[[4]int64]()},
		{"complex128", checkElem[complex128]()},
	} {
		if tc.err != nil {
			t.Errorf("%s refused: %v", tc.name, tc.err)
		}
	}
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"*int", func() error { _, err := NewArray[*int](4); return err }()},
		{"string in struct", func() error { _, err := NewArray[named](4); return err }()},
		{"slice", func() error { _, err := ArrayFrom([][]byte{{1}}); return err }()},
		{"map", func() error { _, err := RegisterHost([]map[int]int{nil}); return err }()},
		{"empty struct", func() error { _, err := NewArray[struct{}](4); return err }()},
	} {
		if tc.err == nil {
			t.Errorf("%s accepted", tc.name)
		}
	}
	if _, err := NewArray[int32](-1); err == nil {
		t.Errorf("NewArray(-1) accepted")
	}
}

func TestDefaultDeviceSources(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, ".cuda-device")
	if err := os.WriteFile(file, []byte("gpu1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		env, file, want string
	}{
		{"x", "", "$CUDA_DEVICE"},
		{"-1", "", "$CUDA_DEVICE"},
		{"", file, file},
	} {
		_, err := chooseDevice(tc.env, tc.file)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "not a device number") {
			t.Errorf("chooseDevice(%q, %q) = %v, want an error naming %s", tc.env, tc.file, err, tc.want)
		}
	}
}

// TestWithoutCUDA checks what the package does where CUDA cannot be loaded:
// errors that say what was looked for, never a panic.
func TestWithoutCUDA(t *testing.T) {
	if err := cudart.Load(); err == nil {
		t.Skip("CUDA is here: this test is for machines without it")
	}
	if IsAvailable() {
		t.Error("IsAvailable = true without CUDA")
	}
	_, err := DeviceCount()
	var le *cudart.LibraryError
	if !errors.As(err, &le) {
		t.Fatalf("DeviceCount error = %v, want a *LibraryError", err)
	}
	if _, err := Device(0).Malloc(1024); !errors.As(err, &le) {
		t.Errorf("Malloc error = %v, want a *LibraryError", err)
	}
	if _, err := NewStream(0, nil); err == nil {
		t.Errorf("NewStream succeeded without CUDA")
	}
	if _, err := AllocPinnedMemory(10); !errors.As(err, &le) {
		t.Errorf("AllocPinnedMemory error = %v, want a *LibraryError", err)
	}
	if _, err := ArrayFrom([]float32{1, 2}); err == nil {
		t.Errorf("ArrayFrom succeeded without CUDA")
	}
}
