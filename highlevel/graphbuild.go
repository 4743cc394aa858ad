package highlevel

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"unsafe"

	"github.com/gocuda/cuda/cudadrv"

	"github.com/gocuda/cuda/highlevel/internal/driver"
)

// A GraphNode is a node of a Graph built node by node: a dependency of the
// nodes added after it, and what GraphExec.SetKernelArgs updates. The zero
// GraphNode is no node.
type GraphNode struct {
	h uintptr
	g *Graph // the graph, or conditional node's body, it is a node of
}

// NewGraph makes an empty graph of device d, to build node by node:
// AddKernel, AddMemset, AddCopy, AddHost, AddEventRecord, AddEventWait,
// AddAlloc, AddFree, AddGraph, AddEmpty, the conditional nodes AddIf,
// AddIfElse, AddWhile and AddSwitch, and Capture for the rest. Each takes
// the nodes it comes after, in the graph it is added to; none means the
// node may run first. Like a captured graph, a built graph holds the
// memory, modules and events its nodes use until it and its
// instantiations are closed (see Graph).
func NewGraph(d Device) (_ *Graph, err error) {
	defer func() {
		if err != nil {
			wrap(&err, "new graph on", d)
		}
	}()
	ctx, err := d.context()
	if err != nil {
		return nil, err
	}
	var h uintptr
	if err := check("cuGraphCreate", driver.GraphCreate(ctx, &h)); err != nil {
		return nil, err
	}
	return &Graph{h: cudadrv.Graph(h), dev: d, ctx: ctx}, nil
}

// top returns the graph whose life, lock and holds g's nodes share: g, or
// for a conditional node's body the graph the node is in.
func (g *Graph) top() *Graph {
	for g.parent != nil {
		g = g.parent
	}
	return g
}

// build begins adding a node to g: it returns the graph that owns g's
// nodes, locked and in use, and the handles of deps, all of g, in its
// scratch; end ends it.
func (g *Graph) build(deps []GraphNode) (*Graph, []uintptr, error) {
	if err := g.usable(); err != nil {
		return nil, nil, err
	}
	t := g.top()
	if err := t.use(); err != nil {
		return nil, nil, err
	}
	t.mu.Lock()
	if t.into.Load() {
		t.end()
		return nil, nil, errInto
	}
	hs := t.scratch.deps[:0]
	for i, n := range deps {
		switch {
		case n.h == 0 || n.g != g:
			t.end()
			return nil, nil, invalid("highlevel: dependency %d is not a node of this graph", i)
		case slices.Contains(hs, n.h):
			t.end()
			return nil, nil, invalid("highlevel: dependency %d is named twice", i)
		}
		hs = append(hs, n.h)
	}
	t.scratch.deps = hs
	return t, hs, nil
}

func (t *Graph) end() {
	t.mu.Unlock()
	t.life.Release()
}

// keep makes t hold h for its nodes, once, as a capture's graph holds what
// its work uses; t.mu is held.
func (t *Graph) keep(h holder) {
	r := &t.scratch.recent
	if h == r[0] || h == r[1] {
		return
	}
	r[0], r[1] = h, r[0]
	if t.heldSet == nil {
		t.heldSet = make(map[holder]struct{}, len(t.held)+1)
		for _, x := range t.held {
			t.heldSet[x] = struct{}{}
		}
	}
	if _, ok := t.heldSet[h]; ok {
		return
	}
	t.heldSet[h] = struct{}{}
	t.held = append(t.held, h)
	h.hold()
}

// depsPtr is the address of the first of hs, or nil.
func depsPtr(hs []uintptr) *uintptr {
	if len(hs) == 0 {
		return nil
	}
	return &hs[0]
}

// AddEmpty adds a node that does nothing, to join or fork dependencies.
func (g *Graph) AddEmpty(deps ...GraphNode) (_ GraphNode, err error) {
	defer wrap(&err, "add empty node")
	t, hs, err := g.build(deps)
	if err != nil {
		return GraphNode{}, err
	}
	defer t.end()
	n := &t.scratch.made
	if err := check("cuGraphAddEmptyNode", driver.GraphAddEmpty(g.ctx, n, uintptr(g.h), depsPtr(hs), uintptr(len(hs)))); err != nil {
		return GraphNode{}, err
	}
	return t.made(g, *n, hs), nil
}

