package mixed

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"

	"github.com/gocuda/cuda/highlevel"
	"github.com/gocuda/cuda/highlevel/linalg"
)

// The other kinds: kernel, linalg, clear, asyncpool, pool, managed,
// refuse, ipc, gc and devsync.

// kernel queues a busy kernel on any stream, or the goroutine's quiet
// one, and waits for it one time in four: the others' copies, captures and
// waits meet kernels running on other streams.
func (w *worker) kernel() {
	n := 1<<10 + w.r.IntN(1<<18)
	rounds := int32(16 + w.r.IntN(1024))
	launch := func(s *highlevel.Stream) error { return w.k.spin.Launch(s, grid(n), w.scratch, int32(n), rounds) }
	if w.r.IntN(5) == 0 {
		w.ok(launch(w.quiet), 0, "spin on the quiet stream")
		return
	}
	rs := w.anyStream()
	if w.r.IntN(4) == 0 {
		_, err := w.queueAndWait(rs, launch)
		w.ok(err, rs.allow(), "spin on %s", rs.what)
		return
	}
	w.ok(rs.queue(launch), rs.allow(), "spin on %s", rs.what)
}

// linalgArrays are a goroutine's operands of linalg's calls.
type linalgArrays struct {
	x, y, res, a, b, c *highlevel.Array[float32]
}

// The sizes of the operands: vectors of vecN elements, a mm×kk, b kk×nn
// and c mm×nn.
const (
	vecN = 4096
	mm   = 48
	nn   = 32
	kk   = 40
)

func newLinalgArrays(d highlevel.Device) (*linalgArrays, error) {
	la := &linalgArrays{}
	for _, x := range []struct {
		a **highlevel.Array[float32]
		n int
	}{{&la.x, vecN}, {&la.y, vecN}, {&la.res, 1}, {&la.a, mm * kk}, {&la.b, kk * nn}, {&la.c, mm * nn}} {
		var err error
		if *x.a, err = highlevel.AllocArray[float32](d, x.n); err != nil {
			return nil, err
		}
	}
	return la, nil
}

func (la *linalgArrays) free(w *worker) {
	for _, a := range []*highlevel.Array[float32]{la.x, la.y, la.res, la.a, la.b, la.c} {
		w.free(a.Free, 0, "Array.Free of a linalg operand")
	}
}

// smallInts returns n numbers of float32 that are small integers, from lo
// to lo+span-1, so that the sums of linalg's calls are exact.
func (w *worker) smallInts(n, lo, span int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(lo + w.r.IntN(span))
	}
	return s
}

