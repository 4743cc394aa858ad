package highlevel

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"unsafe"
)

// The goroutines of TestStandInRandom and their operations on memory:
// allocations, copies, fills, kernels, views, frees and drops, and the
// requests that must be refused.

// An srWorker is one goroutine of the program, with what it owns.
type srWorker struct {
	wd   *srWorld
	id   int
	r    *rand.Rand // the kind of each operation, and the seed of its numbers
	op   int
	desc string

	home        *srStream   // never closed before the end, never captured: reads go on it
	work        []*srStream // its other streams, which it captures
	deadStreams []*srStream
	blocks      []*srBlock
	dead        []*srBlock // freed
	views       []*srView
	graphs      []*srGraph
	deadGraphs  []*srGraph
	execs       []*srExec
	deadExecs   []*srExec
	events      []*srEvent
	deadEvents  []*srEvent
	inCapture   bool
	made        int // objects named so far
	counts      map[string]int
}

// An srStream is a stream of the program; a nil one is the legacy default
// stream, on which operations are synchronous.
type srStream struct {
	s   *Stream
	obj *srObj
}

func (s *srStream) stream() *Stream {
	if s == nil {
		return nil
	}
	return s.s
}

func (s *srStream) state() *srObj {
	if s == nil {
		return nil
	}
	return s.obj
}

func (s *srStream) String() string {
	if s == nil {
		return "the legacy default stream"
	}
	return s.obj.name
}

type srEvent struct {
	e   *Event
	obj *srObj
}

// An srView is a view of a block: an Array over part of it, made by Slice
// or ArrayOf.
type srView struct {
	b      *srBlock
	off, n int // bytes
	f      *Array[float32]
	by     *Array[byte]
}

// srOp is a kind of operation, with its weight in the draw.
type srOp struct {
	name   string
	weight int
	do     func(w *srWorker, r *rand.Rand)
}

var srOpKinds = []srOp{
	{"alloc", 9, (*srWorker).opAlloc},
	{"copy to the device", 8, (*srWorker).opH2D},
	{"copy to the host", 6, (*srWorker).opD2H},
	{"copy between blocks", 9, (*srWorker).opD2D},
	{"fill", 10, (*srWorker).opFill},
	{"axpy", 7, (*srWorker).opAxpy},
	{"view", 5, (*srWorker).opView},
	{"free", 5, (*srWorker).opFree},
	{"drop", 2, (*srWorker).opDrop},
	{"free what a graph holds", 3, (*srWorker).opFreeHeld},
	{"stream", 8, (*srWorker).opStream},
	{"capture", 7, (*srWorker).opCapture},
	{"graph", 18, (*srWorker).opGraph},
	{"refusal", 4, (*srWorker).opRefusal},
	{"use of what is gone", 3, (*srWorker).opUse},
	{"gc", 1, func(w *srWorker, r *rand.Rand) { runtime.GC(); w.count("gc", "ok") }},
	{"check", 3, func(w *srWorker, r *rand.Rand) {
		if b := srPick(r, w.blocks, nil); b != nil {
			w.check(b, "random")
		}
	}},
}

// run does the goroutine's operations: each draws its kind, and a seed
// for its numbers, from w.r, so that the kinds are the same whatever the
// outcomes of the operations before.
func (w *srWorker) run() {
	total := 0
	for _, k := range srOpKinds {
		total += k.weight
	}
	for i := range srOps {
		if w.wd.failed.Load() {
			return
		}
		w.op = i
		n := w.r.IntN(total)
		r := rand.New(rand.NewPCG(w.r.Uint64(), w.r.Uint64()))
		for _, k := range srOpKinds {
			if n -= k.weight; n < 0 {
				w.desc = k.name
				k.do(w, r)
				break
			}
		}
		w.wd.ops.Add(1)
	}
}

// srPick returns a random element of xs that ok accepts (nil: any), or
// the zero value.
func srPick[T any](r *rand.Rand, xs []T, ok func(T) bool) T {
	var cands []T
	for _, x := range xs {
		if ok == nil || ok(x) {
			cands = append(cands, x)
		}
	}
	if len(cands) == 0 {
		var zero T
		return zero
	}
	return cands[r.IntN(len(cands))]
}

// pickBlock returns one of the goroutine's blocks that ok accepts; one
// time in 20 a freed one, on which the operation must fail with ErrFreed.
func (w *srWorker) pickBlock(r *rand.Rand, ok func(*srBlock) bool) *srBlock {
	if r.IntN(20) == 0 {
		if b := srPick(r, w.dead, ok); b != nil {
			return b
		}
	}
	return srPick(r, w.blocks, ok)
}