// AddKernel adds a launch of k with cfg and args, checked as Kernel.Launch
// checks them, on the graph's device.
func (g *Graph) AddKernel(deps []GraphNode, k *Kernel, cfg LaunchConfig, args ...any) (_ GraphNode, err error) {
	defer func() {
		if err != nil {
			wrap(&err, "add kernel node", k.Name())
		}
	}()
	t, hs, err := g.build(deps)
	if err != nil {
		return GraphNode{}, err
	}
	defer t.end()
	n, p := &t.scratch.made, &t.scratch.kernel
	if err := k.node(g.dev, g.ctx, &cfg, args, p); err != nil {
		return GraphNode{}, err
	}
	defer k.release(args)
	if err := k.argsCheck(args, func(m *Memory) error { return m.useIn(t, g, hs) }); err != nil {
		return GraphNode{}, err
	}
	r := driver.GraphAddKernel(uintptr(g.ctx), n, uintptr(g.h), depsPtr(hs), uintptr(len(hs)),
		p.f, p.dims, uint32(cfg.SharedMem), p.small, p.big, p.params, int32(len(k.params)))
	if err := check("cuGraphAddKernelNode", r); err != nil {
		return GraphNode{}, err
	}
	k.keep(args, t.keep)
	k.argsUsedBy(*n, args)
	return t.made(g, *n, hs), nil
}

// SetKernelArgs changes the configuration and arguments of node, a kernel
// node of the graph x was made of, which must still be open, for x's
// launches from now on (cuGraphExecKernelNodeSetParams): no new
// instantiation. The arguments are
// checked as Kernel.Launch checks them; k must be the node's kernel or one
// of the same module CUDA accepts in its place. x holds the memory they
// name, as it holds its graph's.
func (x *GraphExec) SetKernelArgs(node GraphNode, k *Kernel, cfg LaunchConfig, args ...any) (err error) {
	defer wrap(&err, "set kernel node arguments")
	return x.setNode(node, func() error {
		p := &x.kernel
		if err := k.node(x.dev, x.ctx, &cfg, args, p); err != nil {
			return err
		}
		defer k.release(args)
		t := node.g.top()
		if err := k.argsCheck(args, func(m *Memory) error { return m.setIn(t, node.h) }); err != nil {
			return err
		}
		r := driver.GraphExecSetKernel(uintptr(x.ctx), uintptr(x.h), node.h,
			p.f, p.dims, uint32(cfg.SharedMem), p.small, p.big, p.params, int32(len(k.params)))
		if err := check("cuGraphExecKernelNodeSetParams", r); err != nil {
			return err
		}
		k.keep(args, x.keep)
		return nil
	})
}

// setNode calls set, which changes node's parameters in x, with x and
// node's graph locked. CUDA finds the node through its graph, which must
// not be destroyed meanwhile: a node of a closed graph is refused.
func (x *GraphExec) setNode(node GraphNode, set func() error) error {
	if err := x.usable(); err != nil {
		return err
	}
	if node.h == 0 {
		return invalid("highlevel: the zero GraphNode")
	}
	if inCallback() {
		return ErrInCallback
	}
	if !x.life.Acquire() {
		return ErrClosed
	}
	defer x.life.Release()
	t := node.g.top()
	if err := t.use(); err != nil {
		return fmt.Errorf("the node's graph: %w", err)
	}
	defer t.life.Release()
	x.mu.Lock()
	defer x.mu.Unlock()
	t.mu.Lock() // CUDA reads the graph: no node may be added meanwhile
	defer t.mu.Unlock()
	if t.into.Load() {
		return errInto
	}
	graphObjects.RLock()
	defer graphObjects.RUnlock()
	return set()
}

