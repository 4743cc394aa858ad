package highlevel

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"
	"unsafe"
)

// The memory kinds of TestGPURandomOps: typed, pinned, view, ipc, managed,
// asyncpool and freerace. Package linalg's calls are left out: a test of
// package highlevel cannot import highlevel/linalg, which imports it.

// randomTriple is an element type of 12 bytes for the typed copies.
type randomTriple struct{ A, B, C uint32 }

// typed writes a span of one of the goroutine's allocations with typed
// copies (CopyFromHost, CopyFromHostAsync, or an ArrayOf view's
// CopyFromHost and CopyFromHostAsync) of 2-, 4-, 8- or 12-byte elements,
// at any word offset, then reads a span back the same ways. One time in
// two, where the allocation has 2 MiB or more, the spans do too, and the
// copies from and to pageable memory are staged.
func (w *randomWorker) typed() {
	a := w.pick()
	if a == nil {
		return
	}
	w.reached()
	elem := w.r.IntN(4)
	i, j := w.typedSpan(a, elem)
	if i < j {
		v := w.r.Uint32()
		how := w.r.IntN(4)
		rs := w.stream()
		var err error
		var name string
		u := w.on(0) // CopyFromHost: the legacy default stream
		if how%2 == 1 {
			u = w.on(0, rs.obj)
		}
		switch elem {
		case 0:
			name, err = randomTypedWrite(w, a, i, j-i, v, how, rs)
		case 1:
			h := uint16(v)
			v = uint32(h) | uint32(h)<<16
			name, err = randomTypedWrite(w, a, i, 2*(j-i), h, how, rs)
		case 2:
			name, err = randomTypedWrite(w, a, i, (j-i)/2, uint64(v)|uint64(v)<<32, how, rs)
		case 3:
			name, err = randomTypedWrite(w, a, i, (j-i)/3, randomTriple{v, v, v}, how, rs)
		}
		ok := w.ok(u, err, "%s of %s to words %d..%d of %s", name, randomElemName(elem), i, j-1, a.describe())
		if ok {
			w.note("typed writes")
			if j-i >= randomStaged {
				w.note("typed copies staged")
			}
		}
		// A typed copy that failed may have copied some of its elements
		// (a staged one, chunk by chunk), each word whole.
		a.modelWrite(i, j, v, name+" of "+randomElemName(elem), ok, true, w.settle(rs))
	}
	elem = w.r.IntN(4)
	i, j = w.typedSpan(a, elem)
	if i == j {
		return
	}
	how := w.r.IntN(4)
	rs := w.stream()
	var got []uint32
	var err error
	var name string
	u := w.on(0) // but CopyToHostAsync, on rs
	if how == 1 {
		u = w.on(0, rs.obj)
	}
	switch elem {
	case 0:
		got, name, err = randomTypedRead[uint32](w, a, i, j-i, how, rs)
	case 1:
		got, name, err = randomTypedRead[uint16](w, a, i, 2*(j-i), how, rs)
	case 2:
		got, name, err = randomTypedRead[uint64](w, a, i, (j-i)/2, how, rs)
	case 3:
		got, name, err = randomTypedRead[randomTriple](w, a, i, (j-i)/3, how, rs)
	}
	if w.ok(u, err, "%s of %s from words %d..%d of %s", name, randomElemName(elem), i, j-1, a.describe()) {
		a.compare(&w.randomOp, i, got, name+" of "+randomElemName(elem))
		w.note("typed reads")
		if j-i >= randomStaged {
			w.note("typed copies staged")
		}
	}
}

func randomElemName(elem int) string {
	return []string{"uint32", "uint16", "uint64", "randomTriple"}[elem]
}