// pickSource returns a block to read: one of the goroutine's (pickBlock)
// or, one time in 4, a shared constant block, which another goroutine
// frees while it is read.
func (w *srWorker) pickSource(r *rand.Rand, ok func(*srBlock) bool) *srBlock {
	if r.IntN(4) == 0 {
		if b := srPick(r, w.wd.consts, ok); b != nil {
			return b
		}
	}
	return w.pickBlock(r, ok)
}

// pickStream returns the stream an operation goes on: the legacy default
// stream (nil), the goroutine's own streams, one it closed, or a shared
// one that another goroutine closes.
func (w *srWorker) pickStream(r *rand.Rand) *srStream {
	switch n := r.IntN(20); {
	case n < 4:
		return nil
	case n < 8:
		return w.home
	case n < 14:
		if s := srPick(r, w.work, nil); s != nil {
			return s
		}
		return w.home
	case n < 15:
		if s := srPick(r, w.deadStreams, nil); s != nil {
			return s
		}
		return w.home
	}
	return w.wd.shared[r.IntN(len(w.wd.shared))]
}

// name returns a new name of an object of the goroutine's.
func (w *srWorker) name(what string) string {
	w.made++
	return fmt.Sprintf("goroutine %d's %s %d", w.id, what, w.made)
}

// tag is the operation, for the blocks' histories.
func (w *srWorker) tag(format string, args ...any) string {
	return fmt.Sprintf(format, args...) + fmt.Sprintf(" [%d.%d]", w.id, w.op)
}

// hostData returns n bytes to write to b: random bytes, or for a float
// block float32 integers of its class.
func srHostData(r *rand.Rand, b *srBlock, n int) []byte {
	if b.float() {
		return srFloats(srSmall(r, n/4))
	}
	d := make([]byte, n)
	for i := range d {
		d[i] = byte(r.Uint32())
	}
	return d
}

// srAsFloats returns the float32s whose bytes d holds.
func srAsFloats(d []byte) []float32 {
	f := make([]float32, len(d)/4)
	for i := range f {
		f[i] = srFloat(d, 4*i)
	}
	return f
}

func (w *srWorker) opAlloc(r *rand.Rand) {
	if len(w.blocks) >= 10 {
		w.opFree(r)
		return
	}
	wd := w.wd
	name := w.name("block")
	size := 16 * (1 + r.IntN(64))
	class := srBytes
	var p MemoryPointer
	var arr *Array[float32]
	var free func() error
	var data []byte // written by the allocation, else by a copy after it
	var x *srExpect
	var err error
	var kind, how string
	var pooled bool
	var on *srStream
	floats := func() []float32 {
		class = srSrc + r.IntN(2)
		data = srFloats(srSmall(r, size/4))
		return srAsFloats(data)
	}
	pool := func() (Allocator, *srObj, string) {
		switch r.IntN(3) {
		case 0:
			pooled = true
			return wd.pool, wd.pools[0], "the MemoryPool"
		case 1:
			return wd.apool, wd.pools[1], "the MemoryAsyncPool"
		}
		return Device(0), nil, "the device"
	}
	// Float blocks (5, 6, 7) as often as bytes blocks: axpy takes two.
	switch []int{0, 1, 2, 3, 4, 5, 5, 6, 6, 7, 7, 8}[r.IntN(12)] {
	case 0:
		kind, how = "device", "Device.Alloc"
		x = w.expect()
		p, err = Device(0).Alloc(size)
	case 1:
		kind, how = "pool", "MemoryPool.Alloc"
		x = w.expect(wd.pools[0])
		pooled = true
		p, err = wd.pool.Alloc(size)
	case 2:
		s := w.pickStream(r)
		kind, how = "pool", "MemoryPool.AllocAsync on "+s.String()
		x = w.expect(wd.pools[0], s.state())
		pooled, on = true, s
		p, err = wd.pool.AllocAsync(s.stream(), size)
	case 3:
		s := w.pickStream(r)
		kind, how = "async pool", "MemoryAsyncPool.AllocAsync on "+s.String()
		x = w.expect(wd.pools[1], s.state())
		x.sync = s == nil
		p, err = wd.apool.AllocAsync(s.stream(), size)
	case 4:
		s := w.pickStream(r)
		kind, how = "async pool", "AllocAsync on "+s.String()
		x = w.expect(s.state())
		x.sync = s == nil
		p, err = AllocAsync(s.stream(), size)
	case 5:
		a, obj, from := pool()
		kind, how = "array", "AllocArray[float32] from "+from
		x = w.expect(obj)
		x.sync = a == Allocator(wd.apool) // its Alloc is on the legacy default stream
		class = srSrc + r.IntN(2)
		arr, err = AllocArray[float32](a, size/4)
	case 6:
		a, obj, from := pool()
		kind, how = "array from", "ArrayFrom([]float32) from "+from
		x = w.expect(obj)
		x.sync = true // the copy
		arr, err = ArrayFrom(a, floats())
	case 7:
		s := w.pickStream(r)
		var a StreamAllocator
		var obj *srObj
		if r.IntN(2) == 0 {
			a, obj = wd.apool, wd.pools[1]
		}
		kind, how = "async pool", fmt.Sprintf("AllocArrayAsync[float32] from %T on %v", a, s)
		x = w.expect(obj, s.state())
		x.sync = s == nil
		class = srSrc + r.IntN(2)
		arr, err = AllocArrayAsync[float32](s.stream(), a, size/4)
	case 8:
		a, obj, from := pool()
		kind, how = "array from", "ArrayFrom([]byte) from "+from
		x = w.expect(obj)
		x.sync = true
		data = make([]byte, size)
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		var ba *Array[byte]
		if ba, err = ArrayFrom(a, data); err == nil {
			p, free = ba.MemoryPointer(), ba.Free
		}
	}
	w.desc = "alloc: " + how
	out := w.judge(x, err)
	w.count("alloc "+kind, out)
	if out != "ok" {
		return
	}
	if arr != nil {
		p, free = arr.MemoryPointer(), arr.Free
	} else if free == nil {
		free = p.Free
	}
	if p.Size() != size {
		w.fail("%s returned %d bytes, want %d", how, p.Size(), size)
	}
	w.addBlock(r, &srBlock{name: fmt.Sprintf("%s (%d bytes, %s)", name, size, how), class: class, p: p, size: size, arr: arr,
		free: free, model: make([]byte, size), obj: newSrObj(name, ErrFreed), pooled: pooled, on: on}, data)
}