// SetMemset makes node, a memset node of the graph x was made of
// (AddMemset), which must still be open, set every element of a to v at
// x's launches from now on (cuGraphExecMemsetNodeSetParams): no new
// instantiation. CUDA takes a new array and value but may refuse a new
// shape: an array of another length, or elements set in units of another
// size. x holds a's memory, as it holds its graph's.
func SetMemset[T any](x *GraphExec, node GraphNode, a *Array[T], v T) (err error) {
	defer wrap(&err, "set memset node")
	r, err := memsetOf(a, v)
	if err != nil {
		return err
	}
	return x.setNode(node, func() error {
		d, _, err := a.p.nodeSpan(r.bytes())
		if err != nil {
			return err
		}
		defer a.p.mem.life.Release()
		if err := cmp.Or(local(x.dev, a.p.mem), a.p.mem.setIn(node.g.top(), node.h)); err != nil {
			return err
		}
		err = check("cuGraphExecMemsetNodeSetParams", driver.GraphExecSetMemset(x.ctx, uintptr(x.h), node.h,
			uintptr(d), uintptr(r.pitch), r.v, int32(r.size), uintptr(r.width), uintptr(r.height)))
		if err == nil {
			x.keep(a.p.mem)
		}
		return err
	})
}

// SetCopy makes node, a copy node of the graph x was made of (AddCopy),
// which must still be open, copy src's elements to dst at x's launches
// from now on (cuGraphExecMemcpyNodeSetParams), as AddCopy would: no new
// instantiation. CUDA may refuse arrays of another length than the
// node's. x holds their memory, as it holds its graph's.
func SetCopy[T any](x *GraphExec, node GraphNode, dst, src *Array[T]) (err error) {
	defer wrap(&err, "set copy node")
	if err := copyOf(dst, src); err != nil {
		return err
	}
	return x.setNode(node, func() error {
		n, t := dst.bytes(), node.g.top()
		if err := cmp.Or(local(x.dev, dst.p.mem), local(x.dev, src.p.mem),
			dst.p.mem.setIn(t, node.h), src.p.mem.setIn(t, node.h)); err != nil {
			return err
		}
		d, _, err := dst.p.nodeSpan(n)
		if err != nil {
			return err
		}
		defer dst.p.mem.life.Release()
		sp, _, err := src.p.nodeSpan(n)
		if err != nil {
			return err
		}
		defer src.p.mem.life.Release()
		err = check("cuGraphExecMemcpyNodeSetParams", driver.GraphExecSetCopy(x.ctx, uintptr(x.h), node.h,
			uintptr(d), uintptr(sp), uintptr(n)))
		if err == nil {
			x.keep(dst.p.mem)
			x.keep(src.p.mem)
		}
		return err
	})
}

// keep makes x hold h until it is closed or updated, once; x.mu is held.
func (x *GraphExec) keep(h holder) {
	for _, y := range x.held {
		if y == h {
			return
		}
	}
	x.held = append(x.held, h)
	h.hold()
}

// A kernelNode is a kernel node's parameters as the shim takes them.
type kernelNode struct {
	f      uintptr
	dims   driver.Dims
	small  driver.Args // the arguments, where they fit
	big    *byte       // else here
	params *driver.Param
}

// node packs args for a node of k on device d, whose primary context is
// ctx, into p, holding k's module and the arguments' memory (operations in
// progress, which Close and Free wait for) until release.
func (k *Kernel) node(d Device, ctx unsafe.Pointer, cfg *LaunchConfig, args []any, p *kernelNode) error {
	if k == nil || k.m == nil {
		return k.usable()
	}
	*p = kernelNode{}
	if cfg.Cooperative || cfg.Cluster != (Dim3{}) {
		return invalid("highlevel: a kernel node has no cooperative or cluster launch here; capture one instead")
	}
	st, err := d.state()
	if err != nil {
		return err
	}
	if err := cfg.check(d, &st.limits, &p.dims); err != nil {
		return err
	}
	if !k.m.life.Acquire() {
		return ErrClosed
	}
	if p.f, err = k.function(d, ctx); err != nil {
		k.m.life.Release()
		return err
	}
	buf := unsafe.Slice((*byte)(unsafe.Pointer(&p.small)), unsafe.Sizeof(p.small))
	if k.size > len(buf) {
		buf = make([]byte, k.size)
		p.big = &buf[0]
	}
	if _, err := k.pack(buf, args, &st.packOn); err != nil {
		k.m.life.Release()
		return err
	}
	if len(k.params) > 0 {
		p.params = (*driver.Param)(unsafe.Pointer(&k.params[0]))
	}
	return nil
}

