package highlevel

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// The oracle of TestStandInRandom: the state of every object the program
// closes or frees (srObj), what each operation may return given what the
// program did before and during it (srExpect, judge), and a model of every
// block's bytes (srBlock), which each operation that worked updates and
// every read compares with.

// An srObj is something the program closes or frees: a stream, event,
// graph, instantiation, pool or block. Its state says whether its Close
// (or Free) has begun, and whether it has returned.
type srObj struct {
	name  string
	kind  error // what using it once it is gone returns: ErrClosed or ErrFreed
	state atomic.Int32
}

const (
	srOpen    = iota
	srClosing // Close or Free called, not returned
	srClosed  // Close or Free returned
)

func newSrObj(name string, kind error) *srObj { return &srObj{name: name, kind: kind} }

// An srExpect is what judge needs to know of an operation: the objects it
// uses, their states when it began, whether a capture of this program was
// in progress when it began, and what the program asked for.
type srExpect struct {
	objs      []*srObj
	before    []int32
	capActive int32
	capGen    int64
	own       bool // this goroutine's capture is in progress
	sync      bool // on the legacy default stream: refused (ErrCapturing) while any capture of the package runs
	capturing bool // refused in a capture (pageable memory, AllocAsync, a wait): ErrCapturing
	invalid   bool // a request that is wrong (past the end, lengths that differ): ErrInvalid
}

// expect begins the judgement of an operation on objs (nil ones are left
// out).
func (w *srWorker) expect(objs ...*srObj) *srExpect {
	x := &srExpect{own: w.inCapture}
	x.capGen = w.wd.capGen.Load() // before capActive: see opCapture
	x.capActive = w.wd.capActive.Load()
	for _, o := range objs {
		if o != nil {
			x.objs = append(x.objs, o)
			x.before = append(x.before, o.state.Load())
		}
	}
	return x
}

// judge checks err, the error of the operation x began, and returns its
// outcome: "ok", or the kind of error it was ("freed", "closed",
// "capturing", "invalid"). An error is allowed only where the program's
// own actions explain it: an object closed (freed) before the operation
// began must make it fail with ErrClosed (ErrFreed); one whose Close began
// before the operation ended may; an operation on the legacy default
// stream may fail with ErrCapturing where a capture of the program
// overlapped it, and must where this goroutine's own capture is in
// progress; a refusal asked for must come. Anything else fails the test.
func (w *srWorker) judge(x *srExpect, err error) string {
	var allowed []error
	var why []string
	required := false
	for i, o := range x.objs {
		switch {
		case x.before[i] == srClosed:
			required = true
			allowed = append(allowed, o.kind)
			why = append(why, o.name+" was "+srGone(o.kind)+" before")
		case o.state.Load() != srOpen:
			allowed = append(allowed, o.kind)
		}
	}
	if x.sync {
		switch {
		case x.own:
			required = true
			allowed = append(allowed, ErrCapturing)
			why = append(why, "on the legacy default stream during this goroutine's capture")
		case x.capActive > 0 || w.wd.capGen.Load() != x.capGen:
			allowed = append(allowed, ErrCapturing)
		}
	}
	if x.capturing {
		required = true
		allowed = append(allowed, ErrCapturing)
		why = append(why, "refused in a capture")
	}
	if x.invalid {
		required = true
		allowed = append(allowed, ErrInvalid)
		why = append(why, "an invalid request")
	}
	if err == nil {
		if required {
			w.fail("returned nil; want an error: %s", strings.Join(why, "; "))
		}
		return "ok"
	}
	if !srOnly(err, allowed) {
		names := make([]string, len(allowed))
		for i, e := range allowed {
			names[i] = e.Error()
		}
		w.fail("unexpected error: %v (allowed here: %q)", err, names)
	}
	for _, k := range []struct {
		err  error
		name string
	}{{ErrFreed, "freed"}, {ErrClosed, "closed"}, {ErrCapturing, "capturing"}, {ErrInvalid, "invalid"}} {
		if errors.Is(err, k.err) {
			return k.name
		}
	}
	return "error"
}

func srGone(kind error) string {
	if kind == ErrFreed {
		return "freed"
	}
	return "closed"
}

