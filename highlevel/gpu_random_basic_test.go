package highlevel

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"time"
	"unsafe"
)

// The basic kinds of TestGPURandomOps: alloc, write, verify, free, gc,
// stream, event, recordwait, wait, deadline, query, hostfunc, devsync and
// poolorder.

// size returns the words of a new allocation: often as many as one the
// goroutine owns, for copies between them, and now and then 4 MiB, which
// host copies stage.
func (w *randomWorker) size() int {
	switch x := w.r.IntN(20); {
	case x < 8 && len(w.mem) > 0:
		return w.mem[w.r.IntN(len(w.mem))].n
	case x == 19:
		return 1 << 20
	case x >= 16:
		return 1 + w.r.IntN(1<<18)
	default:
		return 1 + w.r.IntN(4096)
	}
}

// span returns a span of a's words to work on: all of them half the time.
func (w *randomWorker) span(a *randomMem) (i, j int) {
	if w.r.IntN(2) == 0 {
		return 0, a.n
	}
	i = w.r.IntN(a.n)
	j = i + 1 + w.r.IntN(a.n-i)
	return i, j
}

// alloc allocates in one of eleven ways and writes the new memory.
func (w *randomWorker) alloc() {
	if len(w.mem) == randomOwned {
		// As free does, but not counted as an allocation that reached.
		w.discard(w.mem[w.r.IntN(len(w.mem))])
		return
	}
	w.reached()
	a := newRandomMem("", w.size())
	var err error
	// The ways, for the counts: with cuMemAlloc (device), stream-ordered on
	// a shared stream, on the legacy default stream, managed.
	class := "device"
	u := w.on(0)
	switch w.r.IntN(11) {
	case 0:
		a.kind, a.ipc = "Device.Alloc", true
		a.p, err = w.d.Alloc(4 * a.n)
	case 1:
		a.kind, a.pooled, a.ipc = "MemoryPool.AllocAsync", true, true
		class = "stream-ordered"
		rs := w.stream()
		u = w.on(0, rs.obj)
		if a.p, err = w.pool.AllocAsync(rs.s, 4*a.n); err == nil {
			// The block's last owner may have freed it with work still
			// queued on the stream (poolorder): other streams use it once
			// that is done.
			w.settle(rs)
		}
	case 2:
		a.kind, a.pooled, a.ipc = "MemoryPool.Alloc", true, true
		a.p, err = w.pool.Alloc(4 * a.n)
	case 3, 4:
		rs := w.stream()
		pool := w.sharedAsync()
		a.kind, a.on = "MemoryAsyncPool.AllocAsync", rs
		class = "stream-ordered"
		if w.r.IntN(3) == 0 {
			a.kind, pool = "AllocAsync", nil
		}
		if pool != nil {
			u = w.on(0, rs.obj, pool.obj)
		} else {
			u = w.on(0, rs.obj)
		}
		err = rs.queue(func(s *Stream) (err error) {
			if pool == nil {
				a.p, err = AllocAsync(s, 4*a.n)
			} else {
				a.p, err = pool.p.AllocAsync(s, 4*a.n)
			}
			return err
		})
		if err == nil {
			// Other streams may use the memory once s has allocated it.
			w.settle(rs)
		}
	case 5:
		pool := w.sharedAsync()
		a.kind, a.on = "MemoryAsyncPool.Alloc", w.legacy
		class = "legacy"
		u = w.on(0, pool.obj)
		if a.p, err = pool.p.Alloc(4 * a.n); err == nil {
			w.settle(w.legacy)
		}
	case 6:
		a.kind, a.ipc = "AllocArray(Device)", true
		a.arr, err = AllocArray[uint32](w.d, a.n)
	case 7:
		a.kind, a.pooled, a.ipc = "AllocArray(MemoryPool)", true, true
		a.arr, err = AllocArray[uint32](w.pool, a.n)
	case 8:
		pool := w.sharedAsync()
		a.kind, a.on = "AllocArray(MemoryAsyncPool)", w.legacy
		class = "legacy"
		u = w.on(0, pool.obj)
		if a.arr, err = AllocArray[uint32](pool.p, a.n); err == nil {
			w.settle(w.legacy)
		}
	case 9:
		// ArrayFrom writes the memory as it allocates it, with a copy on
		// the legacy default stream.
		v := w.r.Uint32()
		var on Allocator = w.d
		a.kind, a.ipc = "ArrayFrom(Device)", true
		if w.r.IntN(2) == 0 {
			on, a.kind, a.pooled = w.pool, "ArrayFrom(MemoryPool)", true
		}
		a.arr, err = ArrayFrom(on, randomWords(a.n, v))
		if !w.ok(u, err, "%s of %d words", a.kind, a.n) {
			return
		}
		w.note("alloc ok")
		w.note("alloc legacy ok")
		a.p = a.arr.MemoryPointer()
		a.set(0, a.n, v, "ArrayFrom")
		w.mem = append(w.mem, a)
		return
	case 10:
		a.kind, a.managed = "Managed(d).Alloc", true
		class = "managed"
		a.p, err = Managed(w.d).Alloc(4 * a.n)
	}
	if !w.ok(u, err, "%s of %d bytes", a.kind, 4*a.n) {
		return
	}
	w.note("alloc ok")
	w.note("alloc " + class + " ok")
	if a.arr != nil {
		a.p = a.arr.MemoryPointer()
	}
	w.mem = append(w.mem, a)
	w.writeTo(a, 0, a.n)
}