// release ends node's holds.
func (k *Kernel) release(args []any) {
	k.releaseArgs(args)
	k.m.life.Release()
}

// keep makes keep hold the module and the arguments' memory of a node
// added with args, as a graph holds what its nodes use.
func (k *Kernel) keep(args []any, keep func(holder)) {
	keep(k.m)
	k.forArgMemory(args, func(m *Memory) { keep(m) })
}

// AddMemset adds a memset of every element of a to v, with the driver's
// memset node: a's elements must be 1, 2 or 4 bytes long, or v's bytes all
// equal.
func AddMemset[T any](g *Graph, deps []GraphNode, a *Array[T], v T) (_ GraphNode, err error) {
	defer wrap(&err, "add memset node")
	r, err := memsetOf(a, v)
	if err != nil {
		return GraphNode{}, err
	}
	t, hs, err := g.build(deps)
	if err != nil {
		return GraphNode{}, err
	}
	defer t.end()
	d, _, err := a.p.nodeSpan(r.bytes())
	if err != nil {
		return GraphNode{}, err
	}
	defer a.p.mem.life.Release()
	if err := cmp.Or(local(g.dev, a.p.mem), a.p.mem.useIn(t, g, hs)); err != nil {
		return GraphNode{}, err
	}
	n := &t.scratch.made
	err = check("cuGraphAddMemsetNode", driver.GraphAddMemset(g.ctx, n, uintptr(g.h), depsPtr(hs), uintptr(len(hs)),
		uintptr(d), uintptr(r.pitch), r.v, int32(r.size), uintptr(r.width), uintptr(r.height)))
	if err != nil {
		return GraphNode{}, err
	}
	t.keep(a.p.mem)
	a.p.mem.usedBy(*n)
	return t.made(g, *n, hs), nil
}

// AddCopy adds a copy of src's elements to dst, arrays of g's device (or
// managed memory) of one length. A copy to or from host memory, or between
// devices, is captured instead (Graph.Capture).
func AddCopy[T any](g *Graph, deps []GraphNode, dst, src *Array[T]) (_ GraphNode, err error) {
	defer wrap(&err, "add copy node")
	if err := copyOf(dst, src); err != nil {
		return GraphNode{}, err
	}
	t, hs, err := g.build(deps)
	if err != nil {
		return GraphNode{}, err
	}
	defer t.end()
	n := dst.bytes()
	if err := cmp.Or(local(g.dev, dst.p.mem), local(g.dev, src.p.mem)); err != nil {
		return GraphNode{}, err
	}
	d, _, err := dst.p.nodeSpan(n)
	if err != nil {
		return GraphNode{}, err
	}
	defer dst.p.mem.life.Release()
	sp, _, err := src.p.nodeSpan(n)
	if err != nil {
		return GraphNode{}, err
	}
	defer src.p.mem.life.Release()
	if err := cmp.Or(dst.p.mem.useIn(t, g, hs), src.p.mem.useIn(t, g, hs)); err != nil {
		return GraphNode{}, err
	}
	made := &t.scratch.made
	err = check("cuGraphAddMemcpyNode", driver.GraphAddCopy(g.ctx, made, uintptr(g.h), depsPtr(hs), uintptr(len(hs)),
		uintptr(d), uintptr(sp), uintptr(n)))
	if err != nil {
		return GraphNode{}, err
	}
	t.keep(dst.p.mem)
	t.keep(src.p.mem)
	dst.p.mem.usedBy(*made)
	src.p.mem.usedBy(*made)
	return t.made(g, *made, hs), nil
}