// srOnly reports whether every error err joins is one of kinds: matches
// it, or wraps only errors that do. A kernel argument's ErrArgument beside
// such an error is its wrapper (Kernel.Launch's "bad kernel argument:
// argument 1: ... use of freed memory").
func srOnly(err error, kinds []error) bool {
	for _, k := range kinds {
		if err == k {
			return true
		}
		if x, ok := err.(interface{ Is(error) bool }); ok && x.Is(k) && k != ErrInvalid {
			return true
		}
		if k == ErrInvalid && errors.Is(err, ErrInvalid) && !srJoinsOther(err) {
			return true
		}
	}
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		n := 0
		for _, e := range u.Unwrap() {
			if e == nil || e == ErrArgument {
				continue
			}
			if !srOnly(e, kinds) {
				return false
			}
			n++
		}
		return n > 0
	case interface{ Unwrap() error }:
		if e := u.Unwrap(); e != nil {
			return srOnly(e, kinds)
		}
	}
	return false
}

// srJoinsOther reports whether err wraps ErrFreed, ErrClosed or
// ErrCapturing: a refusal that wraps them is that, not bad input.
func srJoinsOther(err error) bool {
	return errors.Is(err, ErrFreed) || errors.Is(err, ErrClosed) || errors.Is(err, ErrCapturing)
}

// The classes of blocks. Float blocks hold float32 integers small enough
// that axpy computes them exactly whatever the C compiler fuses: src
// blocks at most 8 in magnitude (axpy's x), acc blocks what axpy adds up
// (its y). Bytes blocks take any bytes, and no axpy.
const (
	srBytes = iota
	srSrc
	srAcc
)

// An srBlock is an allocation of the program, or, for the world's, memory
// it shares; model is what its bytes must be.
type srBlock struct {
	name  string
	class int
	p     MemoryPointer // all of it
	size  int
	arr   *Array[float32] // a float block's owning array, when it was allocated as one
	free  func() error
	model []byte
	obj   *srObj
	mu    sync.Mutex // for hist: the shared blocks' is every goroutine's
	hist  []string   // the last operations that changed it or read it
	// pooled is set for a block of the shared MemoryPool, allocated for
	// stream on (nil: the legacy default stream).
	pooled bool
	on     *srStream
}

func (b *srBlock) float() bool { return b.class != srBytes }

// unit is the smallest piece of the block the operations take: a float
// block's float32.
func (b *srBlock) unit() int {
	if b.float() {
		return 4
	}
	return 1
}

// note records op in the block's history.
func (b *srBlock) note(op string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.hist) == 12 {
		b.hist = b.hist[1:]
	}
	b.hist = append(b.hist, op)
}

// srCanCopy reports whether a copy from src to dst keeps dst's class.
func srCanCopy(dst, src *srBlock) bool {
	switch dst.class {
	case srBytes:
		return true
	case srAcc:
		return src.class != srBytes
	}
	return src.class == srSrc
}

// Effects are what a graph's nodes do when it is launched, on the model.
const (
	srSet    = iota // dst[off:off+n] = pat, repeated
	srCopy          // dst[off:off+n] = src[soff:soff+n]
	srAxpy          // y[i] += a*x[i] for i < m, reps times: dst is y, src x
	srShared        // the shared graph's work: counted, checked at the end
)

type srEffect struct {
	kind      int
	dst, src  *srBlock
	off, soff int
	n         int // bytes; for srAxpy, elements (m)
	pat       []byte
	a         float32
	reps      int
	desc      string
}

// apply does e on the model.
func (w *srWorker) apply(e srEffect) {
	switch e.kind {
	case srSet:
		for i := 0; i < e.n; i += len(e.pat) {
			copy(e.dst.model[e.off+i:e.off+e.n], e.pat)
		}
	case srCopy:
		copy(e.dst.model[e.off:e.off+e.n], e.src.model[e.soff:e.soff+e.n])
	case srAxpy:
		w.axpy(e.dst, e.off, e.src, e.soff, e.n, e.a, e.reps)
	case srShared:
		w.wd.launches.Add(1)
		return
	}
	e.dst.note(fmt.Sprintf("%s [%d.%d]", e.desc, w.id, w.op))
}

// axpy does y[i] += a*x[i] on the models, for the m float32s at yoff in
// y and xoff in x, reps times, in the stand-in's order, and checks that
// every value stays an integer it computes exactly.
func (w *srWorker) axpy(y *srBlock, yoff int, x *srBlock, xoff, m int, a float32, reps int) {
	for range reps {
		for i := range m {
			xv := srFloat(x.model, xoff+4*i)
			yv := srFloat(y.model, yoff+4*i)
			v := float32(a*xv) + yv
			if v != float32(math.Trunc(float64(v))) || math.Abs(float64(v)) > 1<<22 {
				w.fail("the model left exact integers: %v*%v + %v = %v (%s, %s)", a, xv, yv, v, x.name, y.name)
			}
			binary.NativeEndian.PutUint32(y.model[yoff+4*i:], math.Float32bits(v))
		}
	}
}