// sharedAsync returns the world's MemoryAsyncPool, which asyncpool replaces.
func (w *randomWorker) sharedAsync() *randomAsync {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.async
}

// pick returns one of the goroutine's allocations, or nil.
func (w *randomWorker) pick() *randomMem {
	if len(w.mem) == 0 {
		return nil
	}
	return w.mem[w.r.IntN(len(w.mem))]
}

func (w *randomWorker) write() {
	if a := w.pick(); a != nil {
		w.reached()
		i, j := w.span(a)
		w.writeTo(a, i, j)
	}
}

// randomWriteNames are writeTo's ways, for the counts.
var randomWriteNames = []string{"fill", "MemsetAsync", "CopyFromHostAsync", "CopyFromHost", "CopyFromDeviceAsync"}

// writeTo writes a new value to words i to j-1 of a in one of five ways,
// on a shared stream, and waits for that stream: then a is ready for any
// use. A write that fails leaves each word what it was or the new value,
// until a read says which; one that may still be in flight once the waits
// failed leaves it unknown.
func (w *randomWorker) writeTo(a *randomMem, i, j int) {
	v := w.r.Uint32()
	rs := w.stream()
	n := j - i
	var src *randomMem
	var si int
	if b := w.pick(); b != nil && b.p.Memory() != a.p.Memory() && b.n >= n {
		src, si = b, w.r.IntN(b.n-n+1)
	}
	how := w.r.IntN(5)
	if how == 4 && src == nil {
		how = 0
	}
	var err error
	wrote := randomWriteNames[how]
	u := w.on(0, rs.obj)
	switch how {
	case 0:
		err = rs.queue(func(s *Stream) error { return w.fill.Launch(s, randomGrid(n), a.arg(i, j), v, int32(n)) })
	case 1:
		b := byte(v)
		v = uint32(b) * 0x01010101
		err = rs.queue(func(s *Stream) error { return a.at(i).MemsetAsync(s, b, 4*n) })
	case 2:
		h := randomWords(n, v)
		err = rs.queue(func(s *Stream) error {
			if a.arr != nil && n == a.n {
				return a.arr.CopyFromHostAsync(s, h)
			}
			return a.at(i).CopyFromHostPointerAsync(s, unsafe.Pointer(&h[0]), 4*n)
		})
	case 3:
		h := randomWords(n, v)
		u = w.on(0) // on the legacy default stream, not rs
		if a.arr != nil && n == a.n {
			err = a.arr.CopyFromHost(h)
		} else {
			err = a.at(i).CopyFromHostPointer(unsafe.Pointer(&h[0]), 4*n)
		}
		// Done when the call returns: the wait below is for rs alone.
	case 4:
		wrote += " from " + src.describe()
		err = rs.queue(func(s *Stream) error { return a.at(i).CopyFromDeviceAsync(s, src.at(si), 4*n) })
	}
	ok := w.ok(u, err, "%s to words %d..%d of %s on %s", wrote, i, j-1, a.describe(), rs.what)
	if ok {
		w.note("write ok")
		w.note("write " + randomWriteNames[how] + " ok")
	}
	settled := w.settle(rs)
	switch {
	case !settled:
		a.forget(i, j)
	case ok && how == 4:
		a.copyFrom(i, src, si, n)
	case ok:
		a.set(i, j, v, wrote)
	case how == 4:
		a.maybeCopy(i, src, si, n, wrote)
	default:
		a.maybe(i, j, v, wrote)
	}
}

