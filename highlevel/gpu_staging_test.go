package highlevel

import (
	"bytes"
	"fmt"
	"testing"
	"time"
	"unsafe"
)

// TestGPUStagedCopies copies pageable Go memory to and from the device at
// sizes below, at and above the staging threshold and across chunk
// boundaries, at odd host and device offsets. Each direction is checked
// through a pinned buffer, which CUDA copies directly.
func TestGPUStagedCopies(t *testing.T) {
	d := gpu(t)
	const most = 64<<20 + 3 + 8
	m, err := d.Alloc(most)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Memory().free()
	pinned, err := AllocPinned(most)
	if err != nil {
		t.Fatal(err)
	}
	defer pinned.Free()
	host := randomBytes(most)
	for _, n := range []int{stagingThreshold - 1, stagingThreshold, stagingThreshold + 1, 3*minStagingChunk + 17, 37<<20 + 5, 64<<20 + 3} {
		for _, off := range []struct{ host, dev int }{{0, 0}, {1, 0}, {7, 3}, {0, 5}} {
			t.Run(fmt.Sprintf("n=%d/host+%d/dev+%d", n, off.host, off.dev), func(t *testing.T) {
				p, err := m.Add(off.dev)
				if err != nil {
					t.Fatal(err)
				}
				src := host[off.host : off.host+n]
				if err := p.CopyFromHostPointer(unsafe.Pointer(&src[0]), n); err != nil {
					t.Fatal(err)
				}
				got := pinned.Bytes()[:n]
				clear(got)
				if err := p.CopyToHostPointer(pinned.Ptr(), n); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, src) {
					t.Fatalf("host to device differs at byte %d", firstDifference(got, src))
				}
				// The other way: the device holds src; copy it back into
				// pageable memory at another offset.
				back := make([]byte, n+off.host)[off.host:]
				if err := p.CopyToHostPointer(unsafe.Pointer(&back[0]), n); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(back, src) {
					t.Fatalf("device to host differs at byte %d", firstDifference(back, src))
				}
			})
		}
	}
}

// TestGPUStagedArray round-trips an Array through pageable slices.
func TestGPUStagedArray(t *testing.T) {
	gpu(t)
	src := make([]float64, 3<<20+1)
	for i := range src {
		src[i] = float64(i) * 0.5
	}
	a, err := ArrayFrom(nil, src)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Free()
	got, err := a.ToHost()
	if err != nil {
		t.Fatal(err)
	}
	for i := range src {
		if got[i] != src[i] {
			t.Fatalf("element %d: got %v, want %v", i, got[i], src[i])
		}
	}
}

// TestGPUStagedAsyncOrder checks that staged asynchronous copies run in
// their stream's order: the stream is held up by a host function, and work
// queued before a copy must be seen by it, work queued after it must follow
// it. On a stream that does not synchronize with the default stream, a copy
// that ran anywhere else would come first.
func TestGPUStagedAsyncOrder(t *testing.T) {
	d := gpu(t)
	s, err := NewStream(d, &StreamOptions{NonBlocking: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const n = 24<<20 + 1
	m, err := d.Alloc(n)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Memory().free()
	hold := func() {
		if err := s.LaunchHostFunc(func() { time.Sleep(100 * time.Millisecond) }); err != nil {
			t.Fatal(err)
		}
	}

	// To the host: the memset queued before the copy is what it reads.
	hold()
	if err := m.MemsetAsync(s, 0x5A, n); err != nil {
		t.Fatal(err)
	}
	dst := make([]byte, n)
	if err := m.CopyToHostPointerAsync(s, unsafe.Pointer(&dst[0]), n); err != nil {
		t.Fatal(err)
	}
	if want := bytes.Repeat([]byte{0x5A}, n); !bytes.Equal(dst, want) {
		t.Errorf("device to host: byte %d is not the memset queued before the copy", firstDifference(dst, want))
	}

	// To the device: the copy comes after the memset queued before it and
	// before the one queued after it.
	src := randomBytes(n)
	hold()
	if err := m.MemsetAsync(s, 0xFF, n); err != nil {
		t.Fatal(err)
	}
	if err := m.CopyFromHostPointerAsync(s, unsafe.Pointer(&src[0]), n); err != nil {
		t.Fatal(err)
	}
	if err := m.MemsetAsync(s, 0, 16); err != nil {
		t.Fatal(err)
	}
	clear(src[:16])
	got := make([]byte, n)
	if err := m.CopyToHostPointerAsync(s, unsafe.Pointer(&got[0]), n); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, src) {
		t.Errorf("host to device: byte %d out of order", firstDifference(got, src))
	}
}

// BenchmarkGPUStaging times staged copies of 256 MiB with other chunk sizes
// and numbers of copying goroutines than the package's, to choose them.
func BenchmarkGPUStaging(b *testing.B) {
	d := gpu(b)
	const n = 256 << 20
	m, err := d.Alloc(n)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Memory().free()
	host := make([]byte, n)
	for i := range host {
		host[i] = byte(i)
	}
	chunk, copiers := maxStagingChunk, maxCopiers
	defer func() { maxStagingChunk, maxCopiers = chunk, copiers }()
	for _, toDevice := range []bool{true, false} {
		for _, c := range []int{4 << 20, 8 << 20, 16 << 20} {
			for _, w := range []int{4, 8, 12, 16} {
				name := fmt.Sprintf("toDevice=%v/chunk=%dMiB/copiers=%d", toDevice, c>>20, w)
				b.Run(name, func(b *testing.B) {
					maxStagingChunk, maxCopiers = c, w
					b.SetBytes(n)
					for b.Loop() {
						if toDevice {
							err = m.CopyFromHostPointer(unsafe.Pointer(&host[0]), n)
						} else {
							err = m.CopyToHostPointer(unsafe.Pointer(&host[0]), n)
						}
						if err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}