func srFloat(b []byte, off int) float32 {
	return math.Float32frombits(binary.NativeEndian.Uint32(b[off:]))
}

// srFloats returns the bytes of v.
func srFloats(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.NativeEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

// srSmall returns n float32 integers from -8 to 8.
func srSmall(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.IntN(17) - 8)
	}
	return v
}

// srRange returns a random range of whole units of a block of size bytes:
// its offset and length in bytes, the length at least one unit.
func srRange(r *rand.Rand, size, unit int) (off, n int) {
	units := size / unit
	if r.IntN(5) == 0 {
		return 0, units * unit
	}
	i := r.IntN(units)
	j := i + 1 + r.IntN(units-i)
	return i * unit, (j - i) * unit
}

// compare compares got, read from b at off, with the model.
func (w *srWorker) compare(b *srBlock, off int, got []byte, what string) {
	want := b.model[off : off+len(got)]
	if bytes.Equal(got, want) {
		return
	}
	i := 0
	for got[i] == want[i] {
		i++
	}
	at := off + i
	lo, hi := max(at-at%16-16, 0), min(at-at%16+32, b.size)
	read := make([]byte, hi-lo) // what was read, where it was read
	copy(read, b.model[lo:hi])
	for k := lo; k < hi; k++ {
		if k >= off && k < off+len(got) {
			read[k-lo] = got[k-off]
		}
	}
	msg := fmt.Sprintf("%s: %s byte %d is %#02x, the model says %#02x (%d bytes from %d read)\n\tread  % x\n\tmodel % x (bytes %d to %d)",
		what, b.name, at, got[i], want[i], len(got), off, read, b.model[lo:hi], lo, hi)
	if b.float() {
		f := at - at%4
		if f >= off && f+4 <= off+len(got) {
			msg += fmt.Sprintf("\n\tfloat32 %d: read %v, model %v", f/4, srFloat(got, f-off), srFloat(b.model, f))
		}
	}
	b.mu.Lock()
	msg += "\n\tits last operations: " + strings.Join(b.hist, "; ")
	b.mu.Unlock()
	w.fail("%s", msg)
}

// read reads n bytes from b at off on the goroutine's own stream, which
// must work.
func (w *srWorker) read(b *srBlock, off, n int) []byte {
	got := make([]byte, n)
	x := w.expect(b.obj, w.home.obj)
	err := func() error {
		p, err := b.p.Add(off)
		if err != nil {
			return err
		}
		return CopyToHostAsync(w.home.s, got, p)
	}()
	if out := w.judge(x, err); out != "ok" {
		w.fail("reading %s back: %v", b.name, err)
	}
	return got
}

// check reads b whole and compares it with the model.
func (w *srWorker) check(b *srBlock, why string) {
	w.compare(b, 0, w.read(b, 0, b.size), why)
	b.note(fmt.Sprintf("checked whole (%s) [%d.%d]", why, w.id, w.op))
	w.count("check", why)
}

// A fill kind fills arrays of one element type, with Fill, FillAsync
// and memset nodes.
type srFillKind struct {
	name        string
	size, align int
	fill        func(p MemoryPointer, n int, v []byte, s *Stream, async bool) error
	node        func(g *Graph, deps []GraphNode, p MemoryPointer, n int, v []byte) (GraphNode, error)
}

func srFillOf[T any](name string) srFillKind {
	var zero T
	return srFillKind{
		name:  name,
		size:  int(unsafe.Sizeof(zero)),
		align: int(unsafe.Alignof(zero)),
		fill: func(p MemoryPointer, n int, v []byte, s *Stream, async bool) error {
			a, err := ArrayOf[T](p, n)
			if err != nil {
				return err
			}
			if async {
				return a.FillAsync(s, srValue[T](v))
			}
			return a.Fill(srValue[T](v))
		},
		node: func(g *Graph, deps []GraphNode, p MemoryPointer, n int, v []byte) (GraphNode, error) {
			a, err := ArrayOf[T](p, n)
			if err != nil {
				return GraphNode{}, err
			}
			return AddMemset(g, deps, a, srValue[T](v))
		},
	}
}

// srValue returns the T whose bytes are v.
func srValue[T any](v []byte) T {
	var x T
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&x)), unsafe.Sizeof(x)), v)
	return x
}