// typedSpan returns a span of a's words that whole elements of kind elem
// fill, aligned for them; i == j where there is none.
func (w *randomWorker) typedSpan(a *randomMem, elem int) (i, j int) {
	if a.n >= randomStaged && w.r.IntN(2) == 0 {
		i = w.r.IntN(a.n - randomStaged + 1)
		j = i + randomStaged + w.r.IntN(a.n-i-randomStaged+1)
	} else {
		i, j = w.span(a)
	}
	switch elem {
	case 2:
		if uintptr(a.at(i).Ptr())%8 != 0 {
			i++
		}
		j = i + max(j-i, 0)/2*2
	case 3:
		j = i + (j-i)/3*3
	}
	return i, max(i, j)
}

// randomTypedWrite writes n elements x from word i of a, in one of four
// ways.
func randomTypedWrite[T any](w *randomWorker, a *randomMem, i, n int, x T, how int, rs *randomStream) (string, error) {
	src := make([]T, n)
	for k := range src {
		src[k] = x
	}
	dst := a.at(i)
	switch how {
	case 0:
		return "CopyFromHost", CopyFromHost(dst, src)
	case 1:
		return "CopyFromHostAsync", rs.queue(func(s *Stream) error { return CopyFromHostAsync(s, dst, src) })
	}
	arr, err := ArrayOf[T](dst, n)
	if err != nil {
		return "ArrayOf", err
	}
	if how == 2 {
		return "ArrayOf's CopyFromHost", arr.CopyFromHost(src)
	}
	return "ArrayOf's CopyFromHostAsync", rs.queue(func(s *Stream) error { return arr.CopyFromHostAsync(s, src) })
}

// randomTypedRead reads n elements from word i of a, in one of four ways,
// and returns them as words.
func randomTypedRead[T any](w *randomWorker, a *randomMem, i, n, how int, rs *randomStream) ([]uint32, string, error) {
	dst := make([]T, n)
	src := a.at(i)
	var name string
	var err error
	switch how {
	case 0:
		name, err = "CopyToHost", CopyToHost(dst, src)
	case 1:
		// To pageable memory, CUDA has written dst when the call returns.
		name, err = "CopyToHostAsync", rs.queue(func(s *Stream) error { return CopyToHostAsync(s, dst, src) })
	default:
		var arr *Array[T]
		if arr, err = ArrayOf[T](src, n); err != nil {
			return nil, "ArrayOf", err
		}
		if how == 2 {
			name, err = "ArrayOf's CopyToHost", arr.CopyToHost(dst)
		} else {
			name = "ArrayOf's ToHost"
			dst, err = arr.ToHost()
		}
	}
	if err != nil || n == 0 {
		return nil, name, err
	}
	size := int(unsafe.Sizeof(dst[0]))
	return unsafe.Slice((*uint32)(unsafe.Pointer(&dst[0])), n*size/4), name, nil
}