// linalg calls Axpy, Dot, Gemv or Gemm on a shared stream (or the legacy
// default one, or the goroutine's own) with operands it copies there
// first, waits, and checks the result exactly: the operands are small
// integers. One time in four a helper goroutine calls ClearCaches during
// the call, which must finish on the handle it took or return ErrClosed,
// never crash nor fail in cuBLAS.
func (w *worker) linalg() {
	la := w.la
	rs := w.anyStream()
	which := w.r.IntN(4)
	x, y := w.smallInts(vecN, -3, 7), w.smallInts(vecN, 0, 5)
	a, b, c := w.smallInts(mm*kk, -2, 5), w.smallInts(kk*nn, -2, 5), w.smallInts(mm*nn, -3, 7)
	var want []float32
	var got *highlevel.Array[float32]
	var name string
	call := func(s *highlevel.Stream) error { return nil }
	switch which {
	case 0:
		name, got = "Axpy", la.y
		want = make([]float32, vecN)
		for i := range want {
			want[i] = 2*x[i] + y[i]
		}
		call = func(s *highlevel.Stream) error { return linalg.Axpy(s, float32(2), la.x, la.y) }
	case 1:
		name, got = "Dot", la.res
		sum := float32(0)
		for i := range x {
			sum += x[i] * y[i]
		}
		want = []float32{sum}
		call = func(s *highlevel.Stream) error { return linalg.Dot(s, la.x, la.y, la.res) }
	case 2:
		// y[:mm] = a·x[:kk]
		name, got = "Gemv", la.y
		want = slices.Clone(y)
		for i := range mm {
			sum := float32(0)
			for k := range kk {
				sum += a[i*kk+k] * x[k]
			}
			want[i] = sum
		}
		call = func(s *highlevel.Stream) error {
			return linalg.Gemv(s, linalg.NoTrans, mm, kk, float32(1), la.a, la.x, float32(0), la.y)
		}
	case 3:
		// c = a·b + c
		name, got = "Gemm", la.c
		want = make([]float32, mm*nn)
		for i := range mm {
			for j := range nn {
				sum := c[i*nn+j]
				for k := range kk {
					sum += a[i*kk+k] * b[k*nn+j]
				}
				want[i*nn+j] = sum
			}
		}
		call = func(s *highlevel.Stream) error {
			return linalg.Gemm(s, linalg.NoTrans, linalg.NoTrans, mm, nn, kk, float32(1), la.a, la.b, float32(1), la.c)
		}
	}
	var wg sync.WaitGroup
	if w.r.IntN(4) == 0 {
		wg.Go(func() {
			for range 3 {
				highlevel.ClearCaches()
				runtime.Gosched()
			}
		})
	}
	var copied, called bool
	waited, err := w.queueAndWait(rs, func(s *highlevel.Stream) error {
		for _, op := range []struct {
			a *highlevel.Array[float32]
			h []float32
		}{{la.x, x}, {la.y, y}, {la.a, a}, {la.b, b}, {la.c, c}} {
			if err := op.a.CopyFromHostAsync(s, op.h); err != nil {
				return err
			}
		}
		copied = true
		err := call(s)
		called = err == nil
		return err
	})
	wg.Wait()
	what := "the operands' copies"
	if copied {
		what = name
	}
	if !w.ok(err, rs.allow(), "%s on %s", what, rs.what) || !called || !waited {
		return
	}
	res := make([]float32, got.Len())
	// To pageable memory, CUDA has written res when the call returns.
	if !w.okCopy(got.CopyToHostAsync(w.own.s, res), 0, "CopyToHostAsync of %s's result", name) {
		return
	}
	for i := range want {
		if res[i] != want[i] {
			w.fail("%s on %s: element %d of its result is %v, want %v", name, rs.what, i, res[i], want[i])
			return
		}
	}
	w.note("linalg calls checked")
}

// clear destroys linalg's handles and clears the package's caches, under
// the other goroutines' calls.
func (w *worker) clear() { highlevel.ClearCaches() }

