package mixed

import (
	"errors"
	"fmt"

	"github.com/gocuda/cuda/cudadrv"
	"github.com/gocuda/cuda/highlevel"
)

// The kinds on the shared blocks: write, read and block. A goroutine works
// on a block holding its lock, and waits for its work on the block before
// it lets go, so that the block is ready for any use by the next.

// pickBlock returns one of the shared blocks, locked, or nil where the
// block's slot is empty: its allocation failed (replace tries again).
func (w *worker) pickBlock() *block {
	b := w.blocks[w.r.IntN(len(w.blocks))]
	b.mu.Lock()
	if b.n == 0 {
		b.mu.Unlock()
		return nil
	}
	return b
}

// span returns a span of b to work on, its start and length multiples of
// align (1, 4 or 8): 2 MiB or more, which copies with pageable memory
// stage, four times in ten; about 47 KB, as the copy that crashed; all of
// b; or up to 64 KiB.
func (w *worker) span(b *block, align int) span {
	var n int
	switch x := w.r.IntN(10); {
	case x < 4:
		n = staged + w.r.IntN(b.n-staged+1)
	case x == 4:
		n = 40<<10 + w.r.IntN(16<<10)
	case x == 5:
		n = b.n
	case x == 6:
		n = 1 + w.r.IntN(64)
	default:
		n = 1 + w.r.IntN(1<<16)
	}
	lo := w.r.IntN(b.n-n+1) &^ (align - 1)
	if n &^= align - 1; n == 0 {
		n = align
	}
	return span{lo, lo + n}
}

// The ways of writing a block.
var writeHows = []string{
	"CopyFromHost[byte]", "CopyFromHost[uint32]", "CopyFromHost[uint64]", "CopyFromHostAsync[uint32]",
	"ArrayOf's CopyFromHost", "ArrayOf's CopyFromHostAsync", "CopyFromHostAsync from pinned memory",
	"the pattern kernel", "a graph of the pattern kernel", "Array.Slice's CopyFromHost",
	"Array.CopyFromAsync from a new array", "cuMemcpyDtoDAsync from a new array under a Borrow",
}