// pinned copies a span of one of the goroutine's allocations in and out
// through pinned memory (AllocPinned, AllocPinnedUnpooled or a
// PinnedMemoryPool) seen as a []uint32 by PinnedSlice, with asynchronous
// copies on shared streams; the pinned memory is freed once the copies
// are done.
func (w *randomWorker) pinned() {
	a := w.pick()
	if a == nil {
		return
	}
	w.reached()
	i, j := w.span(a)
	n := j - i
	var m *PinnedMemory
	var err error
	var from string
	u := w.on(0)
	switch w.r.IntN(3) {
	case 0:
		from = "AllocPinned"
		m, err = AllocPinned(4 * n)
	case 1:
		from = "AllocPinnedUnpooled"
		m, err = AllocPinnedUnpooled(4 * n)
	case 2:
		from = "PinnedMemoryPool.Alloc"
		m, err = w.pinnedPool.Alloc(4 * n)
	}
	if !w.ok(u, err, "%s of %d bytes", from, 4*n) {
		return
	}
	h, err := PinnedSlice[uint32](m)
	if !w.ok(w.on(0), err, "PinnedSlice of %s", from) {
		w.ok(w.on(0), m.Free(), "PinnedMemory.Free")
		return
	}
	v := w.r.Uint32()
	for k := range h {
		h[k] = v
	}
	rs := w.stream()
	raw := w.r.IntN(2) == 0
	u = w.on(0, rs.obj)
	err = rs.queue(func(s *Stream) error {
		if raw {
			return a.at(i).CopyFromHostPointerAsync(s, m.Ptr(), 4*n)
		}
		return CopyFromHostAsync(s, a.at(i), h)
	})
	in := w.ok(u, err, "copy from pinned memory to words %d..%d of %s on %s", i, j-1, a.describe(), rs.what)
	// The pinned memory must stay untouched until the copy is done.
	settled := w.settle(rs)
	a.modelWrite(i, j, v, "a copy from pinned memory", in, true, settled)
	if !settled {
		return // leak it rather than free it under a copy
	}
	clear(h)
	rs = w.stream()
	u = w.on(0, rs.obj)
	err = rs.queue(func(s *Stream) error {
		if raw {
			return a.at(i).CopyToHostPointerAsync(s, m.Ptr(), 4*n)
		}
		return CopyToHostAsync(s, h, a.at(i))
	})
	out := w.ok(u, err, "copy to pinned memory from words %d..%d of %s on %s", i, j-1, a.describe(), rs.what)
	if !w.settle(rs) {
		return
	}
	if out {
		a.compare(&w.randomOp, i, h, "a copy to pinned memory")
	}
	w.ok(w.on(0), m.Free(), "PinnedMemory.Free of %s", from)
	if in && out {
		w.note("pinned copies")
	}
}

// view makes a view of a span of one of the goroutine's allocations
// (ArrayOf, or Array.Slice of an Array). One time in two it checks the
// owner whole and drops it, without Free, and keeps the view in its
// place: the view keeps the memory alive, the other kinds write and read
// through it, and its Free refuses. Else it writes and reads through the
// view, checks the view whole and drops it, and checks the owner.
func (w *randomWorker) view() {
	a := w.pick()
	if a == nil {
		return
	}
	w.reached()
	i, j := w.span(a)
	var v *Array[uint32]
	var err error
	how := "ArrayOf"
	u := w.on(0)
	if a.arr != nil && w.r.IntN(2) == 0 {
		how = "Array.Slice"
		v, err = a.arr.Slice(i, j)
	} else {
		v, err = ArrayOf[uint32](a.at(i), j-i)
	}
	if !w.ok(u, err, "%s of words %d..%d of %s", how, i, j-1, a.describe()) {
		return
	}
	w.note("views")
	nv := newRandomMem(fmt.Sprintf("%s view of a %s", how, a.kind), j-i)
	nv.p, nv.arr, nv.view = v.MemoryPointer(), v, true
	nv.pooled, nv.managed, nv.ipc = a.pooled, a.managed, a.ipc
	if w.r.IntN(2) == 0 {
		w.checkWhole(a, "drop") // which settles what a failed write left
		nv.copyFrom(0, a, i, j-i)
		k := slices.Index(w.mem, a)
		w.mem[k] = nv
		w.drop(a)
		if w.r.IntN(2) == 0 {
			runtime.GC()
		}
		w.note("view owners dropped")
		return
	}
	nv.copyFrom(0, a, i, j-i)
	x, y := w.span(nv)
	w.writeTo(nv, x, y)
	a.copyFrom(i, nv, 0, nv.n)
	w.verifyMem(nv)
	w.checkWhole(nv, "view drop")
	w.ok(w.on(allowView).mustFail("Array.Free of a view"), v.Free(), "Free of %s", nv.describe())
	w.verifyMem(a)
}

