package highlevel

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"github.com/gocuda/cuda/cudadrv"
	"github.com/gocuda/cuda/internal/randomtest"
)

// The graph kinds of TestGPURandomOps: graph, capture, gexec, and
// busyclose, which closes a stream and an event under goroutines that use
// them.

// captureOn captures what fn queues on rs in the given mode, through
// Capture or, when direct, BeginCapture and EndCapture (on a locked OS
// thread, but for some relaxed captures). It holds the test's capturing
// lock shared and rs's gate exclusively, and counts the capture in
// progress, in the program's count, the goroutine's own and rs's, for
// the oracle (randomOp.others, allowIsolation).
func (w *randomWorker) captureOn(rs *randomStream, mode CaptureMode, direct bool, fn func(s *Stream) error) (*Graph, error) {
	lock := mode != CaptureRelaxed || w.r.IntN(2) == 0
	w.capturing.RLock()
	defer w.capturing.RUnlock()
	rs.gate.Lock()
	defer rs.gate.Unlock()
	// The goroutine reads its own count only between its operations' calls
	// (its helpers not at all), so the two need not change at one instant.
	w.capCount.Add(capBegun)
	w.ownCaps.Add(capBegun)
	rs.caps.Add(capBegun)
	defer func() {
		rs.caps.Add(-1)
		w.ownCaps.Add(-1)
		w.capCount.Add(-1)
	}()
	if !direct {
		return Capture(rs.s, mode, func() error { return fn(rs.s) })
	}
	if lock {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	if err := rs.s.BeginCapture(mode); err != nil {
		return nil, err
	}
	ferr := fn(rs.s)
	g, err := rs.s.EndCapture()
	if ferr != nil {
		if err == nil {
			w.ok(w.on(0), g.Close(), "Graph.Close of a capture whose work failed")
		}
		return nil, errors.Join(ferr, err)
	}
	return g, err
}

// instantiate instantiates g with options drawn at random: each flag now
// and then, DeviceLaunch only for a graph without host nodes (CUDA
// launches no host node from the device) and not under compute-sanitizer
// ($HL_SANITIZER: memcheck deadlocks where device-launchable graphs are
// launched and destroyed on several threads, in a C program as well),
// Upload on a shared stream or the goroutine's own, holding its gate. It
// returns nil where the instantiation failed. gobj is g's Close, where
// another goroutine may close g (nil where the caller does).
func (w *randomWorker) instantiate(g *Graph, gobj *randomObj, hostNode bool) (*GraphExec, *InstantiateOptions) {
	var opts *InstantiateOptions
	var up *randomStream
	if w.r.IntN(4) != 0 {
		opts = &InstantiateOptions{
			AutoFreeOnLaunch: w.r.IntN(3) == 0,
			DeviceLaunch:     w.r.IntN(2) == 0 && !hostNode && os.Getenv("HL_SANITIZER") == "",
			UseNodePriority:  w.r.IntN(2) == 0,
		}
		if w.r.IntN(3) == 0 {
			up = w.anyStream()
			opts.Upload = up.s
		}
	}
	var allow randomAllow
	if opts != nil && opts.AutoFreeOnLaunch && opts.DeviceLaunch {
		allow = allowAutoFreeDevice
	}
	var x *GraphExec
	inst := func(*Stream) (err error) {
		x, err = g.Instantiate(opts)
		return err
	}
	var err error
	u := w.on(allow, gobj)
	if up != nil {
		u = w.on(allow, gobj, up.obj)
		err = up.queue(inst)
	} else {
		err = inst(nil)
	}
	flags := randomInstantiateFlags(opts)
	if !w.ok(u, err, "Graph.Instantiate with %s", flags) {
		return nil, nil
	}
	if allow != 0 {
		w.note("instantiate autofree+devicelaunch accepted")
	}
	for _, f := range strings.Split(flags, "+") {
		w.note("instantiate " + f)
	}
	return x, opts
}

func randomInstantiateFlags(o *InstantiateOptions) string {
	if o == nil {
		return "nil"
	}
	var f []string
	if o.AutoFreeOnLaunch {
		f = append(f, "autofree")
	}
	if o.Upload != nil {
		f = append(f, "upload")
	}
	if o.DeviceLaunch {
		f = append(f, "devicelaunch")
	}
	if o.UseNodePriority {
		f = append(f, "nodepriority")
	}
	if len(f) == 0 {
		return "none"
	}
	return strings.Join(f, "+")
}

// launched accounts for a launch of a graph with hostNodes host nodes,
// which u began: it reports whether the launch was queued, and whether,
// having failed with another error than ErrClosed, it may have run.
func (w *randomWorker) launched(u randomUse, err error, hostNodes int, format string, args ...any) (ok, maybe bool) {
	u.allow |= allowLaunchUnknown
	if w.ok(u, err, format, args...) {
		w.note("graphs launched")
		w.hostWant.Add(int64(hostNodes))
		return true, false
	}
	if errors.Is(err, ErrClosed) {
		return false, false
	}
	w.hostMaybe.Add(int64(hostNodes))
	return false, true
}

// graph captures a fill of a span of one of the goroutine's allocations,
// and maybe a host function, on its own stream in relaxed mode, launches
// the graph on a shared stream and closes it, before the launch is done or
// after; the memory lives on after the op, the graph does not. One time in
// two it builds the graph node by node instead (built).
func (w *randomWorker) graph() {
	a := w.pick()
	if a == nil {
		return
	}
	w.reached()
	if w.r.IntN(2) == 0 {
		w.built(a)
		return
	}
	i, j := w.span(a)
	v := w.r.Uint32()
	hostNode := w.r.IntN(4) != 0
	// Nothing of the goroutine's own spoils a relaxed capture of its own
	// stream: it may fail only where another goroutine's capture in
	// CaptureGlobal mode refuses it (ErrCapturing).
	u := w.on(0)
	g, err := w.captureOn(w.own, CaptureRelaxed, w.r.IntN(3) == 0, func(s *Stream) error {
		if err := w.fill.Launch(s, randomGrid(j-i), a.arg(i, j), v, int32(j-i)); err != nil {
			return err
		}
		if hostNode {
			return s.LaunchHostFunc(func() { w.hostRan.Add(1) })
		}
		return nil
	})
	if !w.ok(u, err, "Capture on the goroutine's own stream") {
		return
	}
	w.note("capture own ok")
	w.launchAndClose(g, hostNode, false, nil, func(ok, maybe, settled bool) {
		// CUDA does not say whether a failed launch ran.
		a.modelWrite(i, j, v, "a graph", ok, maybe, settled)
	})
}

// launchAndClose instantiates g (with DeviceLaunch now and then, but for
// a graph with a host node or where noDevice), calls before, where it is
// not nil, with the instantiation, launches it on a stream (a shared one,
// holding its gate, or the goroutine's own), closes the graph and its
// instantiation, before the launch is done or after it, waits for the
// stream, and tells model how that went: whether the launch was queued,
// may have run though it failed, and was waited for.
func (w *randomWorker) launchAndClose(g *Graph, hostNode, noDevice bool, before func(*GraphExec), model func(ok, maybe, settled bool)) {
	x, opts := w.instantiate(g, nil, hostNode || noDevice)
	if x == nil {
		w.ok(w.on(0), g.Close(), "Graph.Close")
		return
	}
	if before != nil {
		before(x)
	}
	var allow randomAllow
	if opts != nil && opts.DeviceLaunch {
		allow = allowDeviceLaunch
	}
	hostNodes := 0
	if hostNode {
		hostNodes = 1
	}
	rs := w.anyStream()
	u := w.on(allow, rs.obj)
	err := rs.queue(func(s *Stream) error { return x.Launch(s) })
	ok, maybe := w.launched(u, err, hostNodes, "GraphExec.Launch on %s", rs.what)
	closeGraph := func() {
		if w.r.IntN(2) == 0 {
			w.ok(w.on(0), x.Close(), "GraphExec.Close")
			w.ok(w.on(0), g.Close(), "Graph.Close")
		} else {
			w.ok(w.on(0), g.Close(), "Graph.Close")
			w.ok(w.on(0), x.Close(), "GraphExec.Close")
		}
	}
	early := w.r.IntN(2) == 0
	if early {
		closeGraph()
	}
	settled := w.settle(rs)
	if !early {
		closeGraph()
	}
	model(ok, maybe, settled)
}

// A randomWrite is what a node of a built graph writes: words i to j-1
// of an allocation, all v.
type randomWrite struct {
	i, j int
	v    uint32
	how  string
}

// built builds, node by node, a graph that writes a span of a, and
// launches it as graph launches a captured one (launchAndClose), one time
// in four after a was freed or dropped, which the graph and its
// instantiation hold: a memset node of the span (but in managed memory),
// then a kernel node that fills part of it. One time in three the fill's
// value is changed with GraphExec.SetKernelArgs once the graph is
// instantiated; one time in four, where the driver has conditional nodes,
// a fill of the part's first word with 0 and a while node, whose body
// counts there to a limit, come after instead. A launch that works writes
// what the nodes say, in their order.
func (w *randomWorker) built(a *randomMem) {
	i, j := w.span(a)
	i2 := i + w.r.IntN(j-i)
	j2 := i2 + 1 + w.r.IntN(j-i2)
	v0, v, v2 := w.r.Uint32(), w.r.Uint32(), w.r.Uint32()
	limit := uint32(1 + w.r.IntN(32))
	// The while node is drawn, but added only with HL_RANDOM_WHILE=1: on
	// driver 580.159.04 a while node fails, with CUDA_ERROR_LAUNCH_FAILED,
	// while kernels run on other streams, as the other operations' do
	// here (docs/graphs.md, testdata/whilefault.c).
	loop := w.r.IntN(4) == 0 && os.Getenv("HL_RANDOM_WHILE") == "1"
	update := !loop && w.r.IntN(3) == 0
	freeFirst := w.r.IntN(4) == 0
	var count *Kernel
	if loop {
		if count = w.loopKernel(); count == nil {
			loop = false
		}
	}
	g, err := NewGraph(w.d)
	if !w.ok(w.on(0), err, "NewGraph") {
		return
	}
	// add reports whether the node was added; where not, it closes g. The
	// nodes name only what the goroutine owns: nothing explains an error
	// but another goroutine's capture in CaptureGlobal mode.
	add := func(err error, format string, args ...any) bool {
		if w.ok(w.on(0), err, format, args...) {
			return true
		}
		w.ok(w.on(0), g.Close(), "Graph.Close")
		return false
	}
	var writes []randomWrite
	var deps []GraphNode
	if !a.managed {
		view, err := ArrayOf[uint32](a.at(i), j-i)
		if !add(err, "ArrayOf of words %d..%d of %s", i, j-1, a.describe()) {
			return
		}
		m, err := AddMemset(g, nil, view, v0)
		if !add(err, "AddMemset of words %d..%d of %s", i, j-1, a.describe()) {
			return
		}
		deps = []GraphNode{m}
		writes = append(writes, randomWrite{i, j, v0, "memset node"})
	}
	fill, err := g.AddKernel(deps, w.fill, randomGrid(j2-i2), a.arg(i2, j2), v, int32(j2-i2))
	if !add(err, "AddKernel of fill on words %d..%d of %s", i2, j2-1, a.describe()) {
		return
	}
	filled := len(writes)
	writes = append(writes, randomWrite{i2, j2, v, "kernel node"})
	if loop {
		zero, err := g.AddKernel([]GraphNode{fill}, w.fill, randomGrid(1), a.arg(i2, i2+1), uint32(0), int32(1))
		if !add(err, "AddKernel of fill on word %d of %s", i2, a.describe()) {
			return
		}
		c, err := g.NewConditional(1, true)
		if !add(err, "NewConditional") {
			return
		}
		_, body, err := g.AddWhile([]GraphNode{zero}, c)
		if !add(err, "AddWhile") {
			return
		}
		one := LaunchConfig{Grid: Dim3{X: 1}, Block: Dim3{X: 1}}
		if _, err := body.AddKernel(nil, count, one, a.arg(i2, i2+1), limit, c); !add(err, "AddKernel of count to a while node's body") {
			return
		}
		writes = append(writes, randomWrite{i2, i2 + 1, limit, "while node"})
		w.note("built graphs with a while node")
	}
	w.note("built graphs")
	before := func(x *GraphExec) {
		if update {
			err := x.SetKernelArgs(fill, w.fill, randomGrid(j2-i2), a.arg(i2, j2), v2, int32(j2-i2))
			if w.ok(w.on(0), err, "GraphExec.SetKernelArgs of a fill node") {
				writes[filled].v = v2
				w.note("built graphs updated")
			}
		}
		if freeFirst {
			w.note("built graph launched after its memory was freed or dropped")
			w.discard(a) // the graph and its instantiation hold it
		}
	}
	w.launchAndClose(g, false, loop || update, before, func(ok, maybe, settled bool) {
		if ok {
			w.note("built graphs launched")
		}
		if freeFirst {
			return
		}
		// A launch that failed may have run some of the nodes, in their
		// order: each word holds what it held or what one of them wrote;
		// the count of a while node, any number up to its limit.
		for _, wr := range writes {
			a.modelWrite(wr.i, wr.j, wr.v, "a built graph's "+wr.how, ok, maybe, settled)
		}
		if loop && !ok && maybe {
			a.forget(i2, i2+1)
		}
	})
}

// randomLoopSource is the kernel of built's while nodes: it counts the
// runs of the body in *n and sets the node's condition to go on below
// limit.
const randomLoopSource = `
#include <cuda_device_runtime_api.h>
extern "C" __global__ void count(unsigned *n, unsigned limit, cudaGraphConditionalHandle h) {
	unsigned c = ++*n;
	cudaGraphSetConditional(h, c < limit);
}
`

// randomLoop is randomLoopSource's kernel, compiled with the CUDA
// toolkit's headers ($CUDA_HOME/include, else /usr/local/cuda/include) and
// loaded at its first use, for the rest of the process; nil where the
// driver has no conditional nodes (CUDA 12.3) or it could not be made.
var randomLoop struct {
	once sync.Once
	k    *Kernel
}

// loopKernel returns randomLoop's kernel, or nil.
func (w *randomWorker) loopKernel() *Kernel {
	randomLoop.once.Do(func() {
		if v, err := DriverVersion(); !w.ok(w.on(0), err, "DriverVersion") || v < 12030 {
			return
		}
		// As before the first capture: CUDA loads a kernel into the device
		// at its first use, which a strict capture refuses on its thread.
		w.capturing.Lock()
		defer w.capturing.Unlock()
		include := "/usr/local/cuda/include"
		if h := os.Getenv("CUDA_HOME"); h != "" {
			include = h + "/include"
		}
		c, err := Compile(randomLoopSource, &CompileOptions{Name: "randomloop.cu", IncludePaths: []string{include}})
		if !w.ok(w.on(0), err, "Compile of the while nodes' kernel, with the headers of %s", include) {
			return
		}
		m, err := LoadModule(c.Image)
		if !w.ok(w.on(0), err, "LoadModule of the while nodes' kernel") {
			return
		}
		k, err := m.Kernel("count")
		if !w.ok(w.on(0), err, "Module.Kernel") {
			return
		}
		// An occupancy query loads it into the device, as a launch would.
		if _, err := k.MaxActiveBlocksPerSM(w.d, 1, 0); !w.ok(w.on(0), err, "MaxActiveBlocksPerSM") {
			return
		}
		randomLoop.k = k
	})
	return randomLoop.k
}

// capture captures, in a mode drawn at random, on a shared stream (which
// the others use, wait for and close meanwhile, and which may be the
// legacy default stream, which CUDA cannot capture) or the goroutine's
// own: a fill of a span of one of the goroutine's allocations; maybe a
// fill of another on the goroutine's second stream, forked from the
// capture with an event and joined back, or, one time in eight, left
// unjoined; maybe a call the strict modes refuse (cuMemAlloc, a synchronous
// copy) or every mode refuses (a query of the capturing stream); in a
// strict mode, maybe an EndCapture from another OS thread, which the shim
// refuses without ending the capture; and a host function. A capture that
// fails leaves the memory as it was: CUDA ran nothing of it. One that
// works is launched as graph launches, one time in four after the memory
// it writes was freed or dropped: the graph holds it, and writes no memory
// handed out again.
//
// The draws that must spoil the capture, by the package's code: the legacy
// default stream (the shim refuses BeginCapture on it); Query of the
// capturing stream (the package refuses it, ErrCapturing); a synchronous
// copy (on the legacy default stream, which the shim refuses while any
// capture is in progress, ErrCapturing); cuMemAlloc in CaptureGlobal mode
// (the shim refuses it, ErrCapturing) or CaptureThreadLocal mode (CUDA
// refuses it on the capturing thread, to which the goroutine is locked);
// a fork left unjoined (CUDA_ERROR_STREAM_CAPTURE_UNJOINED at the end).
// Nothing else may make it fail but another goroutine's Close of its
// stream (ErrClosed, and the fork left unjoined) or capture in
// CaptureGlobal mode (ErrCapturing).
func (w *randomWorker) capture() {
	a := w.pick()
	if a == nil {
		return
	}
	w.reached()
	mode := CaptureMode(w.r.IntN(3))
	rs := w.own
	if w.r.IntN(4) != 0 {
		rs = w.stream()
	}
	allow := allowCaptureStatus
	if rs.legacy {
		allow |= allowLegacyCapture
	}
	i, j := w.span(a)
	v := w.r.Uint32()
	var b *randomMem
	var bi, bj int
	var bv uint32
	if w.r.IntN(3) == 0 {
		if c := w.pick(); c.p.Memory() != a.p.Memory() {
			b = c
			bi, bj = w.span(b)
			bv = w.r.Uint32()
		}
	}
	join := w.r.IntN(8) != 0
	refuse := w.r.IntN(6)
	wrong := mode != CaptureRelaxed && w.r.IntN(6) == 0
	direct := w.r.IntN(3) == 0
	hostNode := w.r.IntN(4) != 0
	freeFirst := w.r.IntN(4) == 0

	var must []string
	if rs.legacy {
		must = append(must, "BeginCapture on the legacy default stream")
	}
	switch {
	case refuse == 3 && mode != CaptureRelaxed:
		must = append(must, fmt.Sprintf("cuMemAlloc during a capture in %v mode", mode))
	case refuse == 4:
		must = append(must, "Query of the capturing stream")
	case refuse == 5:
		must = append(must, "a synchronous copy, on the legacy default stream, during a capture")
	}
	if b != nil && !join {
		must = append(must, "a fork left unjoined")
	}
	u := w.on(allow, rs.obj)
	if len(must) > 0 {
		u = u.mustFail(strings.Join(must, "; "))
	}

	var extra []MemoryPointer // allocated in the capture, where the mode allows it
	var events []*Event       // of the fork, closed after the capture
	forked := false
	g, err := w.captureOn(rs, mode, direct, func(s *Stream) error {
		if err := w.fill.Launch(s, randomGrid(j-i), a.arg(i, j), v, int32(j-i)); err != nil {
			return err
		}
		if b != nil {
			forked = true
			e, err := s.recordNew(nil)
			if err != nil {
				return err
			}
			events = append(events, e)
			f := w.own2.s
			if err := f.WaitEvent(e); err != nil {
				return fmt.Errorf("%w (%s)", err, randomCaptureStates(w.d, e, s, f))
			}
			if err := w.fill.Launch(f, randomGrid(bj-bi), b.arg(bi, bj), bv, int32(bj-bi)); err != nil {
				return err
			}
			if join {
				e, err := f.recordNew(nil)
				if err != nil {
					return err
				}
				events = append(events, e)
				if err := s.WaitEvent(e); err != nil {
					return err
				}
			}
		}
		switch refuse {
		case 3: // refused on the capturing thread in the strict modes
			p, err := w.d.Alloc(4096)
			if err != nil {
				return err
			}
			extra = append(extra, p)
		case 4: // refused in every mode
			if _, err := s.Query(); err != nil {
				return err
			}
		case 5: // a synchronous copy: refused in the strict modes, and implicit where s is blocking
			var x uint32
			if err := a.at(i).CopyToHostPointer(unsafe.Pointer(&x), 4); err != nil {
				return err
			}
		}
		if wrong {
			w.endFromAnotherThread(rs, mode)
		}
		if hostNode {
			return s.LaunchHostFunc(func() { w.hostRan.Add(1) })
		}
		return nil
	})
	for _, e := range events {
		w.ok(w.on(0), e.Close(), "Event.Close of a fork's event")
	}
	if forked && (err != nil || !join) {
		// The second stream took part in a capture that failed; start
		// afresh rather than depend on what CUDA left of its state.
		w.replaceOwn2()
	}
	outcome := "ok"
	if err != nil {
		outcome = "failed"
	}
	w.note(fmt.Sprintf("capture %v %s", mode, outcome))
	defer func() {
		for _, p := range extra {
			w.ok(w.on(0), p.Memory().free(), "Free of memory allocated during a capture")
		}
	}()
	if !w.ok(u, err, "capture in %v mode on %s (direct %v, fork %v joined %v, refuse %d, wrong thread %v)",
		mode, rs.what, direct, forked, join, refuse, wrong) {
		if u.must != "" && err != nil {
			w.note("capture refusals required")
		}
		return
	}
	w.note("capture ok")
	if freeFirst {
		w.note("graph launched after its memory was freed or dropped")
		w.discard(a)
		if b != nil {
			w.discard(b)
		}
	}
	w.launchAndClose(g, hostNode, false, nil, func(ok, maybe, settled bool) {
		if ok {
			w.note("captured graphs launched")
		}
		if freeFirst {
			return
		}
		a.modelWrite(i, j, v, fmt.Sprintf("a graph captured in %v mode", mode), ok, maybe, settled)
		if b != nil {
			b.modelWrite(bi, bj, bv, fmt.Sprintf("a fork of a graph captured in %v mode", mode), ok, maybe, settled)
		}
	})
}

// endFromAnotherThread calls EndCapture on rs from another OS thread than
// the one that began the strict capture: the shim refuses it with
// CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD without calling CUDA, and the
// capture goes on. Where another goroutine closed rs meanwhile,
// EndCapture answers ErrClosed (with the refusal, where Close left the
// capture to it).
func (w *randomWorker) endFromAnotherThread(rs *randomStream, mode CaptureMode) {
	o := w.helper(0)
	done := make(chan error)
	go func() {
		runtime.LockOSThread() // a thread other than the capturing one, which is locked
		defer runtime.UnlockOSThread()
		g, err := rs.s.EndCapture()
		if err == nil {
			g.Close()
			o.fail("EndCapture from another OS thread than BeginCapture's succeeded in %v mode", mode)
		}
		done <- err
	}()
	switch err := <-done; {
	case err == nil:
	case errors.Is(err, ErrClosed) && rs.obj.state.Load() != randomOpen:
		w.note("capture ended from the wrong thread: its stream closed")
	case errors.Is(err, cudadrv.ERROR_STREAM_CAPTURE_WRONG_THREAD) && len(randomtest.Parts(err)) == 1:
		w.note("capture ended from the wrong thread: refused")
	default:
		o.fail("EndCapture from another OS thread in %v mode: %v, want CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD", mode, err)
	}
}

// replaceOwn2 replaces the goroutine's second stream.
func (w *randomWorker) replaceOwn2() {
	s, err := NewStream(w.d, &StreamOptions{NonBlocking: true, Priority: -1})
	if !w.ok(w.on(0), err, "NewStream") {
		return
	}
	old := w.own2
	w.own2 = newRandomStream(s, "the goroutine's second stream", false)
	w.ok(w.on(0), old.obj.closeWith(old.s.Close), "Stream.Close of the goroutine's second stream after a failed capture")
}

// sharedGraph captures, on the goroutine's own stream in a mode drawn at
// random, a fill of all of tg and a host node (shape 0) or a memset of its
// first 256 words (shape 1, which has no host node and so may be launched
// from the device). tg allows the values first.
func (w *randomWorker) sharedGraph(tg *randomTarget, shape int) *Graph {
	v, b := w.r.Uint32(), byte(w.r.Uint32())
	tg.allow(v)
	if shape == 1 {
		tg.allow(uint32(b) * 0x01010101)
	}
	mode := CaptureMode(w.r.IntN(3))
	g, err := w.captureOn(w.own, mode, w.r.IntN(3) == 0, func(s *Stream) error {
		if err := w.fill.Launch(s, randomGrid(tg.n), tg.p, v, int32(tg.n)); err != nil {
			return err
		}
		if shape == 0 {
			return s.LaunchHostFunc(func() { w.hostRan.Add(1) })
		}
		return tg.p.MemsetAsync(s, b, 1024)
	})
	if !w.ok(w.on(0), err, "capture of a shared graph of shape %d in %v mode", shape, mode) {
		return nil
	}
	return g
}

// newExec makes a shared GraphExec of a graph drawn at random.
func (w *randomWorker) newExec() *randomExec {
	tg := w.targets[w.r.IntN(len(w.targets))]
	shape := w.r.IntN(2)
	g := w.sharedGraph(tg, shape)
	if g == nil {
		return nil
	}
	x, opts := w.instantiate(g, nil, shape == 0)
	// The instantiation stays usable.
	w.ok(w.on(0), g.Close(), "Graph.Close of a shared graph")
	if x == nil {
		return nil
	}
	return &randomExec{x: x, shape: shape, device: opts != nil && opts.DeviceLaunch, target: tg,
		obj: newRandomObj("a shared GraphExec", ErrClosed)}
}

// gexec works on the GraphExecs the goroutines share: launches one on a
// stream (shared or its own; uploaded first now and then), updates one (with a graph of its shape, or,
// one time in four, of the other, which CUDA refuses), replaces one with a
// new instantiation and closes the old, closes one, or checks a target the
// graphs write. Each of these meets the others' launches, updates and
// closes of the same GraphExec.
func (w *randomWorker) gexec() {
	w.reached()
	slot, ex := pick(w, w.execs)
	act := w.r.IntN(10)
	if ex == nil && act < 8 {
		act = 6
	}
	switch {
	case act < 4:
		rs := w.anyStream()
		var allow randomAllow
		if ex.device {
			allow = allowDeviceLaunch
		}
		upload := w.r.IntN(4) == 0
		u := w.on(allow, ex.obj, rs.obj)
		err := rs.queue(func(s *Stream) error {
			if upload {
				if err := ex.x.Upload(s); err != nil {
					return err
				}
			}
			err := ex.x.Launch(s)
			if errors.Is(err, cudadrv.ERROR_UNKNOWN) {
				// For the message of a failure: a launch on a 4xH200 host
				// once got CUDA_ERROR_UNKNOWN while a capture was in
				// progress (seed 94, 2026-11-27), and passed in 60 runs of
				// that seed on 2xH200.
				err = fmt.Errorf("%w (%s)", err, captureStatus(s))
			}
			return err
		})
		if ok, _ := w.launched(u, err, 1-ex.shape, "Launch of a shared GraphExec (shape %d, device %v, uploaded first %v) on %s",
			ex.shape, ex.device, upload, rs.what); ok {
			w.note("gexec launches")
		}
	case act < 6:
		shape := ex.shape
		if w.r.IntN(4) == 0 {
			shape = 1 - shape
		}
		g := w.sharedGraph(ex.target, shape)
		if g == nil {
			return
		}
		var allow randomAllow
		if shape != ex.shape {
			allow |= allowUpdateShape
		}
		if ex.device {
			allow |= allowDeviceLaunch
		}
		u := w.on(allow, ex.obj)
		if shape != ex.shape {
			u = u.mustFail(fmt.Sprintf("GraphExec.Update from shape %d to shape %d (a host node to a memset node)", ex.shape, shape))
		}
		if w.ok(u, ex.x.Update(g), "GraphExec.Update of a shared GraphExec of shape %d (device %v) to shape %d", ex.shape, ex.device, shape) {
			w.note("gexec updates")
		}
		w.ok(w.on(0), g.Close(), "Graph.Close of an update's graph")
	case act < 8:
		nx := w.newExec()
		if nx == nil {
			return
		}
		w.mu.Lock()
		old := w.execs[slot]
		w.execs[slot] = nx
		w.mu.Unlock()
		if old != nil {
			w.ok(w.on(0), old.obj.closeWith(old.x.Close), "GraphExec.Close of a replaced shared GraphExec")
		}
		w.note("gexec replaced")
	case act == 8:
		w.mu.Lock()
		old := w.execs[slot]
		w.execs[slot] = nil
		w.mu.Unlock()
		if old != nil {
			w.ok(w.on(0), old.obj.closeWith(old.x.Close), "GraphExec.Close of a shared GraphExec")
			w.note("gexec closed")
		}
	default:
		tg := w.targets[w.r.IntN(len(w.targets))]
		w.ok(w.on(0), w.verifyTarget(tg, w.fail), "CopyToHost of a shared graphs' target")
	}
}

// pick draws a slot of shared (w.execs, w.srcs) and returns it with what it
// holds, nil for nothing.
func pick[T any](w *randomWorker, shared []*T) (int, *T) {
	slot := w.r.IntN(len(shared))
	w.mu.Lock()
	defer w.mu.Unlock()
	return slot, shared[slot]
}

// A randomSource is a Graph the goroutines share (sources).
type randomSource struct {
	g      *Graph
	shape  int
	target *randomTarget
	obj    *randomObj
}

// sources works on the Graphs the goroutines share: instantiates one,
// launches the instantiation on a stream and closes it at once (Upload on
// instantiation now and then), updates a shared GraphExec from one, or
// replaces one with a new graph and closes the old. Each meets the others'
// instantiations, updates and closes of GraphExecs of the same Graph, where
// driver 580 crashed in cuGraphExecDestroy (TestGPUGraphExecConcurrent).
func (w *randomWorker) sources() {
	w.reached()
	slot, src := pick(w, w.srcs)
	act := w.r.IntN(8)
	switch {
	case src == nil || act == 7:
		tg := w.targets[w.r.IntN(len(w.targets))]
		shape := w.r.IntN(2)
		g := w.sharedGraph(tg, shape)
		if g == nil {
			return
		}
		w.mu.Lock()
		old := w.srcs[slot]
		w.srcs[slot] = &randomSource{g: g, shape: shape, target: tg, obj: newRandomObj("a shared source graph", ErrClosed)}
		w.mu.Unlock()
		if old != nil {
			w.ok(w.on(0), old.obj.closeWith(old.g.Close), "Graph.Close of a replaced shared source graph")
		}
		w.note("sources replaced")
	case act < 5:
		x, opts := w.instantiate(src.g, src.obj, src.shape == 0)
		if x == nil {
			return
		}
		device := opts != nil && opts.DeviceLaunch
		var allow randomAllow
		if device {
			allow = allowDeviceLaunch
		}
		rs := w.anyStream()
		u := w.on(allow, rs.obj)
		err := rs.queue(func(s *Stream) error { return x.Launch(s) })
		if ok, _ := w.launched(u, err, 1-src.shape, "Launch of an instantiation of a shared source graph (shape %d, device %v) on %s",
			src.shape, device, rs.what); ok {
			w.note("sources launched and closed")
		}
		w.ok(w.on(0), x.Close(), "GraphExec.Close of an instantiation of a shared source graph")
	default:
		_, ex := pick(w, w.execs)
		if ex == nil || ex.target != src.target { // a target's values are its graphs'
			return
		}
		var allow randomAllow
		if src.shape != ex.shape {
			allow |= allowUpdateShape
		}
		if ex.device {
			allow |= allowDeviceLaunch
		}
		u := w.on(allow, ex.obj, src.obj)
		if src.shape != ex.shape {
			u = u.mustFail(fmt.Sprintf("GraphExec.Update from shape %d to shape %d (a host node to a memset node)", ex.shape, src.shape))
		}
		if w.ok(u, ex.x.Update(src.g), "GraphExec.Update of a shared GraphExec of shape %d (device %v) from a shared source graph of shape %d",
			ex.shape, ex.device, src.shape) {
			w.note("sources updated a shared GraphExec")
		}
	}
}

// busyClose makes a stream and an event, has two to four helper goroutines
// queue memsets, kernels, host functions, callbacks, records, waits and
// queries on them, and closes both while they do: every operation works
// or returns ErrClosed, which it must once the Close of what it uses has
// returned; every host function queued runs.
func (w *randomWorker) busyClose() {
	w.reached()
	nonBlocking := w.r.IntN(2) == 0
	s, err := NewStream(w.d, &StreamOptions{NonBlocking: nonBlocking})
	if !w.ok(w.on(0), err, "NewStream") {
		return
	}
	e, err := NewEvent(w.d, &EventOptions{DisableTiming: w.r.IntN(2) == 0, Blocking: w.r.IntN(2) == 0})
	if !w.ok(w.on(0), err, "NewEvent") {
		w.ok(w.on(0), s.Close(), "Stream.Close")
		return
	}
	so, eo := newRandomObj("a busy stream", ErrClosed), newRandomObj("a busy event", ErrClosed)
	var wg sync.WaitGroup
	for h := range 2 + w.r.IntN(3) {
		o := w.helper(h)
		r := rand.New(rand.NewPCG(w.r.Uint64(), uint64(h)))
		steps := 4 + r.IntN(16)
		wg.Go(func() {
			for range steps {
				w.busyStep(o, r, s, e, so, eo)
			}
		})
	}
	for range w.r.IntN(64) {
		runtime.Gosched()
	}
	closeS := func() bool { return w.ok(w.on(0), so.closeWith(s.Close), "Stream.Close of a busy stream") }
	closeE := func() bool { return w.ok(w.on(0), eo.closeWith(e.Close), "Event.Close of a busy event") }
	var sok, eok bool
	switch w.r.IntN(3) {
	case 0:
		sok = closeS()
		eok = closeE()
	case 1:
		eok = closeE()
		sok = closeS()
	case 2:
		var cw sync.WaitGroup
		cw.Go(func() { sok = closeS() })
		eok = closeE()
		cw.Wait()
	}
	wg.Wait()
	if sok && eok {
		w.note("busy streams closed")
	}
}

// busyStep is one operation of a busyClose helper on s and e, whose Closes
// so and eo follow.
func (w *randomWorker) busyStep(o *randomOp, r *rand.Rand, s *Stream, e *Event, so, eo *randomObj) {
	ctx, cancel := context.WithTimeout(context.Background(), randomWait)
	defer cancel()
	n := 1 + r.IntN(1<<16)
	var err error
	var how string
	u := o.on(0, so) // the calls on s alone
	switch r.IntN(14) {
	case 0:
		how, err = "MemsetAsync", w.scratch.MemsetAsync(s, byte(r.Uint32()), 4*n)
	case 1:
		how, err = "Launch", w.fill.Launch(s, randomGrid(n), w.scratch, r.Uint32(), int32(n))
	case 2:
		how, err = "LaunchHostFunc", s.LaunchHostFunc(func() { w.hostRan.Add(1) })
		w.countHost(err)
	case 3:
		how, err = "AddCallback", s.AddCallback(func(error) { w.hostRan.Add(1) })
		w.countHost(err)
	case 4:
		u = o.on(0, so, eo)
		how, err = "Event.Record", e.Record(s)
	case 5:
		u = o.on(0, so, eo)
		how, err = "Stream.WaitEvent", s.WaitEvent(e)
	case 6:
		how = "Stream.Query"
		_, err = s.Query()
	case 7:
		u = o.on(0, eo)
		how = "Event.Query"
		_, err = e.Query()
	case 8:
		how, err = "Stream.Wait", s.Wait(ctx)
	case 9:
		u = o.on(0, eo)
		how, err = "Event.Wait", e.Wait(ctx)
	case 10:
		how = "Stream.Done, then Err"
		select {
		case <-s.Done():
			err = s.Err() // ErrClosed where Done began after Close
		case <-ctx.Done():
			o.fail("Stream.Done of a stream being closed not closed after %v", randomWait)
		}
	case 11:
		u = o.on(0, eo)
		how = "Event.Done, then Err"
		select {
		case <-e.Done():
			err = e.Err()
		case <-ctx.Done():
			o.fail("Event.Done of an event being closed not closed after %v", randomWait)
		}
	case 12:
		how = "Event.Record of a new event"
		var x *Event
		if x, err = s.recordNew(nil); err == nil {
			err = x.Close()
		}
	case 13:
		how = "Synchronize"
		if r.IntN(2) == 0 {
			err = s.Synchronize()
		} else {
			u = o.on(0, eo)
			err = e.Synchronize()
		}
	}
	o.ok(u, err, "%s on a stream or event being closed", how)
}

// countHost counts a host function or callback queued, or maybe queued.
func (w *randomWorker) countHost(err error) {
	switch {
	case err == nil:
		w.hostWant.Add(1)
	case !errors.Is(err, ErrClosed):
		w.hostMaybe.Add(1)
	}
}

// randomCaptureStates tells, for an error, what CUDA and the package say
// of the captures of streams and an event.
func randomCaptureStates(d Device, e *Event, streams ...*Stream) string {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := d.Use(); err != nil {
		return err.Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "event recorded in a capture: %v", e.capture.Load() != nil)
	for i, s := range streams {
		var st cudadrv.StreamCaptureStatus
		err := cudadrv.StreamIsCapturing(cudadrv.Stream(s.Handle()), &st)
		s.joins.RLock()
		in, same := s.inCapture(), s.capture != nil && s.capture == e.capture.Load()
		s.joins.RUnlock()
		fmt.Fprintf(&b, "; stream %d: CUDA %v %v, in a capture %v, the event's %v", i, st, err, in, same)
	}
	fmt.Fprintf(&b, "; package captures %d", captures.Load())
	return b.String()
}

// captureStatus says what CUDA reports of the capture of s, a stream of
// the package's own: the default streams are asked nothing, since a query
// of the legacy one races a capture in the driver (see the shim's gate).
func captureStatus(s *Stream) string {
	h, err := s.use()
	if err != nil {
		return fmt.Sprintf("capture status not asked: %v", err)
	}
	defer s.life.Release()
	if !s.owned {
		return "capture status not asked of a stream the package did not make"
	}
	var st cudadrv.StreamCaptureStatus
	err = s.Device().Do(func() error { return cudadrv.StreamIsCapturing(cudadrv.Stream(h), &st) })
	if err != nil {
		return fmt.Sprintf("cuStreamIsCapturing: %v", err)
	}
	return fmt.Sprintf("CUDA's capture status of the stream now: %v", st)
}