// asyncPool replaces, one time in three, the shared MemoryAsyncPool and
// closes the old one, whose memory the goroutines still use. Then it
// allocates stream-ordered memory on the goroutine's two streams (from the
// shared pool or the device's default one), fills each there, checks both
// with kernels on the first stream behind an event of the second, frees
// each on its stream with the check still queued, and, one time in three,
// closes the shared pool with those frees queued. Then it waits and reads
// the check's count.
func (w *worker) asyncPool() {
	if w.r.IntN(3) == 0 {
		w.replaceAsync()
	}
	if w.r.IntN(4) == 0 {
		w.ok(w.sharedAsync().FreeAllBlocks(), aClosed, "MemoryAsyncPool.FreeAllBlocks")
	}
	n := 1 + w.r.IntN(1<<18)
	type part struct {
		p  highlevel.MemoryPointer
		rs *stream
		v  uint32
	}
	var parts []part
	for _, rs := range []*stream{w.own, w.own2} {
		var p highlevel.MemoryPointer
		err := retry(&w.op, func() (err error) {
			if w.r.IntN(3) == 0 {
				p, err = highlevel.AllocAsync(rs.s, 4*n)
			} else {
				p, err = w.sharedAsync().AllocAsync(rs.s, 4*n)
			}
			return err
		})
		if !w.ok(err, aClosed|aCapGlobal, "AllocAsync of %d bytes on %s", 4*n, rs.what) {
			continue
		}
		v := w.r.Uint32()
		if !w.ok(w.k.fill.Launch(rs.s, grid(n), p, v, int32(n)), 0, "fill on %s", rs.what) {
			w.free(p.Free, 0, "Free of stream-ordered memory")
			continue
		}
		parts = append(parts, part{p, rs, v})
	}
	if len(parts) == 0 {
		return
	}
	chain := func() error {
		if len(parts) == 2 {
			e, err := recordNew(w.own2.s)
			if err != nil {
				return err
			}
			defer e.Close()
			if err := w.own.s.WaitEvent(e); err != nil {
				return err
			}
		}
		if err := w.bad.MemsetAsync(w.own.s, 0, 4); err != nil {
			return err
		}
		for _, pt := range parts {
			if err := w.k.check.Launch(w.own.s, grid(n), pt.p, pt.v, int32(n), w.bad); err != nil {
				return err
			}
		}
		done, err := recordNew(w.own.s)
		if err != nil {
			return err
		}
		defer done.Close()
		return w.own2.s.WaitEvent(done)
	}
	checked := w.ok(chain(), 0, "check of stream-ordered memory")
	if !checked && !w.syncDevice() {
		return // part of the check may be queued, unordered before the frees
	}
	for _, pt := range parts {
		w.free(pt.p.Free, 0, "Free of stream-ordered memory on %s", pt.rs.what)
	}
	if w.r.IntN(3) == 0 {
		w.replaceAsync()
		w.note("async pools closed with frees queued")
	}
	ctx, cancel := w.waitCtx()
	defer cancel()
	for _, rs := range []*stream{w.own, w.own2} {
		w.ok(rs.s.Wait(ctx), 0, "Stream.Wait of %s", rs.what)
	}
	var bad [1]int32
	if checked && w.okCopy(highlevel.CopyToHostAsync(w.own.s, bad[:], w.bad), 0, "CopyToHostAsync of check's count") && bad[0] != 0 {
		w.fail("check of stream-ordered memory: %d of %d words differ from their fills", bad[0], n*len(parts))
	}
}

// replaceAsync puts a new MemoryAsyncPool in the shared one's place and
// closes the old one, whose memory may still be in use and its frees
// queued.
func (w *worker) replaceAsync() {
	p, err := highlevel.NewMemoryAsyncPool(w.d)
	if !w.ok(err, 0, "NewMemoryAsyncPool") {
		return
	}
	w.mu.Lock()
	old := w.async
	w.async = p
	w.mu.Unlock()
	w.ok(old.Close(), 0, "MemoryAsyncPool.Close of the shared pool")
	w.note("async pools replaced")
}