// ipc exports one of the goroutine's allocations, from a word of it, or a
// new event, through an IPC handle, round-trips the handle through its
// binary form, and opens it in this same process, which CUDA refuses; if
// it opens, it reads through the mapping (or waits on the event) and frees
// it. Stream-ordered and managed memory, and events without Interprocess,
// are not shareable: IPCHandle must refuse them.
func (w *randomWorker) ipc() {
	if w.r.IntN(3) == 0 {
		w.reached()
		w.ipcEvent()
		return
	}
	a := w.pick()
	if a == nil {
		return
	}
	w.reached()
	i := w.r.IntN(a.n)
	p := a.at(i)
	u := w.on(0)
	if !a.ipc {
		u = w.on(allowNotShareable).mustFail("IPCHandle of " + a.kind)
	}
	h, err := p.IPCHandle()
	if !w.ok(u, err, "IPCHandle of word %d of %s", i, a.describe()) {
		return
	}
	w.note("ipc handles")
	if h.Size() != p.Size() {
		w.fail("IPCHandle of word %d of %s: %d bytes, want %d", i, a.describe(), h.Size(), p.Size())
	}
	b, err := h.MarshalBinary()
	if !w.ok(w.on(0), err, "IPCMemHandle.MarshalBinary") {
		return
	}
	var h2 IPCMemHandle
	if !w.ok(w.on(0), h2.UnmarshalBinary(b), "IPCMemHandle.UnmarshalBinary") {
		return
	}
	if h2 != h {
		w.fail("IPCMemHandle after MarshalBinary and UnmarshalBinary differs")
		return
	}
	m, err := OpenIPCMemory(w.d, h2)
	if !w.ok(w.on(allowIPCSelf), err, "OpenIPCMemory of word %d of %s in the process that exported it", i, a.describe()) {
		w.note("ipc memory opened by its exporter: refused")
		return
	}
	w.note("ipc memory opened by its exporter: accepted")
	n := min(a.n-i, m.Size()/4)
	got := make([]uint32, n)
	if w.ok(w.on(0), CopyToHost(got, m), "CopyToHost through an IPC mapping") {
		a.compare(&w.randomOp, i, got, "a read through an IPC mapping")
	}
	w.ok(w.on(0), m.Memory().free(), "Free of an IPC mapping")
}

func (w *randomWorker) ipcEvent() {
	interprocess := w.r.IntN(3) != 0
	e, err := NewEvent(w.d, &EventOptions{Interprocess: interprocess, DisableTiming: true})
	if !w.ok(w.on(0), err, "NewEvent") {
		return
	}
	defer func() { w.ok(w.on(0), e.Close(), "Event.Close of an exported event") }()
	u := w.on(0)
	if !interprocess {
		u = w.on(allowNotShareable).mustFail("Event.IPCHandle of an event without Interprocess")
	}
	h, err := e.IPCHandle()
	if !w.ok(u, err, "Event.IPCHandle (interprocess %v)", interprocess) {
		return
	}
	w.note("ipc handles")
	b, err := h.MarshalBinary()
	if !w.ok(w.on(0), err, "IPCEventHandle.MarshalBinary") {
		return
	}
	var h2 IPCEventHandle
	if !w.ok(w.on(0), h2.UnmarshalBinary(b), "IPCEventHandle.UnmarshalBinary") {
		return
	}
	if h2 != h {
		w.fail("IPCEventHandle after MarshalBinary and UnmarshalBinary differs")
		return
	}
	o, err := OpenIPCEvent(w.d, h2)
	if !w.ok(w.on(allowIPCSelf), err, "OpenIPCEvent in the process that exported it") {
		w.note("ipc event opened by its exporter: refused")
		return
	}
	w.note("ipc event opened by its exporter: accepted")
	rs := w.stream()
	if w.ok(w.on(0, rs.obj), rs.queue(func(s *Stream) error { return o.Record(s) }), "Record of an opened IPC event on %s", rs.what) {
		select {
		case <-o.Done():
		case <-time.After(randomWait):
			w.fail("Done of an opened IPC event not closed after %v", randomWait)
		}
	}
	w.ok(w.on(0), o.Close(), "Event.Close of an opened IPC event")
}