// write writes a span of a shared block in one of twelve ways, and updates
// its model: a write refused before it did anything leaves the model as it
// was, one that failed otherwise makes the span unknown.
func (w *worker) write() {
	b := w.pickBlock()
	if b == nil {
		return
	}
	defer b.mu.Unlock()
	how := w.r.IntN(len(writeHows))
	if how == 9 && b.arr == nil {
		how = 4
	}
	align := 1
	switch how {
	case 1, 3, 4, 5, 7, 8, 9, 10, 11:
		align = 4
	case 2:
		align = 8
	}
	s := w.span(b, align)
	name := writeHows[how]
	id := w.writes.begin(b.id, b.gen, s, name, fmt.Sprintf("goroutine %d op %d", w.g, w.n))
	data := patternBytes(id, s.lo, s.hi-s.lo)
	dst := b.at(s.lo)
	rs := w.stream()
	var err error
	a := aCapAny // plain copies are refused during captures, as the legacy default stream's work
	waited := true
	switch how {
	case 0:
		err = highlevel.CopyFromHost(dst, data)
	case 1:
		err = highlevel.CopyFromHost(dst, words(data))
	case 2:
		err = highlevel.CopyFromHost(dst, dwords(data))
	case 3:
		a = rs.allow()
		waited, err = w.queueAndWait(rs, func(s *highlevel.Stream) error {
			return highlevel.CopyFromHostAsync(s, dst, words(data))
		})
	case 4, 5, 9:
		var v *highlevel.Array[uint32]
		if how == 9 {
			v, err = b.arr.Slice(s.lo/4, s.hi/4)
		} else {
			v, err = highlevel.ArrayOf[uint32](dst, (s.hi-s.lo)/4)
		}
		if !w.ok(err, 0, "a view of bytes %d..%d of %s", s.lo, s.hi-1, b.describe()) {
			return
		}
		if how == 5 {
			a = rs.allow()
			waited, err = w.queueAndWait(rs, func(s *highlevel.Stream) error { return v.CopyFromHostAsync(s, words(data)) })
		} else {
			err = v.CopyFromHost(words(data))
		}
		w.freeView(v)
	case 6:
		m, ok := w.pinnedCopy(data)
		if !ok {
			return
		}
		a = rs.allow()
		waited, err = w.queueAndWait(rs, func(s *highlevel.Stream) error {
			return highlevel.CopyFromHostAsync(s, dst, m.Bytes()[:len(data)])
		})
		w.freePinned(m, waited)
	case 7:
		a = rs.allow()
		n := (s.hi - s.lo) / 4
		waited, err = w.queueAndWait(rs, func(s2 *highlevel.Stream) error {
			return w.k.pattern.Launch(s2, grid(n), dst, id, uint32(s.lo/4), int32(n))
		})
	case 8:
		var ok bool
		ok, waited, err = w.graphWrite(dst, id, s)
		if !ok {
			return // refused before anything was queued: reported
		}
		a = aClosed | aCapAny | aCapGlobal
	case 10, 11:
		// From an array of the data on the block's device: copied by
		// highlevel, or by the driver's own call on the stream's handle,
		// as a program binding another library does, under a Borrow of
		// the stream and both memories.
		src, aerr := highlevel.ArrayFrom(dst.Device(), words(data))
		if !w.ok(aerr, aCapAny|aCapGlobal, "an array of %d words for %s", len(data)/4, name) { // a plain copy
			return
		}
		a = rs.allow()
		if how == 10 {
			v, verr := highlevel.ArrayOf[uint32](dst, len(data)/4)
			if !w.ok(verr, 0, "a view of bytes %d..%d of %s", s.lo, s.hi-1, b.describe()) {
				w.free(src.Free, 0, "Array.Free of a copy's source")
				return
			}
			waited, err = w.queueAndWait(rs, func(s *highlevel.Stream) error { return v.CopyFromAsync(s, src) })
			w.freeView(v)
		} else {
			waited, err = w.queueAndWait(rs, func(s *highlevel.Stream) error { return borrowedCopy(s, dst, src) })
		}
		w.free(src.Free, 0, "Array.Free of a copy's source")
	}
	w.model(b, s, data, name, err, a, waited)
}

// borrowedCopy copies src to dst on s with the driver's cuMemcpyDtoDAsync,
// called on the handles a Borrow lends.
func borrowedCopy(s *highlevel.Stream, dst highlevel.MemoryPointer, src *highlevel.Array[uint32]) error {
	d := dst.Device()
	b, err := s.Borrow(d, dst, src.MemoryPointer())
	if err != nil {
		return err
	}
	defer b.Return()
	return d.Do(func() error {
		return cudadrv.MemcpyDtoDAsync(cudadrv.Deviceptr(uintptr(dst.Ptr())), cudadrv.Deviceptr(uintptr(src.Ptr())),
			uint64(4*src.Len()), cudadrv.Stream(s.Handle()))
	})
}

// model updates b's model after a write of data to s that returned err,
// and was waited for or not.
func (w *worker) model(b *block, s span, data []byte, how string, err error, a allow, waited bool) {
	ok := w.okCopy(err, a, "%s to bytes %d..%d of %s", how, s.lo, s.hi-1, b.describe())
	switch {
	case ok && waited:
		b.wrote(s, data)
		b.log("goroutine %d op %d: %s to bytes %d..%d", w.g, w.n, how, s.lo, s.hi-1)
		if s.hi-s.lo >= staged {
			w.note("writes of 2 MiB or more")
		}
	case err != nil && outcome(err) == wroteNothing:
		b.refused++
		b.log("goroutine %d op %d: %s to bytes %d..%d refused: %v", w.g, w.n, how, s.lo, s.hi-1, err)
		w.note("writes refused")
	default:
		b.lost(s)
		b.log("goroutine %d op %d: %s to bytes %d..%d failed (waited %v): %v", w.g, w.n, how, s.lo, s.hi-1, waited, err)
		w.note("writes failed: bytes unknown")
	}
}