// memsetOf checks a memset node of every element of a to v (AddMemset,
// SetMemset) and returns its rows.
func memsetOf[T any](a *Array[T], v T) (memsetRows, error) {
	if a == nil {
		return memsetRows{}, nilError("Array")
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(&v)), unsafe.Sizeof(v))
	r, ok := oneMemset(b, a.n)
	if !ok {
		return memsetRows{}, invalid("highlevel: a memset node sets elements of 1, 2 or 4 bytes, not %d bytes that differ", len(b))
	}
	if a.n == 0 {
		return memsetRows{}, invalid("highlevel: a memset node of an empty array")
	}
	return r, nil
}

// copyOf checks a copy node of src's elements to dst (AddCopy, SetCopy).
func copyOf[T any](dst, src *Array[T]) error {
	if err := dst.same(src); err != nil {
		return err
	}
	if dst.n == 0 {
		return invalid("highlevel: a copy node of empty arrays")
	}
	return nil
}

// local refuses memory of another device than d, a graph's, but managed
// memory: a memset or copy node works in the graph's context.
func local(d Device, m *Memory) error {
	if m != nil && m.dev != d && !m.managed {
		return invalid("highlevel: memory of %v in a graph of %v", m.dev, d)
	}
	return nil
}

// AddHost adds a node that calls fn at each of its runs, as
// Stream.LaunchHostFunc calls its function: on a thread of CUDA's, where fn
// must not call CUDA (the package's calls return ErrInCallback), holding
// back the graph's later nodes until it returns. A panic or
// runtime.Goexit in fn is reported, as a *PanicError, as
// LaunchHostFunc's are: by the next Synchronize, Wait or Query of the
// stream of the latest launch of the graph (of an instantiation of it or
// of a graph it is a child of); after a launch on the legacy default
// stream, by the next Launch or Close of an instantiation. The body of a
// conditional node takes no host node (CUDA refuses it): there AddHost
// returns ErrInvalid.
func (g *Graph) AddHost(deps []GraphNode, fn func()) (_ GraphNode, err error) {
	defer wrap(&err, "add host node")
	t, hs, err := g.build(deps)
	if err != nil {
		return GraphNode{}, err
	}
	defer t.end()
	switch {
	case fn == nil:
		return GraphNode{}, invalid("highlevel: a nil function")
	case g.parent != nil:
		return GraphNode{}, invalid("highlevel: a host node in the body of a conditional node, which CUDA refuses")
	}
	if t.panics == nil {
		t.panics = new(hostPanics)
	}
	t.keep(t.panics)
	deleteDeadHandles()
	c := newCallback(callback{to: t.panics, fn: fn})
	var owned int32
	n := &t.scratch.made
	err = check("cuGraphAddHostNode", driver.GraphAddHost(g.ctx, n, uintptr(g.h), depsPtr(hs), uintptr(len(hs)), uintptr(c), &owned))
	if err != nil {
		if owned == 0 {
			c.Delete()
		}
		return GraphNode{}, err
	}
	return t.made(g, *n, hs), nil
}

// AddEventRecord adds a node that records e, an event of g's device, at
// each run, as Event.Record records it on a stream: e happens once the
// node's dependencies have run. Streams wait for it with
// Stream.WaitEvent, the program with Event.Wait, Done, Synchronize or
// Query: each launch of an instantiation outside a capture is a record of
// e for them, as Record is. g holds e as it holds memory: Close of e
// leaves its destruction to the last of g and its instantiations. The
// body of a conditional node takes no event node (CUDA refuses it): there
// AddEventRecord returns ErrInvalid.
func (g *Graph) AddEventRecord(deps []GraphNode, e *Event) (GraphNode, error) {
	n, err := g.addEvent(deps, e, true)
	return n, opErr("add event record node", err)
}

// AddEventWait adds a node that waits, at each run, for e's latest
// record, as Stream.WaitEvent does: the nodes after it run once e has
// happened. e may be an event of another device. g holds e, as
// AddEventRecord's graph does, and a conditional node's body takes no
// such node either.
func (g *Graph) AddEventWait(deps []GraphNode, e *Event) (GraphNode, error) {
	n, err := g.addEvent(deps, e, false)
	return n, opErr("add event wait node", err)
}

