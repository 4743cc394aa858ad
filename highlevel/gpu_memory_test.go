package highlevel

import (
	"context"
	"errors"
	"slices"
	"testing"
	"unsafe"

	"github.com/gocuda/cuda/cudadrv"
	"github.com/gocuda/cuda/cudart"
)

// TestGPUTypedCopies copies Go slices of several element types to device
// memory of device 0 and back with CopyFromHost and CopyToHost, sync and
// async, below and above the staging threshold, and through typed views of
// pinned memory; the values read back must be those written.
func TestGPUTypedCopies(t *testing.T) {
	d := gpu(t)
	s, err := NewStream(d, &StreamOptions{NonBlocking: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	type point struct {
		X, Y float32
		N    int32
	}
	for _, n := range []int{1, 1000, stagingThreshold/4 + 3} {
		m, err := d.Alloc(n * 12)
		if err != nil {
			t.Fatal(err)
		}
		ints := make([]int32, n)
		pts := make([]point, n)
		for i := range n {
			ints[i] = int32(i*7 - 3)
			pts[i] = point{float32(i), -float32(i), int32(i)}
		}
		if err := CopyFromHost(m, ints); err != nil {
			t.Fatal(err)
		}
		got := make([]int32, n)
		if err := CopyToHost(got, m); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, ints) {
			t.Errorf("n=%d: int32 round trip differs", n)
		}
		if err := CopyFromHostAsync(s, m, pts); err != nil {
			t.Fatal(err)
		}
		back := make([]point, n)
		if err := CopyToHostAsync(s, back, m); err != nil {
			t.Fatal(err)
		}
		if err := s.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(back, pts) {
			t.Errorf("n=%d: struct round trip differs", n)
		}
		// Part of the memory, at an offset, read as float64.
		at, _ := m.Add(8)
		f := []float64{1.5, -2.25}
		if m.Size() < 8+16 {
			if err := CopyFromHost(at, f); err == nil {
				t.Errorf("n=%d: 16 bytes copied at offset 8 of %d", n, m.Size())
			}
		} else {
			if err := CopyFromHost(at, f); err != nil {
				t.Fatal(err)
			}
			f2 := make([]float64, 2)
			if err := CopyToHost(f2, at); err != nil || !slices.Equal(f2, f) {
				t.Errorf("n=%d: float64 at offset 8 = %v, %v", n, f2, err)
			}
		}
		m.Memory().free()
	}
	// Typed views of pinned memory, asynchronous both ways.
	const n = 1 << 20
	in, err := AllocPinned(4 * n)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Free()
	out, err := AllocPinned(4 * n)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Free()
	vin, err := PinnedSlice[float32](in)
	if err != nil {
		t.Fatal(err)
	}
	vout, err := PinnedSlice[float32](out)
	if err != nil {
		t.Fatal(err)
	}
	for i := range vin {
		vin[i] = float32(i) / 3
	}
	m, err := d.Alloc(4 * n)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Memory().free()
	if err := CopyFromHostAsync(s, m, vin); err != nil {
		t.Fatal(err)
	}
	if err := CopyToHostAsync(s, vout, m); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(vout, vin) {
		t.Errorf("pinned float32 round trip differs")
	}
	if err := CopyFromHost(m, make([]float32, n+1)); err == nil {
		t.Errorf("a copy of %d bytes into %d succeeded", 4*(n+1), 4*n)
	}
}

// TestGPUArrayOnAllocators makes Arrays on device 0 from a pool of the
// test's own, from the device (unpooled) and from a MemoryAsyncPool, and
// an ArrayOf view of memory allocated elsewhere, and reads each back.
func TestGPUArrayOnAllocators(t *testing.T) {
	d := gpu(t)
	pool, err := NewMemoryPool(d)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	ap, err := NewMemoryAsyncPool(d)
	if err != nil {
		t.Fatal(err)
	}
	defer ap.Close()
	want := []float64{1, 2, 3, 4, 5, 6, 7}
	for _, al := range []struct {
		name string
		a    Allocator
	}{{"MemoryPool", pool}, {"Device", d}, {"MemoryAsyncPool", ap}} {
		a, err := ArrayFrom(al.a, want)
		if err != nil {
			t.Fatalf("%s: %v", al.name, err)
		}
		if a.Device() != d {
			t.Errorf("%s: array on %v", al.name, a.Device())
		}
		got, err := a.ToHost()
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%s: ToHost = %v, %v", al.name, got, err)
		}
		if al.name == "MemoryPool" && pool.UsedBytes() != binSize {
			t.Errorf("pool UsedBytes with one array = %d, want %d", pool.UsedBytes(), binSize)
		}
		if err := a.Free(); err != nil {
			t.Errorf("%s: Free: %v", al.name, err)
		}
	}
	if pool.UsedBytes() != 0 || pool.FreeBytes() != binSize {
		t.Errorf("pool after Free: UsedBytes %d, FreeBytes %d", pool.UsedBytes(), pool.FreeBytes())
	}
	b, err := AllocArray[int32](pool, 100)
	if err != nil {
		t.Fatal(err)
	}
	if b.Ptr() == nil || pool.UsedBytes() != binSize {
		t.Errorf("AllocArray did not reuse the pool's block: UsedBytes %d", pool.UsedBytes())
	}
	b.Free()
	// A view of raw memory, at an offset.
	m, err := d.Alloc(1024)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Memory().free()
	at, _ := m.Add(16)
	v, err := ArrayOf[float64](at, len(want))
	if err != nil {
		t.Fatal(err)
	}
	if err := v.CopyFromHost(want); err != nil {
		t.Fatal(err)
	}
	raw := make([]float64, 2+len(want))
	if err := CopyToHost(raw, m); err != nil || !slices.Equal(raw[2:], want) {
		t.Errorf("memory under an ArrayOf view = %v, %v", raw, err)
	}
	if err := v.Free(); err == nil {
		t.Errorf("Free of a view succeeded")
	}
	if _, err := ArrayOf[float64](at, 127); err == nil {
		t.Errorf("a view past the end of the memory succeeded")
	}
}