// addBlock makes b, just allocated, one of the goroutine's blocks, with
// data written to it, or where data is nil with what it writes to it now.
func (w *srWorker) addBlock(r *rand.Rand, b *srBlock, data []byte) bool {
	if data == nil {
		// Unwritten memory is undefined: write it all before anything
		// reads it.
		data = srHostData(r, b, b.size)
		x := w.expect(b.obj, w.home.obj)
		if out := w.judge(x, CopyFromHostAsync(w.home.s, b.p, data)); out != "ok" {
			return false
		}
	}
	copy(b.model, data)
	b.note(w.tag("allocated and written"))
	w.blocks = append(w.blocks, b)
	return true
}

// poolBlock allocates a block of size bytes from the shared MemoryPool for
// stream on, as b was: the pool hands out a block it holds free, b's
// where b went back to it.
func (w *srWorker) poolBlock(r *rand.Rand, b *srBlock) *srBlock {
	name := w.name("block")
	how := "MemoryPool.AllocAsync on " + b.on.String() + ", after a free"
	w.desc = "alloc: " + how
	x := w.expect(w.wd.pools[0], b.on.state())
	p, err := w.wd.pool.AllocAsync(b.on.stream(), b.size)
	out := w.judge(x, err)
	w.count("alloc pool", out)
	if out != "ok" {
		return nil
	}
	nb := &srBlock{name: fmt.Sprintf("%s (%d bytes, %s)", name, b.size, how), class: srBytes, p: p, size: b.size, free: p.Free,
		model: make([]byte, b.size), obj: newSrObj(name, ErrFreed), pooled: true, on: b.on}
	if !w.addBlock(r, nb, nil) {
		return nil
	}
	return nb
}

func (w *srWorker) opH2D(r *rand.Rand) {
	b := w.pickBlock(r, nil)
	if b == nil {
		w.opAlloc(r)
		return
	}
	off, n := srRange(r, b.size, b.unit())
	data := srHostData(r, b, n)
	s := w.pickStream(r)
	sync := s == nil && r.IntN(2) == 0
	variant := r.IntN(3)
	w.desc = fmt.Sprintf("copy %d bytes to %s at %d on %v (variant %d, sync %v)", n, b.name, off, s, variant, sync)
	x := w.expect(b.obj, s.state())
	x.sync = s == nil
	err := func() error {
		p, err := b.p.Add(off)
		if err != nil {
			return err
		}
		switch variant {
		case 0:
			if b.float() {
				if sync {
					return CopyFromHost(p, srAsFloats(data))
				}
				return CopyFromHostAsync(s.stream(), p, srAsFloats(data))
			}
			if sync {
				return CopyFromHost(p, data)
			}
			return CopyFromHostAsync(s.stream(), p, data)
		case 1:
			if b.float() {
				a, err := ArrayOf[float32](p, n/4)
				if err != nil {
					return err
				}
				if sync {
					return a.CopyFromHost(srAsFloats(data))
				}
				return a.CopyFromHostAsync(s.stream(), srAsFloats(data))
			}
			a, err := ArrayOf[byte](p, n)
			if err != nil {
				return err
			}
			if sync {
				return a.CopyFromHost(data)
			}
			return a.CopyFromHostAsync(s.stream(), data)
		}
		if sync {
			return p.CopyFromHostPointer(unsafe.Pointer(&data[0]), n)
		}
		return p.CopyFromHostPointerAsync(s.stream(), unsafe.Pointer(&data[0]), n)
	}()
	out := w.judge(x, err)
	w.count("h2d", out)
	if out == "ok" {
		copy(b.model[off:], data)
		b.note(w.tag("h2d %d bytes at %d", n, off))
	}
}

