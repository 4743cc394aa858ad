package highlevel

import (
	"cmp"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gocuda/cuda/cudadrv"

	"github.com/gocuda/cuda/highlevel/internal/driver"
)

// A Graph is CUDA work captured from a stream (Capture, or
// Stream.BeginCapture and Stream.EndCapture) or built node by node
// (NewGraph), to be instantiated and launched as a whole. The Go functions of its host nodes
// (Stream.LaunchHostFunc during the capture) belong to CUDA user objects of
// the graph: they live until the graph, its instantiations and all their
// launches are gone, whatever is closed or updated meanwhile.
//
// A Graph, and each of its instantiations, holds the device memory its
// work names, captured or added (copies, memsets, kernel arguments,
// prefetches, linalg's calls, launches of other graphs) and the Modules
// whose kernels it launches: Free of such memory, or Close of such a
// module, makes it unusable at once, and gives it back once the last Graph
// and GraphExec that use it are closed and their launches have run, as for
// memory dropped without Free. Host memory is not held: a capture refuses copies
// with pageable (Go) memory, which the graph would copy at each launch,
// with ErrCapturing, and pinned memory a graph copies must stay allocated
// while the graph may be launched.
//
// The zero value is not usable: make one with Capture, Stream.EndCapture
// or NewGraph; its methods return an error wrapping ErrNil.
type Graph struct {
	h    cudadrv.Graph
	dev  Device
	ctx  unsafe.Pointer // nil in a zero Graph
	life life
	// mu serializes the calls on the graph: CUDA's graph objects are not
	// safe for concurrent use.
	mu sync.Mutex
	// held is what the graph's work uses, memory and modules, which it
	// holds until Close (holder); heldSet, made by the first node added
	// (keep), is the same for looking up.
	held    []holder
	heldSet map[holder]struct{}
	// parent is, for the body of a conditional node, the graph the node
	// is in: its top (Graph.top) holds the life, the lock and the holds
	// of every body in it.
	parent *Graph
	// into is set while Graph.Capture captures into the graph: its other
	// methods refuse, as CUDA changes it meanwhile.
	into atomic.Bool
	// panics, made by the first AddHost, routes the panics of its host
	// nodes' functions (hostPanics); it is among held, and mu guards it.
	panics *hostPanics
	// mem, made by the first AddAlloc, checks the uses of its allocation
	// nodes' memory (graphmem.go); mu guards it.
	mem *graphMemory
	// scratch is where the nodes added to the graph and its bodies
	// (graphbuild.go) pass their dependencies, the node made and a kernel
	// node's parameters to C, so that adding a node allocates nothing;
	// mu guards it.
	scratch struct {
		deps   []uintptr
		made   uintptr
		kernel kernelNode
		recent [2]holder // the holders kept last, held already
	}
}

// A GraphExec is an instantiated Graph, ready to launch (CuPy's Graph). It
// is safe for use by several goroutines: its launches, uploads and updates
// take turns, as CUDA requires.
//
// The zero value is not usable: make one with Graph.Instantiate; its
// methods return an error wrapping ErrNil.
type GraphExec struct {
	h    cudadrv.GraphExec
	dev  Device
	ctx  unsafe.Pointer // nil in a zero GraphExec
	life life
	mu   sync.Mutex // as Graph's; guards held and kernel too
	held []holder   // as Graph's
	// turns, for a graph with conditional nodes, orders its launches with
	// the device's others (condTurns); panics are where its host nodes'
	// functions report theirs (Graph.AddHost). Both are among held; x.mu
	// guards them.
	turns  *condTurns
	panics []*hostPanics
	// mem is set for a graph with allocation nodes (AddAlloc), which a
	// capture cannot take: among held is its graphMemory.
	mem bool
	// records are the events its record nodes record, as recordedEvents
	// among held: each launch counts a record of them.
	records []*Event
	// kernel is SetKernelArgs's scratch, as a Graph's.
	kernel kernelNode
}