// graphWrite captures the pattern kernel for write id at dst, span s of a
// block, on the goroutine's own stream, in a mode drawn at random, maybe
// with a host function after it; then it instantiates the graph, launches
// it on a stream and waits. It reports whether the launch was tried, then
// whether its wait worked, and the launch's error.
func (w *worker) graphWrite(dst highlevel.MemoryPointer, id uint32, s span) (tried, waited bool, err error) {
	n := (s.hi - s.lo) / 4
	mode := w.mode()
	host := w.r.IntN(2) == 0
	g, err := w.captureOn(w.own, mode, w.r.IntN(3) == 0, func(c *highlevel.Stream) error {
		if err := w.k.pattern.Launch(c, grid(n), dst, id, uint32(s.lo/4), int32(n)); err != nil {
			return err
		}
		if host {
			return c.LaunchHostFunc(func() { w.hostRan.Add(1) })
		}
		return nil
	})
	if !w.ok(err, aClosed|aCapStatus|aCapGlobal, "capture in %v mode of a block's write", mode) {
		return false, false, nil
	}
	defer func() { w.ok(g.Close(), 0, "Graph.Close") }()
	x, ok := w.instantiate(g)
	if !ok {
		return false, false, nil
	}
	defer func() { w.ok(x.Close(), 0, "GraphExec.Close") }()
	rs := w.anyStream()
	waited, err = w.queueAndWait(rs, x.Launch)
	w.launched(err, host)
	return true, waited, err
}

// The ways of reading a block.
var readHows = []string{
	"CopyToHost[byte]", "CopyToHost[uint32]", "CopyToHost[uint64]", "CopyToHostAsync[byte]",
	"ArrayOf's CopyToHost", "ArrayOf's ToHost", "ArrayOf's CopyToHostAsync",
	"CopyToHostAsync to pinned memory", "Array.Slice's ToHost",
}

// read reads a span of a shared block in one of nine ways, and compares it
// with the model. The plain copies to the host are
// MemoryPointer.CopyToHostPointer's typed forms: the same path to the
// driver.
func (w *worker) read() {
	b := w.pickBlock()
	if b == nil {
		return
	}
	defer b.mu.Unlock()
	w.readSpan(b, w.r.IntN(len(readHows)))
}

func (w *worker) readSpan(b *block, how int) {
	if how == 8 && b.arr == nil {
		how = 5
	}
	align := 1
	switch how {
	case 1, 4, 5, 6, 8:
		align = 4
	case 2:
		align = 8
	}
	s := w.span(b, align)
	n := s.hi - s.lo
	src := b.at(s.lo)
	rs := w.stream()
	var got []byte
	var err error
	a := aCapAny
	switch how {
	case 0:
		got = make([]byte, n)
		err = highlevel.CopyToHost(got, src)
	case 1:
		g := make([]uint32, n/4)
		err = highlevel.CopyToHost(g, src)
		got = wordBytes(g)
	case 2:
		g := make([]uint64, n/8)
		err = highlevel.CopyToHost(g, src)
		got = dwordBytes(g)
	case 3:
		// To pageable memory, CUDA has written got when the call returns.
		a = rs.allow()
		got = make([]byte, n)
		err = rs.queue(func(s *highlevel.Stream) error { return highlevel.CopyToHostAsync(s, got, src) })
	case 4, 5, 6, 8:
		var v *highlevel.Array[uint32]
		if how == 8 {
			v, err = b.arr.Slice(s.lo/4, s.hi/4)
		} else {
			v, err = highlevel.ArrayOf[uint32](src, n/4)
		}
		if !w.ok(err, 0, "a view of bytes %d..%d of %s", s.lo, s.hi-1, b.describe()) {
			return
		}
		var g []uint32
		switch how {
		case 4:
			g = make([]uint32, n/4)
			err = v.CopyToHost(g)
		case 6:
			a = rs.allow()
			g = make([]uint32, n/4)
			err = rs.queue(func(s *highlevel.Stream) error { return v.CopyToHostAsync(s, g) })
		default:
			g, err = v.ToHost()
		}
		got = wordBytes(g)
		w.freeView(v)
	case 7:
		m, ok := w.pinnedBuffer(n)
		if !ok {
			return
		}
		a = rs.allow()
		var waited bool
		waited, err = w.queueAndWait(rs, func(s *highlevel.Stream) error {
			return highlevel.CopyToHostAsync(s, m.Bytes()[:n], src)
		})
		if waited {
			got = append([]byte(nil), m.Bytes()[:n]...)
		}
		w.freePinned(m, waited)
		if !waited && err == nil {
			return // not known to be done: reported
		}
	}
	if !w.okCopy(err, a, "%s of bytes %d..%d of %s", readHows[how], s.lo, s.hi-1, b.describe()) {
		return
	}
	b.compare(&w.op, s.lo, got, readHows[how])
	if n >= staged {
		w.note("reads of 2 MiB or more")
	}
}