func (w *srWorker) opD2H(r *rand.Rand) {
	b := w.pickSource(r, nil)
	if b == nil {
		w.opAlloc(r)
		return
	}
	off, n := srRange(r, b.size, b.unit())
	got := make([]byte, n)
	s := w.pickStream(r)
	sync := s == nil && r.IntN(2) == 0
	variant := r.IntN(4)
	w.desc = fmt.Sprintf("copy %d bytes of %s at %d to the host on %v (variant %d, sync %v)", n, b.name, off, s, variant, sync)
	x := w.expect(b.obj, s.state())
	x.sync = s == nil
	err := func() error {
		p, err := b.p.Add(off)
		if err != nil {
			return err
		}
		switch variant {
		case 0:
			if sync {
				return CopyToHost(got, p)
			}
			return CopyToHostAsync(s.stream(), got, p)
		case 1:
			if !b.float() {
				a, err := ArrayOf[byte](p, n)
				if err != nil {
					return err
				}
				if sync {
					return a.CopyToHost(got)
				}
				return a.CopyToHostAsync(s.stream(), got)
			}
			a, err := ArrayOf[float32](p, n/4)
			if err != nil {
				return err
			}
			var f []float32
			if sync {
				f, err = a.ToHost()
			} else {
				f = make([]float32, n/4)
				err = a.CopyToHostAsync(s.stream(), f)
			}
			copy(got, srFloats(f))
			return err
		case 2:
			if sync {
				return p.CopyToHostPointer(unsafe.Pointer(&got[0]), n)
			}
			return p.CopyToHostPointerAsync(s.stream(), unsafe.Pointer(&got[0]), n)
		}
		// Through the block's own array, where it has one.
		if b.arr == nil || sync {
			if sync {
				return CopyToHost(got, p)
			}
			return CopyToHostAsync(s.stream(), got, p)
		}
		a, err := b.arr.Slice(off/4, (off+n)/4)
		if err != nil {
			return err
		}
		f := make([]float32, n/4)
		err = a.CopyToHostAsync(s.stream(), f)
		copy(got, srFloats(f))
		return err
	}()
	out := w.judge(x, err)
	w.count("d2h", out)
	if out == "ok" {
		w.compare(b, off, got, "a copy to the host")
		b.note(w.tag("read %d bytes at %d", n, off))
	}
}

// srDisjoint picks the offsets of a copy of n bytes from src to dst, in
// units of unit, that do not overlap where they are one block; ok is
// false where it found none.
func srDisjoint(r *rand.Rand, dst, src *srBlock, n, unit int) (doff, soff int, ok bool) {
	for range 8 {
		doff = unit * r.IntN((dst.size-n)/unit+1)
		soff = unit * r.IntN((src.size-n)/unit+1)
		if dst != src || doff+n <= soff || soff+n <= doff {
			return doff, soff, true
		}
	}
	return 0, 0, false
}

func (w *srWorker) opD2D(r *rand.Rand) {
	dst := w.pickBlock(r, nil)
	if dst == nil {
		w.opAlloc(r)
		return
	}
	src := w.pickSource(r, func(c *srBlock) bool { return srCanCopy(dst, c) })
	if src == nil {
		return
	}
	unit := dst.unit()
	_, n := srRange(r, min(dst.size, src.size), unit)
	doff, soff, ok := srDisjoint(r, dst, src, n, unit)
	if !ok {
		return
	}
	s := w.pickStream(r)
	variant := r.IntN(2)
	w.desc = fmt.Sprintf("copy %d bytes from %s at %d to %s at %d on %v (variant %d)", n, src.name, soff, dst.name, doff, s, variant)
	x := w.expect(dst.obj, src.obj, s.state())
	x.sync = s == nil
	err := func() error {
		d, err := dst.p.Add(doff)
		if err != nil {
			return err
		}
		sp, err := src.p.Add(soff)
		if err != nil {
			return err
		}
		if variant == 0 {
			if s == nil {
				return d.CopyFromDevice(sp, n)
			}
			return d.CopyFromDeviceAsync(s.stream(), sp, n)
		}
		if unit == 4 {
			return srCopyArrays[float32](d, sp, n/4, s.stream())
		}
		return srCopyArrays[byte](d, sp, n, s.stream())
	}()
	out := w.judge(x, err)
	w.count("d2d", out)
	if out == "ok" {
		copy(dst.model[doff:doff+n], src.model[soff:soff+n])
		dst.note(w.tag("d2d %d bytes at %d from %s at %d", n, doff, src.name, soff))
	}
}