// poolOrder allocates a block of the program's MemoryPool for a shared
// stream, fills it there and frees it at once, with the fill still
// queued: the pool hands the block out again only for that stream, whose
// order puts the next owner's work after the fill. Then it allocates for
// the stream again, fills and checks there, and waits before it frees.
// One time in four it closes a pool of its own instead (poolClose).
func (w *worker) poolOrder() {
	rs := w.stream()
	if rs.legacy {
		rs = w.capturable()
	}
	if w.r.IntN(4) == 0 {
		w.poolClose(rs)
		return
	}
	n := 1 + w.r.IntN(1<<18)
	v1, v2 := w.r.Uint32(), w.r.Uint32()
	err := rs.queue(func(s *highlevel.Stream) error {
		p, err := w.pool.AllocAsync(s, 4*n)
		if err != nil {
			return err
		}
		err = w.k.fill.Launch(s, grid(n), p, v1, int32(n))
		return errors.Join(err, p.Free())
	})
	if !w.ok(err, aClosed|aCapGlobal, "AllocAsync, fill and Free on %s", rs.what) {
		return
	}
	var p highlevel.MemoryPointer
	checked := false
	waited, err := w.queueAndWait(rs, func(s *highlevel.Stream) (err error) {
		if p, err = w.pool.AllocAsync(s, 4*n); err != nil {
			return err
		}
		if err := w.k.fill.Launch(s, grid(n), p, v2, int32(n)); err != nil {
			return err
		}
		if err := w.bad.MemsetAsync(s, 0, 4); err != nil {
			return err
		}
		if err := w.k.check.Launch(s, grid(n), p, v2, int32(n), w.bad); err != nil {
			return err
		}
		checked = true
		return nil
	})
	w.ok(err, aClosed|aCapGlobal, "AllocAsync, fill and check on %s", rs.what)
	var bad [1]int32
	if checked && waited && w.okCopy(highlevel.CopyToHostAsync(w.own.s, bad[:], w.bad), 0, "CopyToHostAsync of check's count") && bad[0] != 0 {
		w.fail("a MemoryPool block allocated for %s right after a Free with a fill queued: %d of %d words differ from the new fill", rs.what, bad[0], n)
	}
	switch {
	case p.Memory() == nil:
	case waited:
		w.free(p.Free, 0, "Free of a MemoryPool block")
	default:
		w.dropped.Add(1) // its work may be queued still: left to the cleanups
	}
	w.note("pool frees with a fill queued")
}

// poolClose makes a MemoryPool of its own, allocates blocks of it for rs
// and the legacy default stream, fills and checks them on rs, closes the
// pool with the blocks in use, and frees them: memory allocated before
// Close stays valid, and goes back to the device.
func (w *worker) poolClose(rs *stream) {
	pool, err := highlevel.NewMemoryPool(w.d)
	if !w.ok(err, 0, "NewMemoryPool") {
		return
	}
	n := 1 + w.r.IntN(1<<18)
	var ps []highlevel.MemoryPointer
	for i := range 1 + w.r.IntN(3) {
		var p highlevel.MemoryPointer
		err := retry(&w.op, func() (err error) {
			if i%2 == 0 {
				return rs.queue(func(s *highlevel.Stream) (err error) {
					p, err = pool.AllocAsync(s, 4*n)
					return err
				})
			}
			p, err = pool.Alloc(4 * n)
			return err
		})
		if w.ok(err, aClosed|aCapGlobal, "MemoryPool.Alloc of %d bytes", 4*n) {
			ps = append(ps, p)
		}
	}
	v := w.r.Uint32()
	waited, err := w.queueAndWait(rs, func(s *highlevel.Stream) error {
		if err := w.bad.MemsetAsync(s, 0, 4); err != nil {
			return err
		}
		for _, p := range ps {
			if err := w.k.fill.Launch(s, grid(n), p, v, int32(n)); err != nil {
				return err
			}
			if err := w.k.check.Launch(s, grid(n), p, v, int32(n), w.bad); err != nil {
				return err
			}
		}
		return nil
	})
	checked := w.ok(err, rs.allow(), "fill and check of a MemoryPool's blocks on %s", rs.what) && waited
	w.ok(pool.Close(), 0, "MemoryPool.Close with its blocks in use")
	var bad [1]int32
	if checked && len(ps) > 0 && w.okCopy(highlevel.CopyToHostAsync(w.own.s, bad[:], w.bad), 0, "CopyToHostAsync of check's count") && bad[0] != 0 {
		w.fail("a closed MemoryPool's blocks: %d of %d words differ from their fill", bad[0], n*len(ps))
	}
	for _, p := range ps {
		if waited {
			w.free(p.Free, 0, "Free of a block of a closed MemoryPool")
		}
	}
	w.note("MemoryPools closed with blocks in use")
}

// A managedBuf is a goroutine's managed memory, and its model: a word that
// is unknown is -1.
type managedBuf struct {
	p     highlevel.MemoryPointer
	model []int64
}

