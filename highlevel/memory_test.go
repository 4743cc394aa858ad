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

// resetAllocators undoes SetAllocator, SetPinnedMemoryAllocator and the
// fixing of the defaults, for the next test.
func resetAllocators() {
	allocator.mu.Lock()
	allocator.set = nil
	allocator.fixed.Store(nil)
	allocator.mu.Unlock()
	pinnedAllocator.mu.Lock()
	pinnedAllocator.set = nil
	pinnedAllocator.fixed.Store(nil)
	pinnedAllocator.mu.Unlock()
}

// TestSetAllocator checks that the default allocator can be set until its
// first use and is fixed from then on.
func TestSetAllocator(t *testing.T) {
	resetAllocators()
	t.Cleanup(resetAllocators)
	if err := SetAllocator(tagAllocator("first")); err != nil {
		t.Fatal(err)
	}
	if err := SetAllocator(tagAllocator("base")); err != nil {
		t.Fatalf("a second SetAllocator before any use: %v", err)
	}
	if got := allocName(t); got != "base" {
		t.Fatalf("Alloc used %q, want base", got)
	}
	if _, err := NewArray[float32](4); err == nil || err.Error() != "base" {
		t.Errorf("NewArray: %v, want base's error", err)
	}
	if _, err := ArrayFrom([]int32{1}); err == nil || err.Error() != "base" {
		t.Errorf("ArrayFrom: %v, want base's error", err)
	}
	if err := SetAllocator(tagAllocator("late")); !errors.Is(err, ErrAllocatorInUse) {
		t.Errorf("SetAllocator after Alloc: %v, want ErrAllocatorInUse", err)
	}
	if err := SetAllocator(nil); !errors.Is(err, ErrAllocatorInUse) {
		t.Errorf("SetAllocator(nil) after Alloc: %v, want ErrAllocatorInUse", err)
	}
	if got := allocName(t); got != "base" {
		t.Errorf("after a refused SetAllocator Alloc used %q, want base", got)
	}
	if a, err := GetAllocator(); a != tagAllocator("base") || err != nil {
		t.Errorf("GetAllocator = %v, %v, want base", a, err)
	}
}

// TestSetAllocatorRace races SetAllocator with Alloc (under -race): every
// Alloc uses one allocator, the one fixed by the first, and every
// SetAllocator after that fails.
func TestSetAllocatorRace(t *testing.T) {
	resetAllocators()
	t.Cleanup(resetAllocators)
	SetAllocator(tagAllocator("base"))
	var wg sync.WaitGroup
	names := make(chan string, 64)
	for i := range 32 {
		wg.Go(func() {
			SetAllocator(tagAllocator("g" + string(rune('a'+i%26))))
		})
		wg.Go(func() {
			_, err := Alloc(1)
			names <- err.Error()
		})
	}
	wg.Wait()
	close(names)
	first := ""
	for n := range names {
		if first == "" {
			first = n
		}
		if n != first {
			t.Errorf("Alloc used %q and %q", first, n)
		}
	}
	if err := SetAllocator(tagAllocator("late")); !errors.Is(err, ErrAllocatorInUse) {
		t.Errorf("SetAllocator after Alloc: %v, want ErrAllocatorInUse", err)
	}
}

// TestExplicitAllocators checks that NewArrayOn and ArrayFromOn allocate
// from the allocator named, leaving the default alone.
func TestExplicitAllocators(t *testing.T) {
	resetAllocators()
	t.Cleanup(resetAllocators)
	if _, err := NewArrayOn[float32](tagAllocator("mine"), 4); err == nil || err.Error() != "mine" {
		t.Errorf("NewArrayOn: %v, want mine's error", err)
	}
	if _, err := ArrayFromOn(tagAllocator("mine"), []float32{1}); err == nil || err.Error() != "mine" {
		t.Errorf("ArrayFromOn: %v, want mine's error", err)
	}
	if _, err := NewArrayOn[float32](nil, 4); !errors.Is(err, ErrNil) {
		t.Errorf("NewArrayOn(nil): %v, want ErrNil", err)
	}
	if _, err := ArrayFromOn[float32](nil, nil); !errors.Is(err, ErrNil) {
		t.Errorf("ArrayFromOn(nil): %v, want ErrNil", err)
	}
	if _, err := NewArrayOn[string](tagAllocator("mine"), 4); err == nil || err.Error() == "mine" {
		t.Errorf("NewArrayOn[string]: %v, want the element type refused first", err)
	}
	if err := SetAllocator(tagAllocator("base")); err != nil {
		t.Errorf("SetAllocator after explicit allocations: %v", err)
	}
	if a, err := NewArrayOn[byte](tagAllocator("mine"), 0); err != nil || a.Len() != 0 {
		t.Errorf("NewArrayOn of 0 elements = %v, %v", a, err)
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