// srCopyArrays copies n elements from src to dst, as arrays (ArrayOf),
// with CopyFrom (s nil) or CopyFromAsync.
func srCopyArrays[T any](dst, src MemoryPointer, n int, s *Stream) error {
	d, err := ArrayOf[T](dst, n)
	if err != nil {
		return err
	}
	sa, err := ArrayOf[T](src, n)
	if err != nil {
		return err
	}
	if s == nil {
		return d.CopyFrom(sa)
	}
	return d.CopyFromAsync(s, sa)
}

// srFillArgs draws a fill of b: its kind, offset, elements and value. A
// float block takes float32 integers, and zeros.
func srFillArgs(r *rand.Rand, b *srBlock) (k srFillKind, off, n int, v []byte) {
	if b.float() {
		var nb int
		off, nb = srRange(r, b.size, 4)
		if r.IntN(5) == 0 {
			return srFills[0], off, nb, []byte{0}
		}
		return srFills[2], off, nb / 4, srFloats(srSmall(r, 1))
	}
	k = srFills[r.IntN(len(srFills))]
	v = srFillValue(r, k)
	off = k.align * r.IntN((b.size-k.size)/k.align+1)
	n = 1 + r.IntN((b.size-off)/k.size)
	return k, off, n, v
}

func (w *srWorker) opFill(r *rand.Rand) {
	b := w.pickBlock(r, nil)
	if b == nil {
		w.opAlloc(r)
		return
	}
	k, off, n, v := srFillArgs(r, b)
	s := w.pickStream(r)
	async := s != nil && r.IntN(4) != 0 // else Fill, on the legacy default stream
	w.desc = fmt.Sprintf("fill %d %s at %d of %s with % x on %v (async %v)", n, k.name, off, b.name, v, s, async)
	x := w.expect(b.obj, s.state())
	if !async {
		x = w.expect(b.obj)
		x.sync = true
	}
	err := func() error {
		p, err := b.p.Add(off)
		if err != nil {
			return err
		}
		return k.fill(p, n, v, s.stream(), async)
	}()
	out := w.judge(x, err)
	w.count("fill "+k.name, out)
	if out == "ok" {
		w.apply(srEffect{kind: srSet, dst: b, off: off, n: n * k.size, pat: v, desc: fmt.Sprintf("fill %d %s at %d", n, k.name, off)})
	} else if b.obj.state.Load() == srOpen {
		w.resolveFill(b, off, n, v)
	}
}

// srAxpyArgs are an axpy launch's: y[i] += a*x[i] for the m of n elements
// the grid's threads cover, gy times.
type srAxpyArgs struct {
	y, x       *srBlock
	yoff, xoff int
	n          int
	a          float32
	cfg        LaunchConfig
}

// axpyArgs draws an axpy of the goroutine's: y an acc block, x a src
// block (or a shared constant).
func (w *srWorker) axpyArgs(r *rand.Rand) (srAxpyArgs, bool) {
	y := w.pickBlock(r, func(b *srBlock) bool { return b.class == srAcc })
	x := w.pickSource(r, func(b *srBlock) bool { return b.class == srSrc })
	if y == nil || x == nil {
		return srAxpyArgs{}, false
	}
	_, nb := srRange(r, min(x.size, y.size), 4)
	n := nb / 4
	bx := 1 + r.IntN(64)
	gx := (n + bx - 1) / bx
	if r.IntN(4) == 0 {
		gx = 1 + r.IntN(gx)
	}
	return srAxpyArgs{
		y: y, x: x, n: n,
		yoff: 4 * r.IntN((y.size-nb)/4+1),
		xoff: 4 * r.IntN((x.size-nb)/4+1),
		a:    float32(r.IntN(5) - 2),
		cfg:  LaunchConfig{Grid: Dim3{X: gx, Y: 1 + r.IntN(2)}, Block: Dim3{X: bx}},
	}, true
}

// args returns the kernel's arguments: each array as an Array (a view, or
// a Slice of a block's own array) or as a MemoryPointer, drawn apart, so
// that a launch's types often differ from the kernel's recorded shape
// after an Array: packShape then returned without releasing the Arrays it
// had acquired, and their Free waited forever.
func (l srAxpyArgs) args(r *rand.Rand) ([]any, error) {
	arg := func(b *srBlock, off int) (any, error) {
		switch f := r.IntN(3); {
		case f == 0:
			return b.p.Add(off)
		case f == 1 && b.arr != nil:
			return b.arr.Slice(off/4, off/4+l.n)
		}
		p, err := b.p.Add(off)
		if err != nil {
			return nil, err
		}
		return ArrayOf[float32](p, l.n)
	}
	xa, err := arg(l.x, l.xoff)
	if err != nil {
		return nil, err
	}
	ya, err := arg(l.y, l.yoff)
	if err != nil {
		return nil, err
	}
	return []any{l.a, xa, ya, int32(l.n)}, nil
}