// managedMem returns the goroutine's managed memory, allocated and filled
// at the first call; nil where the device has no concurrent managed access
// or the allocation failed.
func (w *worker) managedMem() *managedBuf {
	if w.mbuf != nil || !w.managedOK {
		return w.mbuf
	}
	n := 1<<14 + w.r.IntN(1<<16)
	var p highlevel.MemoryPointer
	err := retry(&w.op, func() (err error) {
		p, err = highlevel.Managed(w.d).Alloc(4 * n)
		return err
	})
	if !w.ok(err, aCapGlobal, "Managed(d).Alloc of %d bytes", 4*n) {
		return nil
	}
	w.mbuf = &managedBuf{p: p, model: make([]int64, n)}
	w.managedFill(0, n)
	return w.mbuf
}

// managedFill fills words i to j-1 of the goroutine's managed memory with
// a new value, on its own stream, and waits.
func (w *worker) managedFill(i, j int) {
	m := w.mbuf
	v := w.r.Uint32()
	p, _ := m.p.Add(4 * i)
	waited, err := w.queueAndWait(w.own, func(s *highlevel.Stream) error { return w.k.fill.Launch(s, grid(j-i), p, v, int32(j-i)) })
	for k := i; k < j; k++ {
		switch {
		case err == nil && waited:
			m.model[k] = int64(v)
		case err == nil || outcome(err) == wroteUnknown:
			m.model[k] = -1
		}
	}
	w.ok(err, 0, "fill of managed memory")
}

// managed gives advice about a span of the goroutine's managed memory,
// prefetches it to the device or the host on a shared stream, or fills it;
// then it reads a span back, with a plain copy or on its own stream, and
// checks it.
func (w *worker) managed() {
	m := w.managedMem()
	if m == nil {
		w.note("managed skipped")
		return
	}
	n := len(m.model)
	i := w.r.IntN(n)
	j := i + 1 + w.r.IntN(n-i)
	p, _ := m.p.Add(4 * i)
	dev := w.d
	if w.r.IntN(2) == 0 {
		dev = highlevel.CPUDevice
	}
	switch w.r.IntN(3) {
	case 0:
		advice := []highlevel.Advice{highlevel.AdviseReadMostly, highlevel.AdviseUnsetReadMostly, highlevel.AdvisePreferredLocation,
			highlevel.AdviseUnsetPreferredLocation, highlevel.AdviseAccessedBy, highlevel.AdviseUnsetAccessedBy}[w.r.IntN(6)]
		w.ok(p.Advise(4*(j-i), advice, dev), aCapGlobal, "Advise(%v, %v) of words %d..%d of managed memory", advice, dev, i, j-1)
	case 1:
		rs := w.stream()
		_, err := w.queueAndWait(rs, func(s *highlevel.Stream) error { return p.Prefetch(s, 4*(j-i), dev) })
		w.ok(err, rs.allow(), "Prefetch to %v of words %d..%d of managed memory on %s", dev, i, j-1, rs.what)
	case 2:
		w.managedFill(i, j)
	}
	i = w.r.IntN(n)
	j = i + 1 + w.r.IntN(n-i)
	p, _ = m.p.Add(4 * i)
	got := make([]uint32, j-i)
	var err error
	a := aCapAny
	if w.r.IntN(2) == 0 {
		err = highlevel.CopyToHost(got, p)
	} else {
		a = 0
		err = highlevel.CopyToHostAsync(w.own.s, got, p)
	}
	if !w.okCopy(err, a, "a read of words %d..%d of managed memory", i, j-1) {
		return
	}
	for k, v := range got {
		if want := m.model[i+k]; want >= 0 && uint32(want) != v {
			w.fail("word %d of managed memory is %#x, want %#x", i+k, v, want)
			return
		}
	}
	w.note("managed memory checked")
}

