package highlevel

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/gocuda/cuda/cudadrv"
	"github.com/gocuda/cuda/highlevel/internal/driver"
)

// Copies between device memory and pageable (ordinary Go) memory of at least
// stagingThreshold bytes do not hand the Go memory to CUDA, which would copy
// it through its own small staging buffers with one CPU thread. They copy it,
// chunk by chunk, into two pinned buffers from the default pinned memory pool
// with several goroutines, while the GPU copies the other buffer: the CPU's
// and the DMA engine's work overlap. How near the link's pinned speed that
// comes depends on the host's memory bandwidth, as every byte is read and
// written once more than in a pinned copy.
const (
	stagingThreshold = 2 << 20
	minStagingChunk  = 1 << 20
	// copyPiece is the least a copying goroutine copies.
	copyPiece = 256 << 10
)

// Variables, so that BenchmarkGPUStaging can try others.
var (
	maxStagingChunk = 16 << 20
	// maxCopiers bounds the number of copying goroutines. On an H200's host
	// (16 cores of a virtual machine) one copies 8-9 GB/s, 16 together
	// 40-50 GB/s; with 16 MiB chunks, 8 to 16 gave the fastest pipeline.
	maxCopiers = 16
)

// stagingChunk returns the chunk size for a staged copy of n bytes: about an
// eighth of it, so that the first chunk, which nothing overlaps, is short,
// within [minStagingChunk, maxStagingChunk].
func stagingChunk(n int) int {
	c := (n/8 + copyPiece - 1) / copyPiece * copyPiece
	return min(max(c, minStagingChunk), maxStagingChunk)
}

// pageable reports whether h is pageable host memory: neither pinned, nor
// registered with CUDA, nor device or managed memory, all of which CUDA
// copies directly.
func pageable(h unsafe.Pointer) (bool, error) {
	var dev, typ, managed int32
	if err := check("cuPointerGetAttributes", driver.PointerDevice(h, &dev, &typ, &managed)); err != nil {
		return false, err
	}
	return typ == 0 && managed == 0, nil
}

// stagedCopy copies n bytes between device memory d, in context ctx, and
// pageable host memory h, on stream s (0 for the legacy default stream),
// through a pipeline of two pinned buffers from the pinned memory
// allocator. It returns when the copy is done, and reports whether it
// staged: when the allocator fails (out of pinned memory, a closed pool)
// it copies nothing, and the caller lets CUDA copy.
func stagedCopy(ctx, d, h unsafe.Pointer, n int, s uintptr, toDevice bool) (bool, error) {
	chunk := stagingChunk(n)
	alloc := pinnedAlloc()
	var p pipeline
	var events [2]uintptr
	for i := range p.bufs {
		m, err := alloc(chunk)
		if err != nil || m == nil {
			return false, nil
		}
		defer m.Free()
		if len(m.Bytes()) < chunk { // an allocator of the program's that is wrong
			return false, nil
		}
		p.bufs[i] = m.Bytes()[:chunk]
		if err := check("cuEventCreate", driver.EventCreate(ctx, &events[i], uint32(cudadrv.EVENT_DISABLE_TIMING))); err != nil {
			return true, err
		}
		defer driver.EventDestroy(ctx, events[i])
	}
	p.start = func(b, off, l int) error {
		buf := unsafe.Pointer(unsafe.SliceData(p.bufs[b]))
		dev := unsafe.Add(d, off)
		dst, src := buf, dev
		if toDevice {
			dst, src = dev, buf
		}
		return check("cuMemcpyAsync", driver.MemcpyRecord(ctx, dst, src, uintptr(l), s, events[b]))
	}
	p.wait = func(b int) error {
		return check("cuEventQuery", driver.EventSpin(ctx, events[b]))
	}
	host := unsafe.Slice((*byte)(h), n)
	var err error
	if toDevice {
		err = p.toDevice(host)
	} else {
		err = p.fromDevice(host)
	}
	if err != nil && p.written > 0 {
		err = fmt.Errorf("%w: up to the first %d of the %d bytes: %w", ErrPartialCopy, p.written, n, err)
	}
	return true, err
}

// A pipeline moves data between host memory and the device through two
// staging buffers of equal size, each reused only once the device is done
// with it.
type pipeline struct {
	bufs [2][]byte
	// start queues the device's copy of the l bytes at offset off through
	// buffer b: from the buffer to the device, or from the device to it.
	start func(b, off, l int) error
	// wait returns when the device's last copy through buffer b is done.
	wait func(b int) error
	// busy says which buffers the device may still be copying.
	busy [2]bool
	// written is how many bytes from the start of the destination the
	// copy may have written: it has returned once they are, if at all.
	written int
}

// begin queues the device's copy of chunk i of n bytes.
func (p *pipeline) begin(i, n int) error {
	c := len(p.bufs[0])
	b, off := i%2, i*c
	p.busy[b] = true
	return p.start(b, off, min(c, n-off))
}

// finish waits for buffer b to be free.
func (p *pipeline) finish(b int) error {
	if !p.busy[b] {
		return nil
	}
	p.busy[b] = false
	return p.wait(b)
}

// drain waits for both buffers, so that none is returned to its pool while
// the device copies it, and joins err with what the waits return.
func (p *pipeline) drain(err error) error {
	return join(err, p.finish(0), p.finish(1))
}

// toDevice copies src to the device: while the device copies one buffer,
// the CPU fills the other.
func (p *pipeline) toDevice(src []byte) error {
	c := len(p.bufs[0])
	for i, off := 0, 0; off < len(src); i, off = i+1, off+c {
		b := i % 2
		if err := p.finish(b); err != nil {
			return p.drain(err)
		}
		parallelCopy(p.bufs[b], src[off:min(off+c, len(src))])
		// A refused chunk may still have been queued (and waited for).
		p.written = min(off+c, len(src))
		if err := p.begin(i, len(src)); err != nil {
			return p.drain(err)
		}
	}
	return p.drain(nil)
}

// fromDevice copies from the device to dst: while the CPU empties one
// buffer, the device fills the other.
func (p *pipeline) fromDevice(dst []byte) error {
	c := len(p.bufs[0])
	chunks := (len(dst) + c - 1) / c
	for i := range min(2, chunks) {
		if err := p.begin(i, len(dst)); err != nil {
			return p.drain(err)
		}
	}
	for i := range chunks {
		b, off := i%2, i*c
		if err := p.finish(b); err != nil {
			return p.drain(err)
		}
		parallelCopy(dst[off:min(off+c, len(dst))], p.bufs[b])
		p.written = min(off+c, len(dst))
		if i+2 < chunks {
			if err := p.begin(i+2, len(dst)); err != nil {
				return p.drain(err)
			}
		}
	}
	return p.drain(nil)
}

// parallelCopy copies min(len(dst), len(src)) bytes with up to maxCopiers
// goroutines, each copying at least copyPiece bytes: one core does not
// reach the memory bandwidth a PCIe or NVLink-C2C link takes.
func parallelCopy(dst, src []byte) {
	n := min(len(dst), len(src))
	w := min(runtime.GOMAXPROCS(0), maxCopiers, n/copyPiece)
	if w <= 1 {
		copy(dst[:n], src[:n])
		return
	}
	step := (n + w - 1) / w
	var wg sync.WaitGroup
	for off := 0; off < n; off += step {
		end := min(off+step, n)
		wg.Go(func() { copy(dst[off:end], src[off:end]) })
	}
	wg.Wait()
}