// modelWrite updates a's model for a write of v to words i to j-1 that
// worked (ok), failed and may have run (maybe), or failed having run
// nothing, and was then waited for (settled) or not.
func (a *randomMem) modelWrite(i, j int, v uint32, how string, ok, maybe, settled bool) {
	switch {
	case !ok && !maybe:
	case !settled:
		a.forget(i, j)
	case ok:
		a.set(i, j, v, how)
	default:
		a.maybe(i, j, v, how)
	}
}

func randomGrid(n int) LaunchConfig {
	return LaunchConfig{Grid: Dim3{X: (n + 255) / 256}, Block: Dim3{X: 256}}
}

func randomWords(n int, v uint32) []uint32 {
	h := make([]uint32, n)
	for i := range h {
		h[i] = v
	}
	return h
}

func (w *randomWorker) verify() {
	if a := w.pick(); a != nil {
		w.reached()
		w.verifyMem(a)
	}
}

// verifyMem checks that a span of a holds what the model says: on the
// host, or with the check kernel on a shared stream.
func (w *randomWorker) verifyMem(a *randomMem) {
	i, j := w.span(a)
	if w.r.IntN(3) == 0 {
		w.checkOnDevice(a, i, j)
		return
	}
	got := make([]uint32, j-i)
	var err error
	var how string
	u := w.on(0)
	switch x := w.r.IntN(4); {
	case x == 0 && a.arr != nil && i == 0 && j == a.n:
		how = "Array.ToHost"
		got, err = a.arr.ToHost()
	case x == 1:
		how = "CopyToHostAsync"
		rs := w.stream()
		u = w.on(0, rs.obj)
		// To pageable memory, CUDA has written got when the call returns.
		err = rs.queue(func(s *Stream) error { return a.at(i).CopyToHostPointerAsync(s, unsafe.Pointer(&got[0]), 4*(j-i)) })
	case x == 2:
		how = "CopyToHost[uint32]"
		err = CopyToHost(got, a.at(i))
	default:
		how = "MemoryPointer.CopyToHostPointer"
		err = a.at(i).CopyToHostPointer(unsafe.Pointer(&got[0]), 4*(j-i))
	}
	if w.ok(u, err, "%s of words %d..%d of %s", how, i, j-1, a.describe()) {
		a.compare(&w.randomOp, i, got, how)
		w.note("verify host ok")
	}
}

// checkOnDevice checks words i to j-1 of a with the check kernel, one
// launch per run of known words.
func (w *randomWorker) checkOnDevice(a *randomMem, i, j int) {
	var runs []randomRun
	for _, r := range a.runs(i, j) {
		if len(r.vals) == 1 {
			runs = append(runs, r)
		}
	}
	if len(runs) == 0 || len(runs) > 16 {
		return
	}
	st := w.stream()
	u := w.on(0, st.obj)
	err := st.queue(func(s *Stream) error {
		if err := w.bad.MemsetAsync(s, 0, 4); err != nil {
			return err
		}
		for _, r := range runs {
			n := r.end - r.at
			if err := w.check.Launch(s, randomGrid(n), a.arg(r.at, r.end), r.vals[0], int32(n), w.bad); err != nil {
				return err
			}
		}
		return nil
	})
	ran := w.ok(u, err, "check of words %d..%d of %s on %s", i, j-1, a.describe(), st.what)
	ran = w.settle(st) && ran
	if !ran {
		return
	}
	bad, read := w.readBad()
	if !read {
		return
	}
	if bad != 0 {
		// Find the words on the host, for the message.
		got := make([]uint32, j-i)
		if err := CopyToHostAsync(w.own.s, got, a.at(i)); err == nil {
			a.compare(&w.randomOp, i, got, "check, then a read,")
		}
		w.fail("check of words %d..%d of %s: %d words differ", i, j-1, a.describe(), bad)
		return
	}
	w.note("verify device ok")
}

