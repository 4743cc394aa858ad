package highlevel

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/gocuda/cuda/cudadrv"
)

// tagAllocator is an Allocator that records its name in its failures.
type tagAllocator string

func (a tagAllocator) Alloc(int) (MemoryPointer, error) {
	return MemoryPointer{}, errors.New(string(a))
}

func allocName(t *testing.T) string {
	t.Helper()
	_, err := Alloc(1)
	if err == nil {
		t.Fatal("Alloc through a test allocator succeeded")
	}
	name, ok := strings.CutPrefix(err.Error(), "highlevel: alloc 1 bytes: ")
	if !ok {
		t.Fatalf("Alloc: %v, want the operation named", err)
	}
	return name
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
	if _, err := AllocArray[float32](nil, 4); err == nil || err.Error() != "highlevel: alloc array of 4 float32: base" {
		t.Errorf("AllocArray: %v, want base's error", err)
	}
	if _, err := ArrayFrom(nil, []int32{1}); err == nil || err.Error() != "highlevel: alloc array of 1 int32: base" {
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

// TestExplicitAllocators checks that AllocArray and ArrayFrom allocate
// from the allocator named, leaving the default alone.
func TestExplicitAllocators(t *testing.T) {
	resetAllocators()
	t.Cleanup(resetAllocators)
	if _, err := AllocArray[float32](tagAllocator("mine"), 4); err == nil || err.Error() != "highlevel: alloc array of 4 float32: mine" {
		t.Errorf("AllocArray: %v, want mine's error", err)
	}
	if _, err := ArrayFrom(tagAllocator("mine"), []float32{1}); err == nil || err.Error() != "highlevel: alloc array of 1 float32: mine" {
		t.Errorf("ArrayFrom: %v, want mine's error", err)
	}
	if _, err := AllocArray[string](tagAllocator("mine"), 4); err == nil || err.Error() == "mine" {
		t.Errorf("AllocArray[string]: %v, want the element type refused first", err)
	}
	if err := SetAllocator(tagAllocator("base")); err != nil {
		t.Errorf("SetAllocator after explicit allocations: %v", err)
	}
	if a, err := AllocArray[byte](tagAllocator("mine"), 0); err != nil || a.Len() != 0 {
		t.Errorf("AllocArray of 0 elements = %v, %v", a, err)
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
		{"*int", func() error { _, err := AllocArray[*int](nil, 4); return err }()},
		{"string in struct", func() error { _, err := AllocArray[named](nil, 4); return err }()},
		{"slice", func() error { _, err := ArrayFrom(nil, [][]byte{{1}}); return err }()},
		{"map", func() error { _, err := RegisterHost([]map[int]int{nil}); return err }()},
		{"empty struct", func() error { _, err := AllocArray[struct{}](nil, 4); return err }()},
	} {
		if tc.err == nil {
			t.Errorf("%s accepted", tc.name)
		}
	}
	if _, err := AllocArray[int32](nil, -1); err == nil {
		t.Errorf("AllocArray(nil, -1) accepted")
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
	if err := cudadrv.Load(); err == nil {
		t.Skip("CUDA is here: this test is for machines without it")
	}
	if IsAvailable() {
		t.Error("IsAvailable = true without CUDA")
	}
	_, err := DeviceCount()
	var le *cudadrv.LibraryError
	if !errors.As(err, &le) {
		t.Fatalf("DeviceCount error = %v, want a *LibraryError", err)
	}
	if _, err := Device(0).Alloc(1024); !errors.As(err, &le) {
		t.Errorf("Malloc error = %v, want a *LibraryError", err)
	}
	if _, err := NewStream(0, nil); err == nil {
		t.Errorf("NewStream succeeded without CUDA")
	}
	if _, err := AllocPinned(10); !errors.As(err, &le) {
		t.Errorf("AllocPinned error = %v, want a *LibraryError", err)
	}
	if _, err := ArrayFrom(nil, []float32{1, 2}); err == nil {
		t.Errorf("ArrayFrom succeeded without CUDA")
	}
}

// hostMemory returns a Memory over n bytes of Go memory, at an address
// aligned to 8 bytes, for the checks made before any CUDA call.
func hostMemory(n int) *Memory {
	b := make([]uint64, (n+7)/8)
	return &Memory{ptr: unsafe.Pointer(&b[0]), size: n}
}

// TestMemoryPointerValue checks MemoryPointer's accessors and that Add
// returns a new pointer, leaving its receiver alone.
func TestMemoryPointerValue(t *testing.T) {
	m := hostMemory(64)
	p := MemoryPointer{mem: m}
	q, err := p.Add(16)
	if err != nil {
		t.Fatal(err)
	}
	if p.Offset() != 0 || q.Offset() != 16 || q.Memory() != m || p.Memory() != m {
		t.Errorf("p = (%p, %d), q = (%p, %d), want (%p, 0) and (%p, 16)", p.Memory(), p.Offset(), q.Memory(), q.Offset(), m, m)
	}
	if q.Size() != 48 || q.Ptr() != unsafe.Add(m.ptr, 16) {
		t.Errorf("q.Size() = %d, q.Ptr() = %p", q.Size(), q.Ptr())
	}
	var zero MemoryPointer
	if zero.Memory() != nil || zero.Offset() != 0 || zero.Ptr() != nil || zero.Size() != 0 {
		t.Errorf("zero MemoryPointer = (%v, %d, %v, %d)", zero.Memory(), zero.Offset(), zero.Ptr(), zero.Size())
	}
}

// TestMemoryPointerFree checks that a MemoryPointer frees its memory from
// its start only, and that the zero one is refused.
func TestMemoryPointerFree(t *testing.T) {
	m := hostMemory(64)
	p := MemoryPointer{mem: m}
	q, err := p.Add(8)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Free(); !errors.Is(err, ErrInvalid) || m.life.Closed() {
		t.Errorf("Free of a pointer 8 bytes in: %v, freed: %v; want ErrInvalid, not freed", err, m.life.Closed())
	}
	if err := p.Free(); err != nil || !m.life.Closed() {
		t.Errorf("Free: %v, freed: %v", err, m.life.Closed())
	}
	if err := p.Free(); !errors.Is(err, ErrFreed) {
		t.Errorf("second Free: %v, want ErrFreed", err)
	}
	if err := (MemoryPointer{}).Free(); !errors.Is(err, ErrNil) {
		t.Errorf("Free of the zero MemoryPointer: %v, want ErrNil", err)
	}
}

// TestTypedCopyChecks checks CopyFromHost and CopyToHost's refusals, all
// made before any CUDA call: the zero and freed pointers, slices longer
// than the memory, element types with Go pointers; and that empty slices
// copy nothing.
func TestTypedCopyChecks(t *testing.T) {
	m := hostMemory(64)
	p, _ := MemoryPointer{mem: m}.Add(32)
	freed := hostMemory(64)
	freed.free()
	short := MemoryPointer{mem: hostMemory(16)}
	s := &Stream{h: 0x1000} // never reached: every case fails or returns first
	for _, tc := range []struct {
		name string
		err  error
		want error  // errors.Is, when not nil
		text string // in the message, when not empty
	}{
		{"to zero pointer", CopyFromHost(MemoryPointer{}, []float32{1}), ErrNil, ""},
		{"from zero pointer", CopyToHost([]float32{1}, MemoryPointer{}), ErrNil, ""},
		{"to freed", CopyFromHost(MemoryPointer{mem: freed}, []int64{1}), ErrFreed, ""},
		{"from freed", CopyToHost(make([]int64, 1), MemoryPointer{mem: freed}), ErrFreed, ""},
		{"async to freed", CopyFromHostAsync(s, MemoryPointer{mem: freed}, []int64{1}), ErrFreed, ""},
		{"async from freed", CopyToHostAsync(s, make([]int64, 1), MemoryPointer{mem: freed}), ErrFreed, ""},
		{"empty to freed", CopyFromHost(MemoryPointer{mem: freed}, []int64{}), ErrFreed, ""},
		{"past the end", CopyFromHost(p, make([]float64, 5)), nil, "40 bytes at offset 32 are past the end of the 64 bytes"},
		{"past the end, back", CopyToHost(make([]float64, 5), p), nil, "past the end"},
		{"async past the end", CopyFromHostAsync(s, p, make([]int32, 9)), nil, "past the end"},
		{"async past the end, back", CopyToHostAsync(s, make([]int32, 9), p), nil, "past the end"},
		{"device copy from a short source", p.CopyFromDevice(short, 32), ErrInvalid, "32 bytes at offset 0 are past the end of the 16 bytes"},
		{"async device copy from a short source", p.CopyFromDeviceAsync(s, short, 32), ErrInvalid, "past the end of the 16 bytes"},
		{"device copy to a short destination", short.CopyFromDevice(p, 20), ErrInvalid, "20 bytes at offset 0 are past the end of the 16 bytes"},
		{"Go pointers", CopyFromHost(p, []*int{nil}), nil, "holds Go pointers"},
		{"Go pointers, back", CopyToHost([]string{""}, p), nil, "holds Go pointers"},
		{"empty", CopyFromHost(p, []float32{}), nil, ""},
		{"nil slice", CopyToHost[float32](nil, p), nil, ""},
	} {
		switch {
		case tc.want != nil || tc.text != "":
			if tc.want != nil && !errors.Is(tc.err, tc.want) {
				t.Errorf("%s: %v, want %v", tc.name, tc.err, tc.want)
			}
			if tc.text != "" && (tc.err == nil || !strings.Contains(tc.err.Error(), tc.text)) {
				t.Errorf("%s: %v, want an error with %q", tc.name, tc.err, tc.text)
			}
		default:
			if tc.err != nil {
				t.Errorf("%s: %v", tc.name, tc.err)
			}
		}
	}
}

// TestPinnedSlice checks the typed views of pinned memory: their length
// and contents, and the refusals of nil and freed memory, misaligned
// addresses, sizes that are no multiple of the element, and element types
// with Go pointers. The memory here is Go memory standing for C memory.
func TestPinnedSlice(t *testing.T) {
	buf := make([]uint64, 4)
	m := &PinnedMemory{ptr: unsafe.Pointer(&buf[0]), size: 32}
	f, err := PinnedSlice[float32](m)
	if err != nil || len(f) != 8 {
		t.Fatalf("PinnedSlice[float32] of 32 bytes = %d elements, %v", len(f), err)
	}
	f[1] = 1
	if b := m.Bytes(); b[7] != 0x3f || b[6] != 0x80 {
		t.Errorf("Bytes after writing 1.0 to element 1: % x", b[4:8])
	}
	if _, err := PinnedSlice[[3]uint16](m); err == nil || !strings.Contains(err.Error(), "multiple") {
		t.Errorf("32 bytes as 6-byte elements: %v", err)
	}
	odd := &PinnedMemory{ptr: unsafe.Add(unsafe.Pointer(&buf[0]), 2), size: 16}
	if _, err := PinnedSlice[int32](odd); err == nil || !strings.Contains(err.Error(), "aligned") {
		t.Errorf("int32 view at an address 2 mod 4: %v", err)
	}
	if s, err := PinnedSlice[uint16](odd); err != nil || len(s) != 8 {
		t.Errorf("uint16 view at an address 2 mod 4 = %d elements, %v", len(s), err)
	}
	if _, err := PinnedSlice[*int](m); err == nil {
		t.Errorf("a view of Go pointers accepted")
	}
	if _, err := PinnedSlice[int32](nil); !errors.Is(err, ErrNil) {
		t.Errorf("PinnedSlice(nil): %v, want ErrNil", err)
	}
	m.freed.Store(true) // as Free does, without CUDA
	if _, err := PinnedSlice[int32](m); !errors.Is(err, ErrFreed) {
		t.Errorf("PinnedSlice of freed memory: %v, want ErrFreed", err)
	}
	if m.Bytes() != nil {
		t.Errorf("Bytes of freed memory is not nil")
	}
	if err := m.Free(); !errors.Is(err, ErrFreed) {
		t.Errorf("Free of freed memory: %v, want ErrFreed", err)
	}
}

// TestArrayOf checks the Array views of existing memory: bounds, alignment,
// freed memory, and that a view keeps its memory and does not free it.
func TestArrayOf(t *testing.T) {
	m := hostMemory(64)
	p := MemoryPointer{mem: m}
	a, err := ArrayOf[float32](p, 16)
	if err != nil || a.Len() != 16 || a.Ptr() != m.ptr || a.MemoryPointer().Memory() != m {
		t.Fatalf("ArrayOf[float32](64 bytes, 16) = %v, %v", a, err)
	}
	if err := a.Free(); err == nil || !strings.Contains(err.Error(), "view") {
		t.Errorf("Free of a view: %v, want an error", err)
	}
	if m.live() != nil {
		t.Errorf("Free of a view freed the memory")
	}
	s, err := a.Slice(2, 4)
	if err != nil || s.Len() != 2 || s.Ptr() != unsafe.Add(m.ptr, 8) {
		t.Errorf("Slice(2, 4) of a view = %v, %v", s, err)
	}
	at4, _ := p.Add(4)
	at8, _ := p.Add(8)
	big := int(^uint(0) >> 1)
	for _, tc := range []struct {
		name string
		err  error
		text string
	}{
		{"too long", func() error { _, err := ArrayOf[float32](p, 17); return err }(), "over 64 bytes"},
		{"too long at an offset", func() error { _, err := ArrayOf[int32](at8, 15); return err }(), "over 56 bytes"},
		{"overflow", func() error { _, err := ArrayOf[float64](p, big/4); return err }(), "out of memory"},
		{"negative", func() error { _, err := ArrayOf[float64](p, -1); return err }(), "negative"},
		{"misaligned", func() error { _, err := ArrayOf[float64](at4, 2); return err }(), "aligned"},
		{"Go pointers", func() error { _, err := ArrayOf[[]byte](p, 1); return err }(), "Go pointers"},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.text) {
			t.Errorf("%s: %v, want an error with %q", tc.name, tc.err, tc.text)
		}
	}
	if v, err := ArrayOf[int32](at4, 15); err != nil || v.Len() != 15 {
		t.Errorf("ArrayOf[int32] at offset 4 = %v, %v", v, err)
	}
	if v, err := ArrayOf[int32](p, 0); err != nil || v.Len() != 0 {
		t.Errorf("ArrayOf of 0 elements = %v, %v", v, err)
	}
	m.free()
	if _, err := ArrayOf[float32](p, 1); !errors.Is(err, ErrFreed) {
		t.Errorf("ArrayOf of freed memory: %v, want ErrFreed", err)
	}
	if _, err := ArrayOf[float32](MemoryPointer{}, 1); !errors.Is(err, ErrNil) {
		t.Errorf("ArrayOf of the zero MemoryPointer: %v, want ErrNil", err)
	}
}

// TestReleaseTwice checks the one rule for a second release: Free returns
// ErrFreed (an empty Array's too, which holds no memory), Close and
// Unregister return ErrClosed.
func TestReleaseTwice(t *testing.T) {
	a, err := AllocArray[float32](nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Free(); err != nil {
		t.Errorf("Free of an empty array: %v", err)
	}
	if err := a.Free(); !errors.Is(err, ErrFreed) {
		t.Errorf("second Free of an empty array: %v, want ErrFreed", err)
	}
	if err := a.CopyFromHost(nil); !errors.Is(err, ErrFreed) {
		t.Errorf("CopyFromHost to a freed empty array: %v, want ErrFreed", err)
	}
	if _, err := a.ToHost(); !errors.Is(err, ErrFreed) {
		t.Errorf("ToHost of a freed empty array: %v, want ErrFreed", err)
	}
	if _, err := a.Slice(0, 0); !errors.Is(err, ErrFreed) {
		t.Errorf("Slice of a freed empty array: %v, want ErrFreed", err)
	}
	m := hostMemory(8)
	if err := m.free(); err != nil {
		t.Errorf("Free: %v", err)
	}
	if err := m.free(); !errors.Is(err, ErrFreed) {
		t.Errorf("second Free: %v, want ErrFreed", err)
	}
	if err := (&HostRegistration{done: true}).Unregister(); !errors.Is(err, ErrClosed) {
		t.Errorf("second Unregister: %v, want ErrClosed", err)
	}
	pp := NewPinnedMemoryPool()
	if err := pp.Close(); err != nil {
		t.Errorf("PinnedMemoryPool.Close: %v", err)
	}
	if err := pp.Close(); !errors.Is(err, ErrClosed) {
		t.Errorf("second PinnedMemoryPool.Close: %v, want ErrClosed", err)
	}
	if _, err := pp.Alloc(1); !errors.Is(err, ErrClosed) {
		t.Errorf("PinnedMemoryPool.Alloc after Close: %v, want ErrClosed", err)
	}
	if err := pp.SetLimit(1); !errors.Is(err, ErrClosed) {
		t.Errorf("PinnedMemoryPool.SetLimit after Close: %v, want ErrClosed", err)
	}
	if err := pp.FreeAllBlocks(); !errors.Is(err, ErrClosed) {
		t.Errorf("PinnedMemoryPool.FreeAllBlocks after Close: %v, want ErrClosed", err)
	}
}

// shortAllocator is an Allocator of the program's own that returns p,
// whatever size is asked for.
type shortAllocator struct{ p MemoryPointer }

func (a shortAllocator) Alloc(int) (MemoryPointer, error) { return a.p, nil }

// TestAllocatorResultChecked checks that an array or a pool refuses what
// an allocator returns when it is not memory of the size asked for, which
// kernels and libraries, given only its address, would write past.
func TestAllocatorResultChecked(t *testing.T) {
	var host [64]byte
	small := MemoryPointer{mem: &Memory{ptr: unsafe.Pointer(&host[0]), size: 8}}
	odd := MemoryPointer{mem: &Memory{ptr: unsafe.Pointer(&host[0]), size: 64}, off: 1}
	for _, tt := range []struct {
		name string
		p    MemoryPointer
		want string
	}{
		{"no memory", MemoryPointer{}, "returned no memory"},
		{"too small", small, "returned 8 bytes"},
		{"misaligned", odd, "aligned to 4"},
	} {
		_, err := AllocArray[float32](shortAllocator{tt.p}, 4)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: AllocArray = %v, want an error saying %q", tt.name, err, tt.want)
		}
	}
	pool, err := NewMemoryPool(shortAllocator{small})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Alloc(1 << 20); err == nil || !strings.Contains(err.Error(), "returned 8 bytes") {
		t.Errorf("MemoryPool.Alloc over a short allocator = %v, want an error", err)
	}
}
