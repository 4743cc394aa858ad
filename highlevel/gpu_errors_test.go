package highlevel

import (
	"fmt"
	"testing"
)

// TestGPUOutOfMemory allocates more than the device has through each
// allocation path: each must fail with an *OutOfMemoryError of the size
// and device asked, matching cudart.ErrorMemoryAllocation, its message
// naming the operation once; the device must still work afterwards.
func TestGPUOutOfMemory(t *testing.T) {
	d := gpu(t)
	_, total, err := d.MemInfo()
	if err != nil {
		t.Fatal(err)
	}
	size := total + 1<<30
	pool, err := NewMemoryPool(d)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	s, err := NewStream(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, tc := range []struct {
		name string
		err  error
		size int
		dev  Device
		op   string
	}{
		{"Device.Alloc", second(d.Alloc(size)), size, d, fmt.Sprintf("alloc %d bytes on %v", size, d)},
		{"MemoryPool.Alloc", second(pool.Alloc(size)), roundSize(size), d, fmt.Sprintf("alloc %d bytes from a memory pool of %v", size, d)},
		{"AllocArray", second(AllocArray[float32](d, size/4)), size / 4 * 4, d, fmt.Sprintf("alloc array of %d float32", size/4)},
		{"AllocAsync", second(AllocAsync(s, size)), size, d, fmt.Sprintf("alloc %d bytes async from a memory async pool of %v", size, d)},
		{"AllocPinnedUnpooled", second(AllocPinnedUnpooled(1 << 50)), 1 << 50, CPUDevice, "alloc 1125899906842624 bytes of pinned memory"},
	} {
		if !checkOutOfMemory(t, tc.name, tc.err, tc.size, tc.dev) {
			continue
		}
		checkMessage(t, tc.name, tc.err, tc.op)
		t.Logf("%s: %v", tc.name, tc.err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatalf("the stream after the failed allocations: %v", err)
	}
	a, err := AllocArray[float32](pool, 1<<20)
	if err != nil {
		t.Fatalf("a 4 MiB array after the failed allocations: %v", err)
	}
	a.Free()
}