// effect is what the launch does.
func (l srAxpyArgs) effect() srEffect {
	m := min(l.cfg.Grid.X*l.cfg.Block.X, l.n)
	return srEffect{kind: srAxpy, dst: l.y, off: l.yoff, src: l.x, soff: l.xoff, n: m, a: l.a, reps: l.cfg.Grid.Y,
		desc: fmt.Sprintf("axpy of %d at %d, %v times %s at %d, %d times", m, l.yoff, l.a, l.x.name, l.xoff, l.cfg.Grid.Y)}
}

func (l srAxpyArgs) String() string {
	return fmt.Sprintf("axpy y = %s at %d, x = %s at %d, n %d, a %v, grid %v, block %v", l.y.name, l.yoff, l.x.name, l.xoff, l.n, l.a, l.cfg.Grid, l.cfg.Block)
}

func (w *srWorker) opAxpy(r *rand.Rand) {
	l, ok := w.axpyArgs(r)
	if !ok {
		w.opAlloc(r)
		return
	}
	s := w.pickStream(r)
	w.desc = fmt.Sprintf("%v on %v", l, s)
	x := w.expect(l.y.obj, l.x.obj, s.state())
	x.sync = s == nil
	err := func() error {
		args, err := l.args(r)
		if err != nil {
			return err
		}
		return w.wd.k.Launch(s.stream(), l.cfg, args...)
	}()
	out := w.judge(x, err)
	w.count("axpy", out)
	if out == "ok" {
		w.apply(l.effect())
	}
}

func (w *srWorker) opView(r *rand.Rand) {
	switch r.IntN(3) {
	case 0:
		if len(w.views) >= 6 {
			w.dropView(r)
			return
		}
		b := w.pickBlock(r, nil)
		if b == nil {
			return
		}
		off, n := srRange(r, b.size, b.unit())
		v := &srView{b: b, off: off, n: n}
		w.desc = fmt.Sprintf("view of %d bytes of %s at %d", n, b.name, off)
		x := w.expect(b.obj)
		var err error
		switch {
		case b.arr != nil && r.IntN(2) == 0:
			v.f, err = b.arr.Slice(off/4, (off+n)/4)
		case b.float():
			var p MemoryPointer
			if p, err = b.p.Add(off); err == nil {
				v.f, err = ArrayOf[float32](p, n/4)
			}
		default:
			var p MemoryPointer
			if p, err = b.p.Add(off); err == nil {
				v.by, err = ArrayOf[byte](p, n)
			}
		}
		out := w.judge(x, err)
		w.count("view", out)
		if out == "ok" {
			w.views = append(w.views, v)
		}
	case 1:
		if v := srPick(r, w.views, nil); v != nil {
			w.checkView(v, "view")
		}
	default:
		w.dropView(r)
	}
}

// checkView reads v through itself and compares it with its block's model;
// a view of a freed block must fail with ErrFreed.
func (w *srWorker) checkView(v *srView, why string) {
	w.desc = fmt.Sprintf("check the view of %d bytes of %s at %d (%s)", v.n, v.b.name, v.off, why)
	got := make([]byte, v.n)
	x := w.expect(v.b.obj, w.home.obj)
	var err error
	if v.f != nil {
		f := make([]float32, v.n/4)
		err = v.f.CopyToHostAsync(w.home.s, f)
		copy(got, srFloats(f))
	} else {
		err = v.by.CopyToHostAsync(w.home.s, got)
	}
	out := w.judge(x, err)
	if out != "ok" {
		w.count("use", out)
		return
	}
	w.compare(v.b, v.off, got, "a view")
	w.count("check", "view")
}

// dropView checks a view and drops it.
func (w *srWorker) dropView(r *rand.Rand) {
	if len(w.views) == 0 {
		return
	}
	i := r.IntN(len(w.views))
	w.checkView(w.views[i], "drop")
	w.views = slices.Delete(w.views, i, i+1)
}

func (w *srWorker) opFree(r *rand.Rand) {
	if r.IntN(8) == 0 && len(w.dead) > 0 {
		b := w.dead[r.IntN(len(w.dead))]
		w.desc = "free again " + b.name
		w.count("free", w.judge(w.expect(b.obj), w.bounded("Free of "+b.name, b.free)))
		return
	}
	if b := srPick(r, w.blocks, nil); b != nil {
		w.freeBlock(b)
	}
}