// A CaptureMode says which CUDA calls a stream capture refuses while it
// runs (CUstreamCaptureMode): calls that are potentially unsafe during a
// capture, such as cuMemAlloc, which may synchronize the device. The zero
// value is CaptureRelaxed.
type CaptureMode int

const (
	// CaptureRelaxed refuses nothing (CU_STREAM_CAPTURE_MODE_RELAXED). It
	// suits Go best: goroutines move between OS threads, and the
	// package's waiter queries events while a capture runs.
	CaptureRelaxed CaptureMode = iota // relaxed
	// CaptureGlobal refuses potentially unsafe calls on every OS thread of
	// the process while the capture runs (CU_STREAM_CAPTURE_MODE_GLOBAL),
	// catching work of other goroutines that would spoil it. Begin and end
	// the capture on one OS thread (Capture does). Driver 580 crashes
	// where other threads' calls race a global capture, so the package
	// captures in CUDA's thread-local mode, which refuses the unsafe calls
	// on the capturing thread, and refuses them on every other goroutine
	// itself, with ErrCapturing: allocation and freeing, copies and
	// memsets without Async, Device.Synchronize, Stream.Query,
	// Event.Query, Advise, module loading, host registration, and
	// Instantiate, Launch, Upload and Update of graphs; graphs and streams
	// closed meanwhile are destroyed when it ends. Waits for other streams
	// and events (Synchronize, Wait, Done) are not refused: a capture
	// elsewhere does not end them. Calls made through other packages (cudart, cuBLAS
	// directly) are not refused.
	CaptureGlobal // global
	// CaptureThreadLocal refuses potentially unsafe calls on the capturing
	// OS thread only (CU_STREAM_CAPTURE_MODE_THREAD_LOCAL). Begin and end the
	// capture on one OS thread (Capture does).
	CaptureThreadLocal // thread-local
)

// cuda returns the mode's CUstreamCaptureMode.
func (m CaptureMode) cuda() (int32, error) {
	switch m {
	case CaptureRelaxed:
		return int32(cudadrv.STREAM_CAPTURE_MODE_RELAXED), nil
	case CaptureGlobal:
		return int32(cudadrv.STREAM_CAPTURE_MODE_GLOBAL), nil
	case CaptureThreadLocal:
		return int32(cudadrv.STREAM_CAPTURE_MODE_THREAD_LOCAL), nil
	}
	return 0, invalid("highlevel: begin capture: unknown %v", m)
}