// addEvent adds an event record node of e to g (record), or an event wait
// node.
func (g *Graph) addEvent(deps []GraphNode, e *Event, record bool) (GraphNode, error) {
	t, hs, err := g.build(deps)
	if err != nil {
		return GraphNode{}, err
	}
	defer t.end()
	if g.parent != nil {
		return GraphNode{}, invalid("highlevel: an event node in the body of a conditional node, which CUDA refuses")
	}
	if err := e.use(); err != nil {
		return GraphNode{}, err
	}
	defer e.life.Release()
	op, rec := "cuGraphAddEventWaitNode", int32(0)
	if record {
		if e.dev != g.dev {
			return GraphNode{}, invalid("highlevel: an event of %v recorded in a graph of %v", e.dev, g.dev)
		}
		op, rec = "cuGraphAddEventRecordNode", 1
	}
	n := &t.scratch.made
	if err := check(op, driver.GraphAddEvent(g.ctx, n, uintptr(g.h), depsPtr(hs), uintptr(len(hs)), uintptr(e.h), rec)); err != nil {
		return GraphNode{}, err
	}
	if record {
		t.keep(recordedEvent{e})
	} else {
		t.keep(e)
	}
	return t.made(g, *n, hs), nil
}

// hostPanics sends the panics of a graph's host node functions
// (Graph.AddHost) to the stream of the graph's latest launch, or, after a
// launch on the legacy default stream, keeps them for the next Launch or
// Close of an instantiation. The graph holds it as it holds memory, so
// that the graphs it is copied or captured into, and their instantiations,
// launch it too.
type hostPanics struct {
	mu  sync.Mutex
	to  *Stream // the latest launch's stream; nil: err keeps the panics
	err error
}

func (*hostPanics) hold()   {}
func (*hostPanics) unhold() {}

func (p *hostPanics) fail(err error) {
	p.mu.Lock()
	to := p.to
	if to == nil {
		p.err = errors.Join(p.err, err)
	}
	p.mu.Unlock()
	if to != nil {
		to.fail(err)
	}
}

// launchedOn makes s, a launch's stream, where the panics go from now on.
func (p *hostPanics) launchedOn(s *Stream) {
	p.mu.Lock()
	p.to = s
	p.mu.Unlock()
}

// reportPanics returns err joined with the panics of ps, which they
// forget.
func reportPanics(err error, ps []*hostPanics) error {
	for _, p := range ps {
		p.mu.Lock()
		err = errors.Join(err, p.err)
		p.err = nil
		p.mu.Unlock()
	}
	return err
}

// AddGraph adds a node that runs a copy of child, a graph of the same
// device, as CUDA copies it now (cuGraphAddChildGraphNode): later changes
// to child do not reach g. g holds what child's nodes use.
func (g *Graph) AddGraph(deps []GraphNode, child *Graph) (_ GraphNode, err error) {
	defer wrap(&err, "add child graph node")
	t, hs, err := g.build(deps)
	if err != nil {
		return GraphNode{}, err
	}
	hs = slices.Clone(hs) // t's scratch, which others use while t is unlocked
	t.mu.Unlock()         // both graphs are locked below, in the order of their addresses
	defer t.life.Release()
	if err := child.usable(); err != nil {
		return GraphNode{}, err
	}
	ct := child.top()
	if ct == t {
		return GraphNode{}, invalid("highlevel: a graph in itself")
	}
	if err := ct.use(); err != nil {
		return GraphNode{}, err
	}
	defer ct.life.Release()
	first, second := t, ct
	if uintptr(unsafe.Pointer(second)) < uintptr(unsafe.Pointer(first)) {
		first, second = second, first
	}
	first.mu.Lock()
	second.mu.Lock()
	defer first.mu.Unlock()
	defer second.mu.Unlock()
	switch {
	case t.into.Load() || ct.into.Load():
		return GraphNode{}, errInto
	case ct.mem != nil:
		return GraphNode{}, invalid("highlevel: a graph with allocation nodes as a child graph, which CUDA refuses")
	}
	var n uintptr
	graphObjects.Lock()
	r := driver.GraphAddChild(g.ctx, &n, uintptr(g.h), depsPtr(hs), uintptr(len(hs)), uintptr(child.h))
	graphObjects.Unlock()
	if err := check("cuGraphAddChildGraphNode", r); err != nil {
		return GraphNode{}, err
	}
	for _, h := range ct.held {
		t.keep(h)
	}
	return t.made(g, n, hs), nil
}