// managed gives advice about a span of one of the goroutine's managed
// allocations (making one where it has none), or prefetches it to the
// device or the host on a shared stream and checks it; the data stays
// what it was.
func (w *randomWorker) managed() {
	if !w.managedOK {
		w.note("managed skipped: no concurrent managed access")
		return
	}
	var ms []*randomMem
	for _, a := range w.mem {
		if a.managed {
			ms = append(ms, a)
		}
	}
	if len(ms) == 0 {
		if len(w.mem) == randomOwned {
			return
		}
		a := newRandomMem("Managed(d).Alloc", w.size())
		a.managed = true
		var err error
		if a.p, err = Managed(w.d).Alloc(4 * a.n); !w.ok(w.on(0), err, "Managed(d).Alloc of %d bytes", 4*a.n) {
			return
		}
		w.mem = append(w.mem, a)
		w.writeTo(a, 0, a.n)
		ms = append(ms, a)
	}
	w.reached()
	a := ms[w.r.IntN(len(ms))]
	i, j := w.span(a)
	dev := w.d
	if w.r.IntN(2) == 0 {
		dev = CPUDevice
	}
	if w.r.IntN(2) == 0 {
		advice := []Advice{AdviseReadMostly, AdviseUnsetReadMostly, AdvisePreferredLocation,
			AdviseUnsetPreferredLocation, AdviseAccessedBy, AdviseUnsetAccessedBy}[w.r.IntN(6)]
		if w.ok(w.on(0), a.at(i).Advise(4*(j-i), advice, dev), "Advise(%v, %v) of words %d..%d of %s", advice, dev, i, j-1, a.describe()) {
			w.note("managed ok")
		}
		w.note("managed advice")
	} else {
		rs := w.stream()
		if w.ok(w.on(0, rs.obj), rs.queue(func(s *Stream) error { return a.at(i).Prefetch(s, 4*(j-i), dev) }),
			"Prefetch to %v of words %d..%d of %s on %s", dev, i, j-1, a.describe(), rs.what) {
			w.note("managed ok")
		}
		w.settle(rs)
		w.note("managed prefetches")
	}
	w.verifyMem(a)
}