// Capture captures the work fn queues on s into a graph, in the given mode
// (CuPy's capture_begin and capture_end). It runs fn on the calling
// goroutine, locked to its OS thread, as the stricter modes need. If fn
// returns an error or panics, the capture is ended and its graph discarded.
// It is a convenience over Stream.BeginCapture and EndCapture, which a
// capture that spans calls or goroutines uses.
func Capture(s *Stream, mode CaptureMode, fn func() error) (g *Graph, err error) {
	if fn == nil {
		return nil, opErr("capture", invalid("highlevel: a nil function to capture"))
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := s.BeginCapture(mode); err != nil {
		return nil, err
	}
	ended := false
	defer func() {
		if !ended {
			if g, err := s.EndCapture(); err == nil {
				g.Close()
			}
		}
	}()
	ferr := fn()
	ended = true
	g, err = s.EndCapture()
	if ferr != nil {
		if err == nil {
			g.Close()
		}
		return nil, errors.Join(ferr, err)
	}
	return g, err
}

// Handle returns the CUDA graph, for use with cudadrv (or, converted, with
// cudart); 0 for a nil Graph.
func (g *Graph) Handle() cudadrv.Graph {
	if g == nil {
		return 0
	}
	return g.h
}

// usable returns the error of a method called on a nil or zero Graph; nil
// for a Graph the package made.
func (g *Graph) usable() error {
	if g == nil {
		return nilError("Graph")
	}
	if g.ctx == nil {
		return zeroError("Graph", "Capture, Stream.EndCapture or NewGraph")
	}
	return nil
}

// errBody refuses the operations of a whole graph on a conditional node's
// body, which belongs to its node.
var errBody = invalid("highlevel: the body of a conditional node belongs to the graph the node is in: instantiate, update and close that one")

// use begins an operation on the graph; g.life.Release ends it.
func (g *Graph) use() error {
	if err := g.usable(); err != nil {
		return err
	}
	if g.parent != nil {
		return errBody
	}
	if inCallback() { // before g.mu, held by calls that may wait for the callback
		return ErrInCallback
	}
	if !g.life.Acquire() {
		return ErrClosed
	}
	return nil
}

// errInto refuses the other methods of a graph that Graph.Capture is
// capturing into; each looks at Graph.into under the graph's lock, which
// Capture sets and clears it under.
var errInto = fmt.Errorf("%w: a capture into the graph is in progress", ErrCapturing)

// intoErr returns errInto while a capture into g is in progress.
func intoErr(g *Graph) error {
	if g.into.Load() {
		return errInto
	}
	return nil
}

// InstantiateOptions are the options of Graph.Instantiate
// (CUgraphInstantiate_flags); the zero value sets none.
type InstantiateOptions struct {
	// AutoFreeOnLaunch frees the memory the graph's allocation nodes
	// allocated and its free nodes did not free (cuMemAllocAsync captured
	// through cudadrv) before each launch after the first
	// (CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH). Without it, such a graph
	// must have its memory freed before it is launched again.
	AutoFreeOnLaunch bool
	// Upload, when not nil, uploads the graph on that stream of the graph's
	// device as part of instantiating it (CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD),
	// as GraphExec.Upload does; LegacyDefaultStream names the legacy default
	// stream.
	Upload *Stream
	// DeviceLaunch makes the graph launchable from kernels too
	// (CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH); CUDA refuses it together with
	// AutoFreeOnLaunch.
	DeviceLaunch bool
	// UseNodePriority runs the graph's kernels at the priorities they were
	// captured with, the priorities of their streams, rather than at the
	// priority of the stream the graph is launched on
	// (CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY).
	UseNodePriority bool
}

// Instantiate makes an executable graph of g. opts may be nil. While a
// capture in CaptureGlobal mode is in progress it returns ErrCapturing.
func (g *Graph) Instantiate(opts *InstantiateOptions) (_ *GraphExec, err error) {
	defer wrap(&err, "instantiate graph")
	if opts == nil {
		opts = &InstantiateOptions{}
	}
	if err := g.use(); err != nil {
		return nil, err
	}
	defer g.life.Release()
	var flags uint64
	if opts.AutoFreeOnLaunch {
		flags |= uint64(cudadrv.GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH)
	}
	if opts.DeviceLaunch {
		flags |= uint64(cudadrv.GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH)
	}
	if opts.UseNodePriority {
		flags |= uint64(cudadrv.GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY)
	}
	var sh uintptr
	if s := opts.Upload; s != nil {
		h, err := s.enter(g.dev)
		if err != nil {
			return nil, err
		}
		defer s.leave()
		flags |= uint64(cudadrv.GRAPH_INSTANTIATE_FLAG_UPLOAD)
		sh = h
	}
	var x uintptr
	var result int32
	g.mu.Lock()
	if err := cmp.Or(intoErr(g), g.unfreed()); err != nil {
		g.mu.Unlock()
		return nil, err
	}
	graphObjects.Lock()
	r := driver.GraphInstantiate(g.ctx, &x, uintptr(g.h), flags, sh, &result)
	graphObjects.Unlock()
	held := slices.Clone(g.held) // a built graph's grows
	g.mu.Unlock()
	if err := check("cuGraphInstantiateWithParams", r); err != nil {
		if cudadrv.GraphInstantiateResult(result) != cudadrv.GRAPH_INSTANTIATE_SUCCESS {
			err = fmt.Errorf("%w (%v)", err, cudadrv.GraphInstantiateResult(result))
		}
		return nil, err
	}
	for _, h := range held {
		h.hold()
	}
	exec := &GraphExec{h: cudadrv.GraphExec(x), dev: g.dev, ctx: g.ctx}
	exec.setHeld(held)
	return exec, nil
}

// Close destroys the graph; its instantiations stay usable. Operations in
// progress on it finish first; later ones return ErrClosed, and so does a
// second Close.
func (g *Graph) Close() (err error) {
	defer wrap(&err, "close graph")
	if err := g.usable(); err != nil {
		return err
	}
	if g.parent != nil {
		return errBody
	}
	if err := closing(&g.life); err != nil {
		return err
	}
	defer deleteDeadHandles()
	defer unholdAll(g.held)
	return check("cuGraphDestroy", afterGlobalCaptures(func() int32 {
		graphObjects.Lock()
		defer graphObjects.Unlock()
		return driver.GraphDestroy(g.ctx, uintptr(g.h))
	}))
}

// Handle returns the CUDA executable graph, for use with cudadrv (or,
// converted, with cudart); 0 for a nil GraphExec.
func (x *GraphExec) Handle() cudadrv.GraphExec {
	if x == nil {
		return 0
	}
	return x.h
}

// usable returns the error of a method called on a nil or zero GraphExec;
// nil for a GraphExec the package made.
func (x *GraphExec) usable() error {
	if x == nil {
		return nilError("GraphExec")
	}
	if x.ctx == nil {
		return zeroError("GraphExec", "Graph.Instantiate")
	}
	return nil
}

// use begins an operation of x on stream s: it returns s's handle; done
// ends it.
func (x *GraphExec) use(s *Stream) (uintptr, error) {
	if x == nil || x.ctx == nil {
		return 0, x.usable()
	}
	if inCallback() { // before x.mu, held by calls that may wait for the callback
		return 0, ErrInCallback
	}
	if !x.life.Acquire() {
		return 0, ErrClosed
	}
	sh, err := s.enter(x.dev)
	if err != nil {
		x.life.Release()
	}
	return sh, err
}

func (x *GraphExec) done(s *Stream) {
	s.leave()
	x.life.Release()
}

// Launch launches the graph on s, a stream of its device (nil: the legacy
// default stream). The GraphExec may be closed as soon as Launch returns:
// the launch runs to its end. A graph with conditional nodes waits for the
// device's last launch of one (see docs/graphs.md). The panics of its host
// nodes' functions (Graph.AddHost) go to s's next Synchronize, Wait or
// Query; on the legacy default stream, Launch returns, joined to its own
// result, a *PanicError for each panic of an earlier launch not reported
// yet.
func (x *GraphExec) Launch(s *Stream) (err error) {
	defer wrap(&err, "launch graph")
	sh, err := x.use(s)
	if err != nil {
		return err
	}
	defer x.done(s)
	x.mu.Lock()
	defer x.mu.Unlock()
	capturing := s != nil && s.inCapture()
	if capturing && x.mem {
		return errCapturedAlloc
	}
	if capturing { // the launch is a node of s's graph
		for _, h := range x.held {
			s.capture.keep(h)
		}
	}
	graphObjects.RLock()
	defer graphObjects.RUnlock()
	if !capturing {
		for _, p := range x.panics {
			p.launchedOn(s)
		}
	}
	if !capturing && len(x.records) > 0 {
		// As Record does, under each event's lock: waits begun from now
		// on are for the launch's record.
		unlock := lockEvents(x.records)
		defer unlock()
	}
	if x.turns != nil && !capturing {
		err = x.turns.launch(x, s, sh)
	} else {
		err = check("cuGraphLaunch", driver.GraphLaunch(x.ctx, uintptr(x.h), sh))
	}
	return reportPanics(err, x.panics)
}

// Upload uploads the graph's work to the device ahead of its first Launch,
// ordered on s.
func (x *GraphExec) Upload(s *Stream) (err error) {
	defer wrap(&err, "upload graph")
	sh, err := x.use(s)
	if err != nil {
		return err
	}
	defer x.done(s)
	x.mu.Lock()
	defer x.mu.Unlock()
	graphObjects.RLock()
	defer graphObjects.RUnlock()
	return check("cuGraphUpload", driver.GraphUpload(x.ctx, uintptr(x.h), sh))
}

// Update makes x run g instead, in place, where g has the same shape as
// the graph x was made of and differs only in the nodes' parameters
// (cuGraphExecUpdate); otherwise it returns an error naming why, and x is
// unchanged. Launches of x in flight run as they were launched. While a
// capture in CaptureGlobal mode is in progress it returns ErrCapturing. A
// graph with allocation nodes (AddAlloc) is neither updated nor an
// update: ErrInvalid.
func (x *GraphExec) Update(g *Graph) (err error) {
	defer wrap(&err, "update graph")
	if err := x.usable(); err != nil {
		return err
	}
	if !x.life.Acquire() {
		return ErrClosed
	}
	defer x.life.Release()
	if err := g.use(); err != nil {
		return err
	}
	defer g.life.Release()
	var result int32
	x.mu.Lock()
	g.mu.Lock()
	if err := cmp.Or(intoErr(g), updateAllocs(x, g)); err != nil {
		g.mu.Unlock()
		x.mu.Unlock()
		return err
	}
	graphObjects.Lock()
	r := driver.GraphUpdate(x.ctx, uintptr(x.h), uintptr(g.h), &result)
	graphObjects.Unlock()
	held := slices.Clone(g.held)
	g.mu.Unlock()
	err = check("cuGraphExecUpdate", r)
	if err != nil && cudadrv.GraphExecUpdateResult(result) != cudadrv.GRAPH_EXEC_UPDATE_SUCCESS {
		err = fmt.Errorf("%w (%v)", err, cudadrv.GraphExecUpdateResult(result))
	}
	if err == nil {
		for _, h := range held {
			h.hold()
		}
		unholdAll(x.held) // launches in flight: see Memory.unhold
		x.setHeld(held)
	}
	x.mu.Unlock()
	return err
}

// Close destroys the executable graph; launches in flight run to their
// end. Operations in progress on it finish first; later ones return
// ErrClosed, and so does a second Close. It reports the panics of its host
// nodes after launches on the legacy default stream, as Launch does.
func (x *GraphExec) Close() (err error) {
	defer wrap(&err, "close graph exec")
	if err := x.usable(); err != nil {
		return err
	}
	if err := closing(&x.life); err != nil {
		return err
	}
	defer deleteDeadHandles()
	defer unholdAll(x.held)
	err = check("cuGraphExecDestroy", afterGlobalCaptures(func() int32 {
		graphObjects.Lock()
		defer graphObjects.Unlock()
		return driver.GraphExecDestroy(x.ctx, uintptr(x.h))
	}))
	return reportPanics(err, x.panics)
}

// setHeld makes held what x holds, held already, and finds among them its
// condTurns, hostPanics, graphMemory and recordedEvents.
func (x *GraphExec) setHeld(held []holder) {
	x.held, x.turns, x.panics, x.mem, x.records = held, nil, nil, false, nil
	for _, h := range held {
		switch h := h.(type) {
		case *condTurns:
			x.turns = h
		case *hostPanics:
			x.panics = append(x.panics, h)
		case *graphMemory:
			x.mem = true
		case recordedEvent:
			x.records = append(x.records, h.e)
		}
	}
	// In one order, as lockEvents locks them.
	slices.SortFunc(x.records, func(a, b *Event) int {
		return cmp.Compare(uintptr(unsafe.Pointer(a)), uintptr(unsafe.Pointer(b)))
	})
}