// Capture captures the work fn queues on s, a stream of g's device, into
// g after deps, as the function Capture captures into a new graph
// (cuStreamBeginCaptureToGraph; CUDA 12.3), and returns the nodes the
// captured work ends with, the dependencies of what comes after it. It
// makes the nodes that have no Add method: copies to and from the host,
// linalg's and collective's calls. g holds what they use, as a captured
// graph does.
// While fn runs, g's other methods return ErrCapturing, s's EndCapture
// too, and Close waits for Capture to return (so fn must not close g: it
// would wait for itself). If fn fails or panics, the capture is ended (and
// the panic goes on); the nodes captured until then stay in g, which is
// best closed.
func (g *Graph) Capture(s *Stream, mode CaptureMode, deps []GraphNode, fn func() error) (_ []GraphNode, err error) {
	defer wrap(&err, "capture into graph")
	if err := g.usable(); err != nil {
		return nil, err
	}
	if err := s.usable(); err != nil {
		return nil, err
	}
	if fn == nil {
		return nil, invalid("highlevel: a nil function to capture")
	}
	t, hs, err := g.build(deps)
	if err != nil {
		return nil, err
	}
	if s.dev != g.dev {
		t.end()
		return nil, invalid("highlevel: a stream of %v captured into a graph of %v", s.dev, g.dev)
	}
	hs = slices.Clone(hs)
	t.into.Store(true)
	t.mu.Unlock() // fn's work changes g through CUDA, not through t
	defer func() {
		t.mu.Lock()
		t.into.Store(false)
		t.end()
	}()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := s.beginCapture(mode, uintptr(g.h), hs); err != nil {
		return nil, err
	}
	var sinks []uintptr
	var held []holder
	ended := false
	defer func() {
		if !ended { // fn panicked
			_, held, _ = s.endInto()
		}
		t.mu.Lock()
		for _, h := range held {
			t.keep(h)
		}
		t.mu.Unlock()
		unholdAll(held) // the capture's holds, which t's replace
	}()
	ferr := fn()
	ended = true
	sinks, held, err = s.endInto()
	if err := errors.Join(ferr, err); err != nil {
		return nil, err
	}
	nodes := make([]GraphNode, len(sinks))
	t.mu.Lock()
	for i, h := range sinks {
		if slices.Contains(hs, h) { // no work came after it: no new node
			nodes[i] = GraphNode{h, g}
		} else { // a new node, after hs, as the capture began there
			nodes[i] = t.made(g, h, hs)
		}
	}
	t.mu.Unlock()
	return nodes, nil
}

// Dot returns the graph in Graphviz's DOT language, as
// cuGraphDebugDotPrint writes it with every detail
// (CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE): `dot -Tsvg` draws it.
func (g *Graph) Dot() (_ []byte, err error) {
	defer wrap(&err, "graph in DOT")
	if err := g.usable(); err != nil {
		return nil, err
	}
	t := g.top()
	if err := t.use(); err != nil {
		return nil, err
	}
	defer t.life.Release()
	dir, err := os.MkdirTemp("", "gocuda-dot")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "graph.dot")
	cpath := append([]byte(path), 0)
	t.mu.Lock()
	if t.into.Load() {
		t.mu.Unlock()
		return nil, errInto
	}
	r := driver.GraphDot(g.ctx, uintptr(g.h), &cpath[0], uint32(cudadrv.GRAPH_DEBUG_DOT_FLAGS_VERBOSE))
	t.mu.Unlock()
	if err := check("cuGraphDebugDotPrint", r); err != nil {
		return nil, err
	}
	return os.ReadFile(path)
}