// TestGPUFreeAllBlocksStream frees the blocks a pool holds for one stream
// and checks, from the device's free memory too, that the others stay.
func TestGPUFreeAllBlocksStream(t *testing.T) {
	d := gpu(t)
	pool, err := NewMemoryPool(d)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	s1, err := NewStream(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Close()
	s2, err := NewStream(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	const size = 64 << 20
	a, err := pool.AllocAsync(s1, size)
	if err != nil {
		t.Fatal(err)
	}
	b, err := pool.AllocAsync(s2, size)
	if err != nil {
		t.Fatal(err)
	}
	a.Memory().free()
	b.Memory().free()
	if pool.FreeBytes() != 2*size {
		t.Fatalf("FreeBytes = %d, want %d", pool.FreeBytes(), 2*size)
	}
	before, _, err := d.MemInfo()
	if err != nil {
		t.Fatal(err)
	}
	if err := pool.FreeAllBlocksStream(s1); err != nil {
		t.Fatal(err)
	}
	after, _, err := d.MemInfo()
	if err != nil {
		t.Fatal(err)
	}
	if pool.TotalBytes() != size || pool.NFreeBlocks() != 1 {
		t.Errorf("after FreeAllBlocksStream(s1): TotalBytes %d, NFreeBlocks %d; want %d, 1", pool.TotalBytes(), pool.NFreeBlocks(), size)
	}
	if after-before < size {
		t.Errorf("device free memory grew by %d bytes, want at least %d", after-before, size)
	}
	c, err := pool.AllocAsync(s2, size)
	if err != nil {
		t.Fatal(err)
	}
	if c.Ptr() != b.Ptr() {
		t.Errorf("s2's block was not kept")
	}
	c.Memory().free()
}

// TestGPUManagedPrefetchAdvise gives advice about managed memory and
// prefetches it to device 0 and to the host, checking the values through
// typed copies and CUDA's own record of the last prefetch location.
func TestGPUManagedPrefetchAdvise(t *testing.T) {
	d := gpu(t)
	if v, err := d.Attribute(DeviceConcurrentManagedAccess); err != nil || v == 0 {
		t.Skipf("device 0 has no concurrent managed access (%v)", err)
	}
	s, err := NewStream(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const n = 1 << 20
	m, err := Managed(d).Alloc(4 * n)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Memory().free()
	for _, a := range []Advice{AdvisePreferredLocation, AdviseAccessedBy, AdviseReadMostly, AdviseUnsetReadMostly} {
		if err := m.Advise(4*n, a, d); err != nil {
			t.Errorf("Advise(%v, %v): %v", a, d, err)
		}
	}
	if err := m.Advise(4*n, AdviseAccessedBy, CPUDevice); err != nil {
		t.Errorf("Advise(AccessedBy, CPUDevice): %v", err)
	}
	want := make([]uint32, n)
	for i := range want {
		want[i] = uint32(i * 3)
	}
	if err := CopyFromHost(m, want); err != nil {
		t.Fatal(err)
	}
	if err := m.Prefetch(s, 4*n, d); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if loc := lastPrefetch(t, m, 4*n); loc != int(d) {
		t.Errorf("last prefetch location = %d, want %d", loc, d)
	}
	if err := m.Prefetch(s, 4*n, CPUDevice); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if loc := lastPrefetch(t, m, 4*n); loc != cudart.CpuDeviceId {
		t.Errorf("last prefetch location = %d, want the host (%d)", loc, cudart.CpuDeviceId)
	}
	got := make([]uint32, n)
	if err := CopyToHost(got, m); err != nil || !slices.Equal(got, want) {
		t.Errorf("managed memory after the prefetches differs (%v)", err)
	}
	plain, err := d.Alloc(64)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Memory().free()
	if err := plain.Prefetch(nil, 64, d); !errors.Is(err, errNotManaged) {
		t.Errorf("Prefetch of device memory: %v, want errNotManaged", err)
	}
}

// lastPrefetch returns the device of the last prefetch of n bytes at m
// (CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION), asked through cudadrv.
func lastPrefetch(t *testing.T, m MemoryPointer, n int) int {
	t.Helper()
	var loc int32
	err := m.Device().Do(func() error {
		return cudadrv.MemRangeGetAttribute(unsafe.Pointer(&loc), 4, cudadrv.MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION,
			cudadrv.DeviceptrOf(m.Ptr()), uint64(n))
	})
	if err != nil {
		t.Fatal(err)
	}
	return int(loc)
}

// TestGPUSetLimitFraction limits a MemoryPool and a MemoryAsyncPool of
// device 0 to a fraction of its memory: the limits are that fraction of
// MemInfo's total, and an allocation past them fails with
// cudart.ErrorMemoryAllocation while a smaller one succeeds.
func TestGPUSetLimitFraction(t *testing.T) {
	d := gpu(t)
	_, total, err := d.MemInfo()
	if err != nil {
		t.Fatal(err)
	}
	pool, err := NewMemoryPool(d)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := pool.SetLimitFraction(0.5); err != nil {
		t.Fatal(err)
	}
	if pool.Limit() != total/2 {
		t.Errorf("Limit = %d, want %d", pool.Limit(), total/2)
	}
	if err := pool.SetLimitFraction(0.001); err != nil {
		t.Fatal(err)
	}
	limit := int(0.001 * float64(total))
	if _, err := pool.Alloc(limit + binSize); !errors.Is(err, cudart.ErrorMemoryAllocation) {
		t.Errorf("MemoryPool allocation past the limit: %v", err)
	}
	if m, err := pool.Alloc(limit / 2); err != nil {
		t.Errorf("MemoryPool allocation within the limit: %v", err)
	} else {
		m.Memory().free()
	}
	ap, err := NewMemoryAsyncPool(d)
	if err != nil {
		t.Fatal(err)
	}
	defer ap.Close()
	if err := ap.SetLimitFraction(0.001); err != nil {
		t.Fatal(err)
	}
	if ap.Limit() != limit {
		t.Errorf("MemoryAsyncPool Limit = %d, want %d", ap.Limit(), limit)
	}
	a, err := ap.Alloc(limit / 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ap.Alloc(limit/2 + 1024); !errors.Is(err, cudart.ErrorMemoryAllocation) {
		t.Errorf("MemoryAsyncPool allocation past the limit: %v", err)
	}
	a.Memory().free()
	if b, err := ap.Alloc(limit/2 + 1024); err != nil {
		t.Errorf("MemoryAsyncPool allocation within the limit after a Free: %v", err)
	} else {
		b.Memory().free()
	}
	if err := ap.SetLimitFraction(0); err != nil || ap.Limit() != 0 {
		t.Errorf("SetLimitFraction(0) = %v, Limit %d", err, ap.Limit())
	}
}

// TestGPUPinnedAllocatorStaging sets a pinned memory allocator that counts
// its calls: staged copies from and to pageable memory take their buffers
// from it, and when it fails they still copy, unstaged.
func TestGPUPinnedAllocatorStaging(t *testing.T) {
	d := gpu(t)
	resetAllocators()
	t.Cleanup(resetAllocators)
	pool := NewPinnedMemoryPool()
	defer pool.Close()
	var calls int
	fail := false
	err := SetPinnedMemoryAllocator(func(size int) (*PinnedMemory, error) {
		calls++
		if fail {
			return nil, errors.New("no pinned memory today")
		}
		return pool.Alloc(size)
	})
	if err != nil {
		t.Fatal(err)
	}
	const n = 3 * stagingThreshold
	m, err := d.Alloc(n)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Memory().free()
	for _, f := range []bool{false, true} {
		fail, calls = f, 0
		src := randomBytes(n)
		if err := CopyFromHost(m, src); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, n)
		if err := CopyToHost(got, m); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, src) {
			t.Errorf("failing allocator %v: round trip differs", f)
		}
		if calls < 2 {
			t.Errorf("failing allocator %v: %d calls to the pinned allocator, want at least 2", f, calls)
		}
	}
	if pool.TotalBytes() == 0 || pool.UsedBytes() != 0 {
		t.Errorf("the staging pool holds %d bytes, %d in use", pool.TotalBytes(), pool.UsedBytes())
	}
}