// readBad reads check's count, on the goroutine's own stream, after the
// check was waited for. The read must work, as checkWhole's.
func (w *randomWorker) readBad() (int32, bool) {
	var bad int32
	if err := w.bad.CopyToHostPointerAsync(w.own.s, unsafe.Pointer(&bad), 4); err != nil {
		w.fail("a read of check's count on the goroutine's own stream: %v", err)
		return 0, false
	}
	return bad, true
}

// free frees one of the goroutine's allocations, or, one time in four,
// drops it for the GC and the cleanups. Its writes have been waited for.
func (w *randomWorker) free() {
	if len(w.mem) == 0 {
		return
	}
	w.reached()
	w.discard(w.mem[w.r.IntN(len(w.mem))])
}

// discard takes a from the goroutine's allocations, checks it whole and
// frees it, or, one time in four, drops it.
func (w *randomWorker) discard(a *randomMem) {
	w.mem = slices.DeleteFunc(w.mem, func(m *randomMem) bool { return m == a })
	if w.r.IntN(4) == 0 {
		w.checkWhole(a, "drop")
		w.drop(a)
		return
	}
	w.checkWhole(a, "free")
	w.release(a)
}

// drop forgets a without Free.
func (w *randomWorker) drop(a *randomMem) {
	if a.pooled && !a.view { // a view's owner was counted when it was dropped
		w.dropped.Add(1)
	}
}

// release frees a: on its stream, for stream-ordered memory, holding the
// stream's gate; a view refuses, and is dropped. A Free works whatever
// captures and closes meanwhile: cuMemFree during a global capture, and a
// stream-ordered free on a capturing stream, are put off, and memory of a
// closed stream or pool is freed at once.
func (w *randomWorker) release(a *randomMem) {
	if a.view {
		if !w.ok(w.on(allowView).mustFail("Array.Free of a view"), a.arr.Free(), "Free of %s", a.describe()) {
			w.note("view Free refused")
		}
		return
	}
	free := func() error { return a.p.Memory().free() }
	switch {
	case a.on != nil:
		free = func() error { return a.on.queue(func(*Stream) error { return a.p.Memory().free() }) }
	case a.arr != nil:
		free = a.arr.Free
	}
	u := w.on(0)
	if w.ok(u, a.obj.closeWith(free), "Free of %s", a.describe()) {
		w.note("free ok")
	}
}

func (w *randomWorker) gc() { runtime.GC() }

// replaceStream closes a shared stream, which other goroutines may be
// using, capturing or waiting for, and puts a new one in its place. Close
// must work: it puts the destruction of a capturing stream off.
func (w *randomWorker) replaceStream() {
	w.reached()
	nonBlocking := w.r.IntN(2) == 0
	s, err := NewStream(w.d, &StreamOptions{NonBlocking: nonBlocking, Priority: -w.r.IntN(3)})
	if !w.ok(w.on(0), err, "NewStream") {
		return
	}
	w.mu.Lock()
	i := w.r.IntN(len(w.streams))
	old := w.streams[i]
	w.streams[i] = newRandomStream(s, randomStreamWhat(nonBlocking), false)
	w.mu.Unlock()
	if w.ok(w.on(0), old.obj.closeWith(old.s.Close), "Stream.Close of %s", old.what) {
		w.note("stream replaced")
	}
}

// replaceEvent closes a shared event, which other goroutines may be using,
// and puts a new one in its place.
func (w *randomWorker) replaceEvent() {
	w.reached()
	e, err := NewEvent(w.d, &EventOptions{DisableTiming: w.r.IntN(2) == 0, Blocking: w.r.IntN(2) == 0})
	if !w.ok(w.on(0), err, "NewEvent") {
		return
	}
	w.mu.Lock()
	i := w.r.IntN(len(w.events))
	old := w.events[i]
	w.events[i] = &randomEvent{e: e, obj: newRandomObj("a shared event", ErrClosed)}
	w.mu.Unlock()
	if w.ok(w.on(0), old.obj.closeWith(old.e.Close), "Event.Close of a shared event") {
		w.note("event replaced")
	}
}

// recordWait records a shared event on a shared stream and makes another
// wait for it; that one may be capturing, and refuse.
func (w *randomWorker) recordWait() {
	w.reached()
	e, from, to := w.event(), w.stream(), w.stream()
	if !w.ok(w.on(0, e.obj, from.obj), from.queue(func(s *Stream) error { return e.e.Record(s) }), "Event.Record on %s", from.what) {
		return
	}
	w.note("record ok")
	if w.ok(w.on(0, e.obj, to.obj).waitsOn(to), to.s.WaitEvent(e.e), "Stream.WaitEvent on %s", to.what) {
		w.note("waitevent ok")
	}
}