// refuse calls Advise and Prefetch with devices CUDA does not count (one
// past the last, and values a C int would take for others: 2³¹, 2³², 2³²+1)
// and advice that is none, and other operations with sizes out of range:
// each must return an error, never act on another device or the host.
func (w *worker) refuse() {
	badDevs := []highlevel.Device{highlevel.Device(w.ndev), highlevel.Device(w.ndev + 1), highlevel.Device(1 << 31),
		highlevel.Device(1 << 32), highlevel.Device(1<<32 + 1), -2}
	badDev := badDevs[w.r.IntN(len(badDevs))]
	// The advice that takes a location: for the others, CUDA ignores the
	// device.
	locAdvice := []highlevel.Advice{highlevel.AdvisePreferredLocation, highlevel.AdviseAccessedBy, highlevel.AdviseUnsetAccessedBy}[w.r.IntN(3)]
	badAdvice := []highlevel.Advice{0, 7, -1, 1 << 31, 1<<32 + 1}[w.r.IntN(5)]
	n := 4096
	must := func(err error, invalid bool, format string, args ...any) {
		what := fmt.Sprintf(format, args...)
		switch {
		case err == nil:
			w.fail("%s succeeded: it must be refused", what)
		case errors.Is(err, highlevel.ErrInvalid):
			w.note("refusals matching ErrInvalid")
		case invalid:
			w.fail("%s: %v: want a refusal that matches ErrInvalid", what, err)
		default:
			w.note("refusals not matching ErrInvalid")
		}
	}
	if m := w.managedMem(); m != nil {
		must(m.p.Advise(n, locAdvice, badDev), false, "Advise(%v) of managed memory for %v", locAdvice, badDev)
		must(m.p.Advise(n, badAdvice, w.d), false, "Advise(%v) of managed memory", badAdvice)
		var s *highlevel.Stream
		switch w.r.IntN(3) {
		case 1:
			s = w.own.s
		case 2:
			s = w.quiet
		}
		must(m.p.Prefetch(s, n, badDev), false, "Prefetch of managed memory to %v", badDev)
	}
	must(w.scratch.Advise(n, highlevel.AdviseReadMostly, w.d), false, "Advise of memory that is not managed")
	must(w.scratch.Prefetch(w.quiet, n, w.d), false, "Prefetch of memory that is not managed")
	_, err := w.pool.Alloc(-1 - w.r.IntN(1<<20))
	must(err, true, "MemoryPool.Alloc of a negative size")
	_, err = w.d.Alloc(-1)
	must(err, true, "Device.Alloc(-1)")
	_, err = highlevel.AllocAsync(w.own.s, -1)
	must(err, true, "AllocAsync(-1)")
	_, err = highlevel.ArrayOf[uint32](w.scratch, 1<<20+1)
	must(err, true, "ArrayOf past the end of the memory")
	_, err = w.scratch.Add(4<<20 + 1)
	must(err, true, "MemoryPointer.Add past the end of the memory")
	_, err = w.scratch.Add(-1)
	must(err, true, "MemoryPointer.Add before the memory")
	must(highlevel.CopyToHost(make([]uint32, 2), w.bad), true, "CopyToHost of more than the memory holds")
	must(w.k.fill.Launch(w.quiet, grid(1), w.scratch, uint32(1)), true, "a launch with an argument missing")
}