// freeBlock checks b and frees it.
func (w *srWorker) freeBlock(b *srBlock) {
	w.desc = "free " + b.name
	w.check(b, "free")
	x := w.expect(b.obj)
	out := w.judge(x, w.bounded("Free of "+b.name, b.free))
	w.count("free", out)
	b.obj.state.Store(srClosed)
	b.note(w.tag("freed"))
	w.blocks = slices.DeleteFunc(w.blocks, func(c *srBlock) bool { return c == b })
	w.dead = append(w.dead, b)
	if len(w.dead) > 8 {
		w.dead = w.dead[1:]
	}
}

// opFreeHeld frees a block that an instantiation's work uses, and
// launches it: the instantiation holds the memory, and its launches still
// find it, whether its graph was captured, built, or given the memory by
// SetKernelArgs.
func (w *srWorker) opFreeHeld(r *rand.Rand) {
	uses := func(e *srExec) []*srBlock {
		var bs []*srBlock
		for _, eff := range srEffects(e.nodes) {
			for _, b := range []*srBlock{eff.dst, eff.src} {
				if b != nil && slices.Contains(w.blocks, b) && !slices.Contains(bs, b) {
					bs = append(bs, b)
				}
			}
		}
		return bs
	}
	e := srPick(r, w.execs, func(e *srExec) bool { return len(uses(e)) > 0 })
	if e == nil {
		return
	}
	bs := uses(e)
	w.freeHeld(r, e, bs[r.IntN(len(bs))])
}

// freeHeld frees b, which e uses, allocates the same size from the pool b
// came from, if it is the shared MemoryPool, and launches e: e holds b,
// and the new block is not b's memory.
func (w *srWorker) freeHeld(r *rand.Rand, e *srExec, b *srBlock) {
	w.freeBlock(b)
	var nb *srBlock
	if b.pooled {
		nb = w.poolBlock(r, b)
	}
	w.launch(r, e)
	if nb != nil {
		w.desc = fmt.Sprintf("check %s, allocated after the free of %s", nb.name, b.name)
		w.check(nb, "reuse")
	}
	w.count("launch after free", "done")
}

// opDrop checks a block, and its views, and stops referring to it without
// Free: the package takes it back once it is unreachable.
func (w *srWorker) opDrop(r *rand.Rand) {
	b := srPick(r, w.blocks, nil)
	if b == nil {
		return
	}
	w.desc = "drop " + b.name
	w.check(b, "drop")
	for _, v := range w.views {
		if v.b == b {
			w.checkView(v, "drop")
		}
	}
	w.views = slices.DeleteFunc(w.views, func(v *srView) bool { return v.b == b })
	w.blocks = slices.DeleteFunc(w.blocks, func(c *srBlock) bool { return c == b })
}

// opRefusal asks for what the package must refuse with ErrInvalid, on a
// live block of the goroutine's: nothing may change (the next check of
// the block sees it).
func (w *srWorker) opRefusal(r *rand.Rand) {
	b := srPick(r, w.blocks, nil)
	c := srPick(r, w.blocks, nil)
	if b == nil {
		w.opAlloc(r)
		return
	}
	s := w.home.s
	x := w.expect(b.obj, w.home.obj)
	if c != nil {
		x = w.expect(b.obj, c.obj, w.home.obj)
	}
	x.invalid = true
	variant := r.IntN(10)
	past := 1 + r.IntN(32)
	var err error
	switch variant {
	case 0:
		w.desc = fmt.Sprintf("copy %d bytes from the host to %s, %d past its end", b.size+past, b.name, past)
		err = CopyFromHostAsync(s, b.p, make([]byte, b.size+past))
	case 1:
		off := r.IntN(b.size)
		w.desc = fmt.Sprintf("copy %d bytes of %s at %d to the host, %d past its end", b.size-off+past, b.name, off, past)
		err = func() error {
			p, err := b.p.Add(off)
			if err != nil {
				return err
			}
			return CopyToHostAsync(s, make([]byte, b.size-off+past), p)
		}()
	case 2:
		if c == nil {
			return
		}
		// The destination past its end.
		w.desc = fmt.Sprintf("copy %d bytes from %s to %s, %d past the destination's end", b.size+past, c.name, b.name, past)
		err = b.p.CopyFromDeviceAsync(s, c.p, b.size+past)
	case 3:
		if c == nil || c == b || c.size >= b.size {
			return
		}
		// The source past its end, the destination large enough.
		n := c.size + r.IntN(b.size-c.size) + 1
		w.desc = fmt.Sprintf("copy %d bytes from %s (%d bytes) to %s", n, c.name, c.size, b.name)
		if r.IntN(2) == 0 {
			err = b.p.CopyFromDeviceAsync(s, c.p, n)
		} else {
			err = b.p.CopyFromDevice(c.p, n)
			x.sync = true
		}
	case 4:
		if c == nil {
			return
		}
		n := min(b.size, c.size)
		w.desc = fmt.Sprintf("CopyFrom between arrays of %d and %d bytes of %s and %s", n, n-1, b.name, c.name)
		err = func() error {
			d, err := ArrayOf[byte](b.p, n)
			if err != nil {
				return err
			}
			sa, err := ArrayOf[byte](c.p, n-1)
			if err != nil {
				return err
			}
			return d.CopyFromAsync(s, sa)
		}()
	case 5:
		w.desc = fmt.Sprintf("Add %d to a pointer to %s", b.size+past, b.name)
		_, err = b.p.Add(b.size + past)
	case 6:
		w.desc = fmt.Sprintf("an array of %d bytes over %s", b.size+past, b.name)
		if b.arr != nil {
			_, err = b.arr.Slice(0, b.size/4+past)
		} else {
			_, err = ArrayOf[byte](b.p, b.size+past)
		}
	case 7:
		w.desc = fmt.Sprintf("memset %d bytes of %s", b.size+past, b.name)
		err = b.p.MemsetAsync(s, 0x11, b.size+past)
	case 8:
		w.desc = "launch axpy with a block of 2048 threads"
		err = w.wd.k.Launch(s, LaunchConfig{Grid: Dim3{X: 1}, Block: Dim3{X: 2048}}, float32(1), b.p, b.p, int32(0))
	case 9:
		w.desc = "launch axpy with 3 arguments"
		err = w.wd.k.Launch(s, LaunchConfig{Grid: Dim3{X: 1}, Block: Dim3{X: 1}}, float32(1), b.p, int32(0))
	}
	w.count("refusal", w.judge(x, err))
}