// asyncPool replaces, one time in three, the shared MemoryAsyncPool and
// closes the old one, whose memory the goroutines still use; then it
// allocates stream-ordered memory on the goroutine's two streams (from the
// shared pool or the device's default one), fills each there, checks both
// with kernels on a shared stream once the fills are done, and frees each
// on its stream behind an event of that check, with no wait on the host
// in between.
//
// The frees without a host wait are on the goroutine's own streams only:
// a stream-ordered free on a shared stream that another goroutine closes
// meanwhile goes to the legacy default stream, which a non-blocking
// stream's work does not precede, so whether the memory is still in use
// there is left to the program; the test waits on the host before such
// frees (the free kind).
func (w *randomWorker) asyncPool() {
	w.reached()
	if w.r.IntN(3) == 0 {
		p, err := NewMemoryAsyncPool(w.d)
		if w.ok(w.on(0), err, "NewMemoryAsyncPool") {
			w.mu.Lock()
			old := w.async
			w.async = &randomAsync{p: p, obj: newRandomObj("the shared MemoryAsyncPool", ErrClosed)}
			w.mu.Unlock()
			w.ok(w.on(0), old.obj.closeWith(old.p.Close), "MemoryAsyncPool.Close of the shared pool")
			w.note("async pools replaced")
		}
	}
	n := 1 + w.r.IntN(1<<16)
	type part struct {
		p  MemoryPointer
		rs *randomStream
		v  uint32
	}
	var parts []part
	for _, rs := range []*randomStream{w.own, w.own2} {
		var p MemoryPointer
		var err error
		u := w.on(0)
		if w.r.IntN(3) == 0 {
			p, err = AllocAsync(rs.s, 4*n)
		} else {
			pool := w.sharedAsync()
			u = w.on(0, pool.obj)
			p, err = pool.p.AllocAsync(rs.s, 4*n)
		}
		if !w.ok(u, err, "AllocAsync of %d bytes on %s", 4*n, rs.what) {
			continue
		}
		v := w.r.Uint32()
		if !w.ok(w.on(0), w.fill.Launch(rs.s, randomGrid(n), p, v, int32(n)), "fill on %s", rs.what) {
			w.settle(rs)
			w.ok(w.on(0), p.Memory().free(), "Free of stream-ordered memory")
			continue
		}
		parts = append(parts, part{p, rs, v})
	}
	if len(parts) == 0 {
		return
	}
	var events []*Event
	defer func() {
		for _, e := range events {
			w.ok(w.on(0), e.Close(), "Event.Close")
		}
	}()
	chain := true
	for _, pt := range parts {
		e, err := pt.rs.s.recordNew(nil)
		if chain = w.ok(w.on(0), err, "Record on %s", pt.rs.what); !chain {
			break
		}
		events = append(events, e)
	}
	rs := w.stream()
	var done *Event
	if chain {
		u := w.on(0, rs.obj)
		err := rs.queue(func(s *Stream) error {
			for _, e := range events {
				if err := s.WaitEvent(e); err != nil {
					return err
				}
			}
			if err := w.bad.MemsetAsync(s, 0, 4); err != nil {
				return err
			}
			for _, pt := range parts {
				if err := w.check.Launch(s, randomGrid(n), pt.p, pt.v, int32(n), w.bad); err != nil {
					return err
				}
			}
			var err error
			done, err = s.recordNew(nil)
			return err
		})
		chain = w.ok(u, err, "check of stream-ordered memory on %s", rs.what)
	}
	checked := chain
	if done != nil {
		events = append(events, done)
	}
	for _, pt := range parts {
		if chain {
			// The goroutine's own streams: no other goroutine captures them.
			chain = w.ok(w.on(0), pt.rs.s.WaitEvent(done), "WaitEvent on %s", pt.rs.what)
		}
	}
	if !chain && !w.syncDevice() {
		// Part of the check may be queued, unordered before the frees:
		// it has to be done first.
		return
	}
	for _, pt := range parts {
		w.ok(w.on(0), pt.p.Memory().free(), "Free of stream-ordered memory on %s", pt.rs.what)
	}
	if chain {
		w.note("async frees queued behind another stream's kernel")
	}
	w.settle(w.own)
	w.settle(w.own2)
	if !checked || !w.settle(rs) {
		return
	}
	if bad, read := w.readBad(); read && bad != 0 {
		w.fail("check of stream-ordered memory on %s: %d words differ", rs.what, bad)
	}
}

// freeRace checks one of the goroutine's allocations whole and frees it
// while a helper goroutine copies a span of it to the host: Free waits for
// the copy in progress, so the copy either reads what the model says or,
// begun after the Free began, returns ErrFreed, which it must where the
// Free had returned before it began.
func (w *randomWorker) freeRace() {
	if len(w.mem) == 0 {
		return
	}
	k := w.r.IntN(len(w.mem))
	a := w.mem[k]
	if a.view {
		return
	}
	w.reached()
	w.mem = slices.Delete(w.mem, k, k+1)
	w.checkWhole(a, "free")
	i, j := w.span(a)
	src := a.at(i)
	got := make([]uint32, j-i)
	raw := w.r.IntN(2) == 0
	o := w.helper(0)
	var cerr error
	var u randomUse
	var wg sync.WaitGroup
	start := make(chan struct{})
	wg.Go(func() {
		<-start
		u = o.on(0, a.obj)
		if raw {
			cerr = src.CopyToHostPointer(unsafe.Pointer(&got[0]), 4*len(got))
		} else {
			cerr = CopyToHost(got, src)
		}
	})
	close(start)
	for range w.r.IntN(8) {
		runtime.Gosched()
	}
	w.release(a)
	wg.Wait()
	w.note("freerace copies")
	if o.ok(u, cerr, "CopyToHost of words %d..%d of %s while it is freed", i, j-1, a.describe()) {
		a.compare(o, i, got, "a copy during Free")
		w.note("freerace copies done before Free")
	} else if errors.Is(cerr, ErrFreed) {
		w.note("freerace copies refused after Free")
	}
}