// srFills are the element types filled: 1, 2 and 4 bytes (one memset),
// 8 and 16 (a memset for each 4 bytes of the element, unless they repeat),
// and 3 and 6 (copies from the host, doubled on the device).
var srFills = []srFillKind{
	srFillOf[uint8]("uint8"),
	srFillOf[uint16]("uint16"),
	srFillOf[float32]("float32"),
	srFillOf[uint64]("uint64"),
	srFillOf[[4]uint32]("[4]uint32"),
	srFillOf[[3]byte]("[3]byte"),
	srFillOf[[3]uint16]("[3]uint16"),
}

// srFillValue returns a value of k's size: random bytes, or one byte
// repeated, or for 8 and 16 bytes 4 bytes repeated.
func srFillValue(r *rand.Rand, k srFillKind) []byte {
	v := make([]byte, k.size)
	for i := range v {
		v[i] = byte(r.Uint32())
	}
	switch r.IntN(5) {
	case 0:
		for i := range v {
			v[i] = v[0]
		}
	case 1:
		if k.size%4 == 0 {
			for i := 4; i < k.size; i++ {
				v[i] = v[i-4]
			}
		}
	}
	return v
}

// srSteps returns the states a failed fill of n elements of v may have
// left the array in, as the number of elements done before each step of
// the fill (the fill's memsets, or its host copy and the device copies
// that double it), with words, where not 0, the number of words of each
// element its memsets set one after the other: a fill of one step leaves
// nothing. The model of a fill that failed is the state read back, which
// must be one of these.
func srSteps(v []byte, n int) (prefixes []int, words int) {
	size := len(v)
	uniform := !slices.ContainsFunc(v, func(c byte) bool { return c != v[0] })
	uniformWords := size%4 == 0
	for i := 4; uniformWords && i < size; i++ {
		uniformWords = v[i] == v[i-4]
	}
	switch {
	case uniform || size == 2 || size == 4 || (size%4 == 0 && uniformWords):
		return nil, 0
	case size%4 == 0:
		return nil, size / 4
	}
	k := min(n, 4096)
	prefixes = []int{0, k}
	for done := k; done < n; {
		done += min(done, n-done)
		prefixes = append(prefixes, done)
	}
	return prefixes, 0
}

// resolveFill makes the model of n elements of v at off in b what a
// fill that failed left there: one of the states srSteps allows, read
// back.
func (w *srWorker) resolveFill(b *srBlock, off, n int, v []byte) {
	prefixes, words := srSteps(v, n)
	if prefixes == nil && words == 0 {
		return // one step: nothing done
	}
	size := len(v)
	got := w.read(b, off, n*size)
	old := b.model[off : off+n*size]
	var cands [][]byte
	if words > 0 {
		for k := 0; k <= words; k++ {
			c := slices.Clone(old)
			for e := range n {
				copy(c[e*size:e*size+4*k], v[:4*k])
			}
			cands = append(cands, c)
		}
	} else {
		for _, p := range prefixes {
			c := slices.Clone(old)
			for e := range p {
				copy(c[e*size:], v)
			}
			cands = append(cands, c)
		}
	}
	for i, c := range cands {
		if bytes.Equal(c, got) {
			copy(old, got)
			b.note(fmt.Sprintf("partial fill read back [%d.%d]", w.id, w.op))
			if i > 0 {
				w.count("fill", "partial")
			}
			return
		}
	}
	w.compare(b, off, got, "after a fill that failed (no state its steps allow)")
}

// fail fails the test, naming the seed, the goroutine and its operation,
// and ends the goroutine.
func (w *srWorker) fail(format string, args ...any) {
	w.wd.t.Errorf("seed %d (%s=%d), goroutine %d, op %d (%s): %s",
		w.wd.seed, srSeedEnv, w.wd.seed, w.id, w.op, w.desc, fmt.Sprintf(format, args...))
	w.wd.failed.Store(true)
	runtime.Goexit()
}

// srHang is how long a Free or Close may wait for the operations in
// progress on its object: those of the program end in microseconds, and
// one that never ends (a hold not released) must fail the test, not hang
// it.
const srHang = 30 * time.Second

// bounded returns f's error, failing the test where f has not returned
// after srHang.
func (w *srWorker) bounded(what string, f func() error) error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	t := time.NewTimer(srHang)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		w.fail("%s has not returned after %v: an operation on it never ended", what, srHang)
		return nil
	}
}

// count counts an operation of kind with its outcome.
func (w *srWorker) count(kind, outcome string) { w.counts[kind+" "+outcome]++ }