// freeView calls Free on a view now and then, which must refuse.
func (w *worker) freeView(v *highlevel.Array[uint32]) {
	if w.r.IntN(8) != 0 {
		return
	}
	if err := v.Free(); err == nil {
		w.fail("Free of a view succeeded: a view does not own its memory")
	} else {
		w.ok(err, aView, "Free of a view")
	}
}

// pinnedBuffer allocates n bytes of pinned memory, from the program's
// PinnedMemoryPool or not.
func (w *worker) pinnedBuffer(n int) (*highlevel.PinnedMemory, bool) {
	var m *highlevel.PinnedMemory
	var err error
	from := "PinnedMemoryPool.Alloc"
	err = retry(&w.op, func() (err error) {
		if w.r.IntN(3) == 0 {
			from = "AllocPinned"
			m, err = highlevel.AllocPinned(n)
		} else {
			m, err = w.pinned.Alloc(n)
		}
		return err
	})
	return m, w.ok(err, aCapGlobal, "%s of %d bytes", from, n)
}

// pinnedCopy returns pinned memory holding data.
func (w *worker) pinnedCopy(data []byte) (*highlevel.PinnedMemory, bool) {
	m, ok := w.pinnedBuffer(len(data))
	if ok {
		copy(m.Bytes(), data)
	}
	return m, ok
}

// freePinned frees m once the copies with it are done; if they may not be,
// it leaks m rather than free it under a copy.
func (w *worker) freePinned(m *highlevel.PinnedMemory, done bool) {
	if !done {
		w.note("pinned memory leaked: its copy not known to be done")
		return
	}
	w.free(m.Free, 0, "PinnedMemory.Free")
}

// replace frees (or drops, for the collector) a shared block, maybe after
// a read of it, and puts a new one of another size in its place.
func (w *worker) replace() {
	b := w.blocks[w.r.IntN(len(w.blocks))]
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.n > 0 {
		if w.r.IntN(2) == 0 {
			w.readSpan(b, w.r.IntN(len(readHows)))
		}
		w.freeBlock(b, true)
	}
	b.gen++
	if !w.allocBlock(b) {
		w.fail("no new block %d could be allocated", b.id)
	}
}

// The ways of allocating a block.
var allocHows = []string{
	"MemoryPool.Alloc", "MemoryPool.AllocAsync", "AllocArray(MemoryPool)", "Device.Alloc",
	"AllocArray(Device)", "ArrayFrom(MemoryPool)", "ArrayFrom(Device)", "MemoryAsyncPool.Alloc",
}