// ipc exports memory from cuMemAlloc, or an event, through an IPC handle,
// round-trips the handle through its binary form, and opens it in this
// same process, which CUDA refuses; if it opens, it reads through the
// mapping (or waits on the event) and frees it. Managed memory and events
// without Interprocess are not shareable.
func (w *worker) ipc() {
	if w.r.IntN(3) == 0 {
		w.ipcEvent()
		return
	}
	if m := w.mbuf; m != nil && w.r.IntN(4) == 0 {
		_, err := m.p.IPCHandle()
		if err == nil {
			w.fail("IPCHandle of managed memory succeeded: want ErrNotShareable")
		} else {
			w.ok(err, aNotShareable, "IPCHandle of managed memory")
		}
		return
	}
	n := 4096 + 4*w.r.IntN(1<<14)
	var p highlevel.MemoryPointer
	err := retry(&w.op, func() (err error) {
		p, err = w.d.Alloc(n)
		return err
	})
	if !w.ok(err, aCapGlobal, "Device.Alloc of %d bytes", n) {
		return
	}
	defer func() { w.free(p.Free, 0, "Free of exported memory") }()
	b := byte(w.r.Uint32())
	if !w.ok(retry(&w.op, func() error { return p.Memset(b, n) }), aCapAny, "Memset of memory to export") {
		return
	}
	h, err := p.IPCHandle()
	if !w.ok(err, 0, "IPCHandle of memory from cuMemAlloc") {
		return
	}
	bin, err := h.MarshalBinary()
	if !w.ok(err, 0, "IPCMemHandle.MarshalBinary") {
		return
	}
	var h2 highlevel.IPCMemHandle
	if !w.ok(h2.UnmarshalBinary(bin), 0, "IPCMemHandle.UnmarshalBinary") {
		return
	}
	if h2 != h {
		w.fail("IPCMemHandle after MarshalBinary and UnmarshalBinary differs")
		return
	}
	m, err := highlevel.OpenIPCMemory(w.d, h2)
	if !w.ok(err, aIPCSelf, "OpenIPCMemory in the process that exported it") {
		w.note("ipc memory opened by its exporter: refused")
		return
	}
	w.note("ipc memory opened by its exporter: accepted")
	got := make([]byte, min(n, m.Size()))
	if w.okCopy(retry(&w.op, func() error { return highlevel.CopyToHost(got, m) }), aCapAny, "CopyToHost through an IPC mapping") {
		for i, x := range got {
			if x != b {
				w.fail("byte %d read through an IPC mapping is %#x, want %#x", i, x, b)
				break
			}
		}
	}
	w.free(m.Free, 0, "Free of an IPC mapping")
}

func (w *worker) ipcEvent() {
	interprocess := w.r.IntN(3) != 0
	e, err := highlevel.NewEvent(w.d, &highlevel.EventOptions{Interprocess: interprocess, DisableTiming: true})
	if !w.ok(err, 0, "NewEvent") {
		return
	}
	defer func() { w.ok(e.Close(), 0, "Event.Close of an exported event") }()
	h, err := e.IPCHandle()
	if !interprocess {
		if err == nil {
			w.fail("Event.IPCHandle of an event without Interprocess succeeded: want ErrNotShareable")
		} else {
			w.ok(err, aNotShareable, "Event.IPCHandle of an event without Interprocess")
		}
		return
	}
	if !w.ok(err, 0, "Event.IPCHandle") {
		return
	}
	bin, err := h.MarshalBinary()
	if !w.ok(err, 0, "IPCEventHandle.MarshalBinary") {
		return
	}
	var h2 highlevel.IPCEventHandle
	if !w.ok(h2.UnmarshalBinary(bin), 0, "IPCEventHandle.UnmarshalBinary") {
		return
	}
	o, err := highlevel.OpenIPCEvent(w.d, h2)
	if !w.ok(err, aIPCSelf, "OpenIPCEvent in the process that exported it") {
		w.note("ipc event opened by its exporter: refused")
		return
	}
	w.note("ipc event opened by its exporter: accepted")
	if w.ok(o.Record(w.own.s), 0, "Record of an opened IPC event") {
		ctx, cancel := w.waitCtx()
		w.ok(o.Wait(ctx), 0, "Wait of an opened IPC event")
		cancel()
	}
	w.ok(o.Close(), 0, "Event.Close of an opened IPC event")
}

func (w *worker) gc() { runtime.GC() }

// devsync waits for the device without the program's lock: the package
// refuses while a capture is in progress.
func (w *worker) devsync() {
	w.ok(w.d.Synchronize(), aCapAny, "Device.Synchronize")
}