// wait waits for a shared event or stream, with a timeout it must not
// reach.
func (w *randomWorker) wait() {
	w.reached()
	ctx, cancel := context.WithTimeout(context.Background(), randomWait)
	defer cancel()
	switch w.r.IntN(4) {
	case 0:
		e := w.event()
		if w.ok(w.on(0, e.obj), e.e.Wait(ctx), "Event.Wait") {
			w.note("wait ok")
		}
	case 1:
		rs := w.stream()
		if w.ok(w.on(0, rs.obj), rs.s.Wait(ctx), "Stream.Wait of %s", rs.what) {
			w.note("wait ok")
		}
	case 2:
		select {
		case <-w.event().e.Done():
		case <-ctx.Done():
			w.fail("Event.Done not closed after %v", randomWait)
		}
	case 3:
		rs := w.stream()
		select {
		case <-rs.s.Done():
		case <-ctx.Done():
			w.fail("Stream.Done of %s not closed after %v", rs.what, randomWait)
		}
	}
}

// deadline waits for a shared stream or event, or one recorded after a
// fill of the scratch memory, with a deadline of 0 to 5 ms or a context
// already cancelled: the wait ends at the deadline, and leaves the work
// alone.
func (w *randomWorker) deadline() {
	w.reached()
	d := []time.Duration{0, 20 * time.Microsecond, 200 * time.Microsecond, time.Millisecond, 5 * time.Millisecond}[w.r.IntN(5)]
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if w.r.IntN(5) == 0 {
		c, cancel := context.WithCancel(context.Background())
		cancel()
		ctx, d = c, -1
	}
	rs := w.stream()
	if w.r.IntN(2) == 0 {
		// Work to wait for: 4 MiB of fill.
		w.ok(w.on(0, rs.obj), rs.queue(func(s *Stream) error {
			return w.fill.Launch(s, randomGrid(1<<18), w.scratch, w.r.Uint32(), int32(1<<18))
		}),
			"fill of the scratch memory on %s", rs.what)
	}
	var err error
	var how string
	u := w.on(allowDeadline, rs.obj)
	switch w.r.IntN(5) {
	case 0:
		how, err = "Stream.Wait", rs.s.Wait(ctx)
	case 1:
		e := w.event()
		u = w.on(allowDeadline, e.obj)
		how, err = "Event.Wait", e.e.Wait(ctx)
	case 2:
		how = "Event.Wait after Event.Record"
		u = u.recordsOn(rs)
		var e *Event
		err = rs.queue(func(s *Stream) (err error) {
			e, err = s.recordNew(nil)
			return err
		})
		if err == nil {
			err = e.Wait(ctx)
			w.ok(w.on(0), e.Close(), "Event.Close")
		}
	case 3:
		how = "Stream.Done"
		u = w.on(allowDeadline)
		select {
		case <-rs.s.Done():
		case <-ctx.Done():
			err = ctx.Err()
		}
	case 4:
		how = "Event.Done"
		u = w.on(allowDeadline)
		select {
		case <-w.event().e.Done():
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	if w.ok(u, err, "%s with a deadline of %v on %s", how, d, rs.what) {
		w.note("deadline waits done in time")
		w.note("deadline waits")
	} else if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		w.note("deadline waits cut short")
		w.note("deadline waits")
	}
}

func (w *randomWorker) query() {
	w.reached()
	var err error
	var u randomUse
	if w.r.IntN(2) == 0 {
		rs := w.stream()
		u = w.on(0, rs.obj)
		_, err = rs.s.Query()
	} else {
		e := w.event()
		u = w.on(0, e.obj)
		_, err = e.e.Query()
	}
	if w.ok(u, err, "Query") {
		w.note("query ok")
	}
}

// hostFunc queues a host function or a callback on a shared stream; one in
// four calls the package from there, which must return ErrInCallback.
func (w *randomWorker) hostFunc() {
	w.reached()
	rs := w.stream()
	e := w.event()
	probe := w.r.IntN(4)
	callCUDA := func() {
		var err error
		var obj *randomObj
		switch probe {
		case 1:
			obj = rs.obj
			_, err = rs.s.Query()
		case 2:
			obj = e.obj
			_, err = e.e.Query()
		case 3:
			obj = rs.obj
			err = w.scratch.MemsetAsync(rs.s, 0, 4)
		default:
			return
		}
		// A closed stream or event answers ErrClosed before anything: only
		// where the program closed it.
		if !errors.Is(err, ErrInCallback) && !(errors.Is(err, ErrClosed) && obj.state.Load() != randomOpen) {
			if w.callbackBad.Add(1) == 1 {
				w.callbackErr.Store(fmt.Sprintf("probe %d: %v", probe, err))
			}
		}
	}
	var err error
	u := w.on(0, rs.obj)
	if w.r.IntN(2) == 0 {
		err = rs.queue(func(s *Stream) error { return s.LaunchHostFunc(func() { callCUDA(); w.hostRan.Add(1) }) })
	} else {
		err = rs.queue(func(s *Stream) error {
			return s.AddCallback(func(err error) {
				if err != nil && w.callbackBad.Add(1) == 1 {
					w.callbackErr.Store(fmt.Sprintf("AddCallback's stream error: %v", err))
				}
				callCUDA()
				w.hostRan.Add(1)
			})
		})
	}
	if w.ok(u, err, "LaunchHostFunc or AddCallback on %s", rs.what) {
		w.hostWant.Add(1)
		w.note("hostfunc queued")
	} else if !errors.Is(err, ErrClosed) {
		w.hostMaybe.Add(1)
	}
}

// devsync waits for the device without the test's lock: a capture of
// another goroutine in progress refuses it (ErrCapturing), and is left
// alone.
func (w *randomWorker) devsync() {
	w.reached()
	w.ok(w.on(0), w.d.Synchronize(), "Device.Synchronize")
}

// poolOrder allocates a block of the world's MemoryPool for a shared
// stream, fills it there and frees it at once, with the fill still queued:
// the pool hands the block out again only for that stream, whose order
// puts the next owner's work after the fill (the alloc kind waits for the
// stream before it uses such memory elsewhere). Then it allocates for the
// stream again, fills and checks there, and waits before it frees. If
// another goroutine closes the stream meanwhile, Close waits for its work
// before its blocks serve the legacy default stream.
func (w *randomWorker) poolOrder() {
	w.reached()
	rs := w.stream()
	n := 1 + w.r.IntN(1<<16)
	v1, v2 := w.r.Uint32(), w.r.Uint32()
	u := w.on(0, rs.obj)
	err := rs.queue(func(s *Stream) error {
		p, err := w.pool.AllocAsync(s, 4*n)
		if err != nil {
			return err
		}
		err = w.fill.Launch(s, randomGrid(n), p, v1, int32(n))
		return errors.Join(err, p.Memory().free())
	})
	if !w.ok(u, err, "AllocAsync, fill and Free on %s", rs.what) {
		return
	}
	w.note("poolorder frees with a fill queued")
	var p MemoryPointer
	checked := false
	u = w.on(0, rs.obj)
	err = rs.queue(func(s *Stream) (err error) {
		if p, err = w.pool.AllocAsync(s, 4*n); err != nil {
			return err
		}
		if err := w.fill.Launch(s, randomGrid(n), p, v2, int32(n)); err != nil {
			return err
		}
		if err := w.bad.MemsetAsync(s, 0, 4); err != nil {
			return err
		}
		if err := w.check.Launch(s, randomGrid(n), p, v2, int32(n), w.bad); err != nil {
			return err
		}
		checked = true
		return nil
	})
	w.ok(u, err, "AllocAsync, fill and check on %s", rs.what)
	settled := w.settle(rs)
	if checked && settled {
		if bad, read := w.readBad(); read && bad != 0 {
			w.fail("a MemoryPool block allocated for %s right after a Free with a fill queued: %d of %d words differ from the new fill", rs.what, bad, n)
		} else if read {
			w.note("poolorder checked")
		}
	}
	switch {
	case p.Memory() == nil:
	case settled:
		w.ok(w.on(0), p.Memory().free(), "Free of a MemoryPool block")
	default:
		w.dropped.Add(1) // its work may be queued still: leave it to the cleanups
	}
}