// opUse uses something the goroutine freed or closed: it must fail with
// ErrFreed or ErrClosed.
func (w *srWorker) opUse(r *rand.Rand) {
	var x *srExpect
	var err error
	switch r.IntN(6) {
	case 0, 1:
		b := srPick(r, w.dead, nil)
		if b == nil {
			return
		}
		w.desc = "use freed " + b.name
		x = w.expect(b.obj, w.home.obj)
		switch r.IntN(4) {
		case 0:
			err = CopyToHostAsync(w.home.s, make([]byte, b.size), b.p)
		case 1:
			err = b.p.MemsetAsync(w.home.s, 1, b.size)
		case 2:
			_, err = b.p.Add(1)
		default:
			err = w.wd.k.Launch(w.home.s, LaunchConfig{Grid: Dim3{X: 1}, Block: Dim3{X: 1}}, float32(1), b.p, b.p, int32(1))
		}
	case 2:
		s := srPick(r, w.deadStreams, nil)
		b := srPick(r, w.blocks, nil)
		if s == nil || b == nil {
			return
		}
		w.desc = fmt.Sprintf("memset %s on closed %s", b.name, s)
		x = w.expect(s.obj, b.obj)
		err = b.p.MemsetAsync(s.s, 1, b.size)
	case 3:
		e := srPick(r, w.deadExecs, nil)
		if e == nil {
			return
		}
		w.desc = "launch closed " + e.name
		x = w.expect(e.obj, w.home.obj)
		err = e.x.Launch(w.home.s)
	case 4:
		g := srPick(r, w.deadGraphs, nil)
		if g == nil {
			return
		}
		w.desc = "instantiate closed " + g.name
		x = w.expect(g.obj)
		var xe *GraphExec
		if xe, err = g.g.Instantiate(nil); err == nil {
			xe.Close()
		}
	default:
		e := srPick(r, w.deadEvents, nil)
		if e == nil {
			return
		}
		w.desc = "record closed " + e.obj.name
		x = w.expect(e.obj, w.home.obj)
		err = e.e.Record(w.home.s)
	}
	w.count("use", w.judge(x, err))
}

// end checks, once every goroutine is done, the goroutine's blocks and
// views, frees them, and closes what it made.
func (w *srWorker) end() {
	w.op = srOps
	for _, b := range w.blocks {
		w.desc = "check at the end"
		w.check(b, "end")
	}
	for _, v := range w.views {
		w.checkView(v, "end")
	}
	for _, b := range w.blocks {
		w.desc = "free at the end " + b.name
		w.count("free", w.judge(w.expect(b.obj), w.bounded("Free of "+b.name, b.free)))
		b.obj.state.Store(srClosed)
	}
	w.desc = "close at the end"
	for _, e := range w.execs {
		w.count("close", w.judge(w.expect(e.obj), w.bounded("Close of "+e.name, e.x.Close)))
	}
	for _, g := range w.graphs {
		w.count("close", w.judge(w.expect(g.obj), w.bounded("Close of "+g.name, g.g.Close)))
	}
	for _, e := range w.events {
		w.count("close", w.judge(w.expect(e.obj), w.bounded("Close of "+e.obj.name, e.e.Close)))
	}
	for _, s := range append(w.work, w.home) {
		w.count("close", w.judge(w.expect(s.obj), w.bounded("Close of "+s.obj.name, s.s.Close)))
	}
}