// allocBlock allocates a block of 2 to 4 MiB for b in one of eight ways,
// and fills it at once: ArrayFrom does, the others with a plain
// CopyFromHost of it all, staged, or CopyFromHostAsync on the goroutine's
// own stream. Allocations refused during a capture are tried again.
func (w *worker) allocBlock(b *block) bool {
	n := staged + 64<<10 + 8*w.r.IntN((2<<20-64<<10)/8+1)
	how := w.r.IntN(len(allocHows))
	b.reset(allocHows[how], n)
	id := w.writes.begin(b.id, b.gen, span{0, n}, "the fill at allocation", fmt.Sprintf("goroutine %d op %d", w.g, w.n))
	data := patternBytes(id, 0, n)
	filled := false
	a := aCapGlobal
	alloc := func() (err error) {
		switch how {
		case 0:
			b.pool = true
			b.p, err = w.pool.Alloc(n)
		case 1:
			rs := w.stream()
			if rs.legacy {
				rs = w.capturable()
			}
			a |= aClosed
			b.pool = true
			if b.p, err = w.pool.AllocAsync(rs.s, n); err == nil {
				// The block's last owner may have freed it with work
				// still queued on the stream (pool): other streams use it
				// once that is done.
				w.queueAndWait(rs, func(*highlevel.Stream) error { return nil })
			}
		case 2:
			b.pool = true
			b.arr, err = highlevel.AllocArray[uint32](w.pool, n/4)
		case 3:
			b.p, err = w.d.Alloc(n)
		case 4:
			b.arr, err = highlevel.AllocArray[uint32](w.d, n/4)
		case 5, 6:
			var on highlevel.Allocator = w.d
			if how == 5 {
				on, b.pool = w.pool, true
			}
			a = aCapAny // its copy is a plain one
			b.arr, err = highlevel.ArrayFrom(on, words(data))
			filled = err == nil
		case 7:
			// Ordered on the legacy default stream, as the plain copies
			// are; the pool may have been closed since it was taken.
			a = aCapAny | aClosed
			b.async = true
			b.p, err = w.sharedAsync().Alloc(n)
		}
		return err
	}
	var err error
	for try := 0; ; try++ {
		err = retry(&w.op, alloc)
		if !errors.Is(err, highlevel.ErrClosed) || try == 10 {
			break
		}
		w.note("allocations from a closed pool or for a closed stream: tried again")
	}
	if !w.ok(err, a, "%s of %d bytes for block %d", allocHows[how], n, b.id) {
		b.n = 0 // no block: the next replace tries again
		return false
	}
	if b.arr != nil {
		b.p = b.arr.MemoryPointer()
	}
	b.log("goroutine %d op %d: allocated by %s", w.g, w.n, b.how)
	if !filled {
		var waited bool
		if w.own != nil && w.r.IntN(3) == 0 {
			waited, err = w.queueAndWait(w.own, func(s *highlevel.Stream) error { return highlevel.CopyFromHostAsync(s, b.p, data) })
		} else {
			waited, err = true, retry(&w.op, func() error { return highlevel.CopyFromHost(b.p, data) })
		}
		if !w.okCopy(err, aCapAny, "the fill of a new %s", b.describe()) || !waited {
			b.lost(span{0, n})
			b.log("its fill failed: %v", err)
			return true
		}
	}
	b.wrote(span{0, n}, data)
	return true
}

// freeBlock frees b's memory or, one time in six where mayDrop, drops it
// for the collector and the cleanups. Its work is done.
func (w *worker) freeBlock(b *block, mayDrop bool) {
	if mayDrop && w.r.IntN(6) == 0 {
		if b.pool {
			w.dropped.Add(1)
		}
		w.note("blocks dropped")
		return
	}
	a := allow(0)
	if b.async {
		a = aCapAny // freed on the legacy default stream
	}
	ok := w.free(func() error {
		if b.arr != nil {
			return b.arr.Free()
		}
		return b.p.Free()
	}, a, "Free of %s", b.describe())
	if !ok && b.pool {
		w.dropped.Add(1) // left to the cleanups
	}
}
