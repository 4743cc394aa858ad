package highlevel

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// The operations of TestStandInRandom's goroutines on streams, events,
// captures and graphs, and the model of a graph: its nodes' effects, done
// at each launch that works.

// An srNode is a node of a graph of the program: what it does, and for a
// built graph its handle. A captured graph is one node of all its work.
type srNode struct {
	node   GraphNode
	sinks  []GraphNode // of work captured into a built graph, its last nodes, instead
	eff    []srEffect
	kernel bool
}

// after returns what a node added after n depends on, to come after it.
func (n srNode) after() []GraphNode {
	if n.node.h != 0 {
		return []GraphNode{n.node}
	}
	return n.sinks
}

type srGraph struct {
	name   string
	g      *Graph
	obj    *srObj
	built  bool // by NewGraph and the Add methods
	shared bool // the world's
	nodes  []srNode
}

// srEffects returns what nodes do, in order.
func srEffects(nodes []srNode) []srEffect {
	var effs []srEffect
	for _, n := range nodes {
		effs = append(effs, n.eff...)
	}
	return effs
}

type srExec struct {
	name  string
	x     *GraphExec
	obj   *srObj
	graph *srGraph
	nodes []srNode // the graph's when instantiated, with SetKernelArgs's changes
}

func (w *srWorker) newStream(r *rand.Rand) *srStream {
	opts := &StreamOptions{NonBlocking: r.IntN(2) == 0, Priority: -r.IntN(3)}
	name := w.name("stream")
	w.desc = fmt.Sprintf("new stream %+v", *opts)
	x := w.expect()
	s, err := NewStream(0, opts)
	if out := w.judge(x, err); out != "ok" {
		return nil
	}
	w.count("stream new", "ok")
	st := &srStream{s: s, obj: newSrObj(name, ErrClosed)}
	w.work = append(w.work, st)
	return st
}

// pickAnyStream returns a stream as pickStream does, but never the legacy
// default stream.
func (w *srWorker) pickAnyStream(r *rand.Rand) *srStream {
	if s := w.pickStream(r); s != nil {
		return s
	}
	return w.home
}

func (w *srWorker) pickEvent(r *rand.Rand) *srEvent {
	if r.IntN(10) == 0 {
		if e := srPick(r, w.deadEvents, nil); e != nil {
			return e
		}
	}
	if e := srPick(r, w.events, nil); e != nil {
		return e
	}
	return w.newEvent(r)
}

func (w *srWorker) newEvent(r *rand.Rand) *srEvent {
	name := w.name("event")
	w.desc = "new event"
	x := w.expect()
	e, err := NewEvent(0, &EventOptions{DisableTiming: r.IntN(2) == 0})
	if out := w.judge(x, err); out != "ok" {
		return nil
	}
	w.count("event new", "ok")
	ev := &srEvent{e: e, obj: newSrObj(name, ErrClosed)}
	w.events = append(w.events, ev)
	return ev
}

func (w *srWorker) opStream(r *rand.Rand) {
	switch r.IntN(10) {
	case 0:
		if len(w.work) < 3 {
			w.newStream(r)
			return
		}
		fallthrough
	case 1:
		s := srPick(r, w.work, nil)
		if s == nil {
			return
		}
		w.desc = "close " + s.obj.name
		x := w.expect(s.obj)
		out := w.judge(x, w.bounded("Close of "+s.obj.name, s.s.Close))
		w.count("stream close", out)
		s.obj.state.Store(srClosed)
		w.work = slices.DeleteFunc(w.work, func(t *srStream) bool { return t == s })
		w.deadStreams = append(w.deadStreams, s)
		if len(w.deadStreams) > 4 {
			w.deadStreams = w.deadStreams[1:]
		}
	case 2, 3:
		s, other := w.pickAnyStream(r), w.pickAnyStream(r)
		w.desc = fmt.Sprintf("%v waits for %v", s, other)
		x := w.expect(s.obj, other.obj)
		w.count("wait stream", w.judge(x, s.s.WaitStream(other.s)))
	case 4:
		e, s := w.pickEvent(r), w.pickStream(r)
		if e == nil {
			return
		}
		w.desc = fmt.Sprintf("record %s on %v", e.obj.name, s)
		x := w.expect(e.obj, s.state())
		x.sync = s == nil
		w.count("record", w.judge(x, e.e.Record(s.stream())))
	case 5:
		e, s := w.pickEvent(r), w.pickAnyStream(r)
		if e == nil {
			return
		}
		w.desc = fmt.Sprintf("%v waits for %s", s, e.obj.name)
		x := w.expect(e.obj, s.obj)
		w.count("wait event", w.judge(x, s.s.WaitEvent(e.e)))
	case 6:
		e := w.pickEvent(r)
		if e == nil {
			return
		}
		w.desc = "synchronize " + e.obj.name
		x := w.expect(e.obj)
		var err error
		if r.IntN(2) == 0 {
			err = e.e.Synchronize()
		} else {
			_, err = e.e.Query()
		}
		w.count("event synchronize", w.judge(x, err))
	case 7:
		if len(w.events) < 3 {
			w.newEvent(r)
			return
		}
		e := w.events[r.IntN(len(w.events))]
		w.desc = "close " + e.obj.name
		w.count("event close", w.judge(w.expect(e.obj), w.bounded("Close of "+e.obj.name, e.e.Close)))
		e.obj.state.Store(srClosed)
		w.events = slices.DeleteFunc(w.events, func(f *srEvent) bool { return f == e })
		w.deadEvents = append(w.deadEvents, e)
		if len(w.deadEvents) > 4 {
			w.deadEvents = w.deadEvents[1:]
		}
	default:
		s := w.pickAnyStream(r)
		w.desc = "synchronize " + s.obj.name
		x := w.expect(s.obj)
		var err error
		if r.IntN(2) == 0 {
			err = s.s.Synchronize()
		} else {
			_, err = s.s.Query()
		}
		w.count("stream synchronize", w.judge(x, err))
	}
}

// An srCapture is a capture in progress: its streams, the one that began
// it first, and the work captured.
type srCapture struct {
	streams []*srStream
	effs    []srEffect
	temps   []*Event
}

func (w *srWorker) opCapture(r *rand.Rand) {
	s := w.captureStream(r)
	if s == nil {
		return
	}
	c := &srCapture{streams: []*srStream{s}}
	ops := 1 + r.IntN(6)
	w.desc = fmt.Sprintf("capture %d operations on %s", ops, s.obj.name)
	desc := w.desc
	x := w.expect(s.obj)
	var g *Graph
	err := w.capturing(func() (err error) {
		g, err = Capture(s.s, CaptureRelaxed, w.captureBody(r, c, ops, desc))
		return err
	})
	w.desc = desc
	out := w.judge(x, err)
	w.count("capture", out)
	w.closeTemps(c)
	if out != "ok" {
		return
	}
	gm := &srGraph{name: w.name("captured graph"), g: g, nodes: []srNode{{eff: c.effs}}}
	gm.obj = newSrObj(gm.name, ErrClosed)
	w.addGraph(gm)
	w.desc = desc + ": reading back what it captured"
	w.tookNone(r, c)
	if r.IntN(2) == 0 {
		if x := w.instantiate(r, gm); x != nil {
			w.launch(r, x)
		}
	}
}

// opCaptureInto captures work into a built graph (Graph.Capture), after
// its last node.
func (w *srWorker) opCaptureInto(r *rand.Rand) {
	g := w.pickGraph(r, func(g *srGraph) bool { return g.built && len(g.nodes) < 12 })
	if g == nil {
		if g = w.newGraph(); g == nil {
			return
		}
	}
	s := w.captureStream(r)
	if s == nil {
		return
	}
	c := &srCapture{streams: []*srStream{s}}
	ops := r.IntN(6)
	deps := w.deps(r, g)
	w.desc = fmt.Sprintf("capture %d operations on %s into %s after %d nodes", ops, s.obj.name, g.name, len(deps))
	desc := w.desc
	x := w.expect(g.obj, s.obj)
	var sinks []GraphNode
	err := w.capturing(func() (err error) {
		sinks, err = g.g.Capture(s.s, CaptureRelaxed, deps, w.captureBody(r, c, ops, desc))
		return err
	})
	w.desc = desc
	out := w.judge(x, err)
	w.count("capture into", out)
	w.closeTemps(c)
	if out != "ok" {
		return
	}
	g.nodes = append(g.nodes, srNode{sinks: sinks, eff: c.effs})
	w.desc = desc + ": reading back what it captured"
	w.tookNone(r, c)
}

// captureStream returns a stream of the goroutine's to capture: not its
// home stream, on which it reads.
func (w *srWorker) captureStream(r *rand.Rand) *srStream {
	if s := srPick(r, w.work, nil); s != nil {
		return s
	}
	return w.newStream(r)
}

// capturing runs begin, which captures, counted as a capture of the
// program in progress.
func (w *srWorker) capturing(begin func() error) error {
	// capActive before capGen, which expect reads first: an operation that
	// a capture overlaps sees either its count or its generation.
	w.wd.capActive.Add(1)
	w.wd.capGen.Add(1)
	w.inCapture = true
	defer func() {
		w.inCapture = false
		w.wd.capActive.Add(-1)
	}()
	return begin()
}

// captureBody returns the function a capture runs: ops operations on the
// streams of c, which then rejoin the first.
func (w *srWorker) captureBody(r *rand.Rand, c *srCapture, ops int, desc string) func() error {
	return func() error {
		for range ops {
			w.capturedOp(r, c)
		}
		s := c.streams[0]
		for _, o := range c.streams[1:] {
			w.desc = fmt.Sprintf("%s rejoins %s's capture", o.obj.name, s.obj.name)
			w.judge(w.expect(s.obj, o.obj), s.s.WaitStream(o.s))
		}
		w.desc = desc
		return nil
	}
}

func (w *srWorker) closeTemps(c *srCapture) {
	for _, e := range c.temps {
		w.judge(w.expect(), e.Close())
	}
}

// tookNone checks, some of the time, blocks the capture c wrote: it took
// the work and did none of it.
func (w *srWorker) tookNone(r *rand.Rand, c *srCapture) {
	for _, e := range c.effs {
		if e.kind != srShared && e.dst.obj.state.Load() == srOpen && r.IntN(3) == 0 {
			w.check(e.dst, "capture")
		}
	}
}

// capturedOp does an operation on a stream of the capture c: work the
// capture takes, a stream that joins it, or what it must refuse.
func (w *srWorker) capturedOp(r *rand.Rand, c *srCapture) {
	on := c.streams[r.IntN(len(c.streams))]
	var x *srExpect
	var err error
	var eff []srEffect
	refusal := false
	switch n := r.IntN(20); {
	case n < 5:
		b := w.pickBlock(r, nil)
		if b == nil {
			return
		}
		k, off, n, v := srFillArgs(r, b)
		prefixes, _ := srSteps(v, n)
		w.desc = fmt.Sprintf("captured: fill %d %s at %d of %s with % x on %s", n, k.name, off, b.name, v, on.obj.name)
		x = w.expect(b.obj, on.obj)
		x.capturing = prefixes != nil // its first step copies from pageable memory
		refusal = x.capturing
		err = func() error {
			p, err := b.p.Add(off)
			if err != nil {
				return err
			}
			return k.fill(p, n, v, on.s, true)
		}()
		eff = []srEffect{{kind: srSet, dst: b, off: off, n: n * k.size, pat: v, desc: fmt.Sprintf("captured fill %d %s at %d", n, k.name, off)}}
	case n < 9:
		dst := w.pickBlock(r, nil)
		if dst == nil {
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
		w.desc = fmt.Sprintf("captured: copy %d bytes from %s at %d to %s at %d on %s", n, src.name, soff, dst.name, doff, on.obj.name)
		x = w.expect(dst.obj, src.obj, on.obj)
		err = func() error {
			d, err := dst.p.Add(doff)
			if err != nil {
				return err
			}
			sp, err := src.p.Add(soff)
			if err != nil {
				return err
			}
			if r.IntN(2) == 0 {
				return d.CopyFromDeviceAsync(on.s, sp, n)
			}
			if unit == 4 {
				return srCopyArrays[float32](d, sp, n/4, on.s)
			}
			return srCopyArrays[byte](d, sp, n, on.s)
		}()
		eff = []srEffect{{kind: srCopy, dst: dst, off: doff, src: src, soff: soff, n: n,
			desc: fmt.Sprintf("captured copy %d bytes at %d from %s at %d", n, doff, src.name, soff)}}
	case n < 13:
		l, ok := w.axpyArgs(r)
		if !ok {
			return
		}
		w.desc = fmt.Sprintf("captured: %v on %s", l, on.obj.name)
		x = w.expect(l.y.obj, l.x.obj, on.obj)
		err = func() error {
			args, err := l.args(r)
			if err != nil {
				return err
			}
			return w.wd.k.Launch(on.s, l.cfg, args...)
		}()
		eff = []srEffect{l.effect()}
	case n < 15:
		e := w.pickExec(r)
		if e == nil {
			return
		}
		w.desc = fmt.Sprintf("captured: launch %s on %s", e.name, on.obj.name)
		x = w.expect(e.obj, on.obj)
		err = e.x.Launch(on.s)
		eff = srEffects(e.nodes)
	case n < 17:
		other := srPick(r, w.work, func(s *srStream) bool { return !slices.Contains(c.streams, s) })
		if other == nil {
			return
		}
		if r.IntN(2) == 0 {
			w.desc = fmt.Sprintf("captured: %s joins by waiting for %s", other.obj.name, on.obj.name)
			x = w.expect(on.obj, other.obj)
			err = other.s.WaitStream(on.s)
		} else {
			w.desc = fmt.Sprintf("captured: %s joins by waiting for an event recorded on %s", other.obj.name, on.obj.name)
			x = w.expect()
			e, err := NewEvent(0, &EventOptions{DisableTiming: true})
			if w.judge(x, err) != "ok" {
				return
			}
			c.temps = append(c.temps, e)
			w.judge(w.expect(on.obj), e.Record(on.s))
			x = w.expect(other.obj)
			err = other.s.WaitEvent(e)
		}
		if w.judge(x, err) == "ok" {
			c.streams = append(c.streams, other)
			w.count("captured join", "ok")
		}
		return
	case n < 18:
		b := w.pickBlock(r, nil)
		if b == nil {
			return
		}
		w.desc = fmt.Sprintf("captured: copy %d bytes of Go memory to %s on %s", b.size, b.name, on.obj.name)
		x = w.expect(b.obj, on.obj)
		x.capturing, refusal = true, true
		err = CopyFromHostAsync(on.s, b.p, make([]byte, b.size))
	case n < 19:
		b := w.pickBlock(r, nil)
		if b == nil {
			return
		}
		w.desc = fmt.Sprintf("captured: a memset of %s on the legacy default stream", b.name)
		x = w.expect(b.obj)
		x.sync, refusal = true, true
		if r.IntN(2) == 0 {
			err = b.p.Memset(0x22, b.size)
		} else {
			err = CopyFromHost(b.p, make([]byte, b.size))
		}
	case r.IntN(2) == 0:
		w.desc = "captured: AllocAsync on " + on.obj.name
		x = w.expect(on.obj)
		x.capturing, refusal = true, true
		var p MemoryPointer
		if p, err = AllocAsync(on.s, 64); err == nil {
			p.Free()
		}
	default:
		w.desc = "captured: synchronize " + on.obj.name
		x = w.expect(on.obj)
		x.capturing, refusal = true, true
		err = on.s.Synchronize()
	}
	out := w.judge(x, err)
	if refusal {
		w.count("capture refusal", out)
	} else {
		w.count("captured op", out)
	}
	if out == "ok" {
		c.effs = append(c.effs, eff...)
	}
}

// addGraph adds g to the goroutine's graphs, closing the oldest of its
// kind (captured, built) where it has 3.
func (w *srWorker) addGraph(g *srGraph) {
	var same []*srGraph
	for _, h := range w.graphs {
		if h.built == g.built {
			same = append(same, h)
		}
	}
	if len(same) >= 3 {
		w.closeGraph(same[0])
	}
	w.graphs = append(w.graphs, g)
}

func (w *srWorker) closeGraph(g *srGraph) {
	w.desc = "close " + g.name
	w.count("graph close", w.judge(w.expect(g.obj), w.bounded("Close of "+g.name, g.g.Close)))
	g.obj.state.Store(srClosed)
	w.graphs = slices.DeleteFunc(w.graphs, func(h *srGraph) bool { return h == g })
	w.deadGraphs = append(w.deadGraphs, g)
	if len(w.deadGraphs) > 4 {
		w.deadGraphs = w.deadGraphs[1:]
	}
}

func (w *srWorker) closeExec(e *srExec) {
	w.desc = "close " + e.name
	w.count("exec close", w.judge(w.expect(e.obj), w.bounded("Close of "+e.name, e.x.Close)))
	e.obj.state.Store(srClosed)
	w.execs = slices.DeleteFunc(w.execs, func(f *srExec) bool { return f == e })
	w.deadExecs = append(w.deadExecs, e)
	if len(w.deadExecs) > 4 {
		w.deadExecs = w.deadExecs[1:]
	}
}

// pickGraph returns a graph of the goroutine's that ok accepts, one time
// in 12 a closed one.
func (w *srWorker) pickGraph(r *rand.Rand, ok func(*srGraph) bool) *srGraph {
	if r.IntN(12) == 0 {
		if g := srPick(r, w.deadGraphs, ok); g != nil {
			return g
		}
	}
	return srPick(r, w.graphs, ok)
}

// pickExec returns an instantiation: of the goroutine's, one time in 12 a
// closed one, or one time in 5 the shared one, which another goroutine
// closes.
func (w *srWorker) pickExec(r *rand.Rand) *srExec {
	switch n := r.IntN(60); {
	case n < 12:
		return w.wd.exec
	case n < 17:
		if e := srPick(r, w.deadExecs, nil); e != nil {
			return e
		}
	}
	return srPick(r, w.execs, nil)
}

func (w *srWorker) newGraph() *srGraph {
	name := w.name("built graph")
	w.desc = "new graph"
	x := w.expect()
	g, err := NewGraph(0)
	out := w.judge(x, err)
	w.count("graph new", out)
	if out != "ok" {
		return nil
	}
	gm := &srGraph{name: name, g: g, obj: newSrObj(name, ErrClosed), built: true}
	w.addGraph(gm)
	return gm
}

// deps returns the nodes a new node of g comes after: the last one, or
// all, so that g's nodes run in the order they were added, as the model
// does them.
func (w *srWorker) deps(r *rand.Rand, g *srGraph) []GraphNode {
	if r.IntN(4) == 0 {
		var deps []GraphNode
		for _, n := range g.nodes {
			for _, d := range n.after() {
				if !slices.Contains(deps, d) { // an empty capture's sinks are its dependencies
					deps = append(deps, d)
				}
			}
		}
		return deps
	}
	for i := len(g.nodes) - 1; i >= 0; i-- {
		if after := g.nodes[i].after(); len(after) > 0 {
			return after
		}
	}
	return nil
}

// srMemsetNode reports whether a memset node takes elements of v's bytes:
// 1, 2 or 4 bytes, or bytes all equal, or 4 bytes repeated.
func srMemsetNode(v []byte) bool {
	prefixes, words := srSteps(v, 1)
	return len(v) <= 4 && len(v) != 3 || prefixes == nil && words == 0
}

func (w *srWorker) opGraph(r *rand.Rand) {
	switch r.IntN(15) {
	case 0:
		w.newGraph()
	case 1, 2, 3, 4:
		w.addNode(r)
	case 5:
		w.addChild(r)
	case 6, 7:
		g := w.pickGraph(r, nil)
		if r.IntN(5) == 0 || g == nil {
			g = w.wd.graph
		}
		w.instantiate(r, g)
	case 8, 9:
		if e := w.pickExec(r); e != nil {
			w.launch(r, e)
		}
	case 10:
		w.opCaptureInto(r)
	case 11, 12:
		w.setKernelArgs(r)
		if e := srPick(r, w.execs, nil); e != nil && r.IntN(2) == 0 {
			w.launch(r, e)
		}
	case 13:
		if g := srPick(r, w.graphs, nil); g != nil {
			w.closeGraph(g)
		}
	default:
		if e := srPick(r, w.execs, nil); e != nil {
			w.closeExec(e)
		}
	}
}

// addNode adds a memset, kernel, copy or empty node to a built graph.
func (w *srWorker) addNode(r *rand.Rand) {
	g := w.pickGraph(r, func(g *srGraph) bool { return g.built && len(g.nodes) < 12 })
	if g == nil {
		if g = w.newGraph(); g == nil {
			return
		}
	}
	deps := w.deps(r, g)
	x := w.expect(g.obj)
	if r.IntN(25) == 0 {
		other := srPick(r, w.graphs, func(h *srGraph) bool { return h != g && h.built && len(w.deps(r, h)) > 0 })
		if other != nil {
			deps = append(deps, w.deps(r, other)[0])
			x.invalid = true
		}
	}
	var node GraphNode
	var err error
	var eff []srEffect
	var kind string
	kernel := false
	switch r.IntN(8) {
	case 0, 1:
		kind = "node memset"
		b := w.pickBlock(r, nil)
		if b == nil {
			return
		}
		k, off, n, v := srFillArgs(r, b)
		w.desc = fmt.Sprintf("add a memset node of %d %s at %d of %s to % x to %s", n, k.name, off, b.name, v, g.name)
		x.objs, x.before = append(x.objs, b.obj), append(x.before, b.obj.state.Load())
		x.invalid = x.invalid || !srMemsetNode(v)
		node, err = func() (GraphNode, error) {
			p, err := b.p.Add(off)
			if err != nil {
				return GraphNode{}, err
			}
			return k.node(g.g, deps, p, n, v)
		}()
		eff = []srEffect{{kind: srSet, dst: b, off: off, n: n * k.size, pat: v, desc: fmt.Sprintf("memset node %d %s at %d", n, k.name, off)}}
	case 2, 3, 4:
		kind, kernel = "node kernel", true
		l, ok := w.axpyArgs(r)
		if !ok {
			return
		}
		w.desc = fmt.Sprintf("add a kernel node, %v, to %s", l, g.name)
		x.objs, x.before = append(x.objs, l.x.obj, l.y.obj), append(x.before, l.x.obj.state.Load(), l.y.obj.state.Load())
		node, err = func() (GraphNode, error) {
			args, err := l.args(r)
			if err != nil {
				return GraphNode{}, err
			}
			return g.g.AddKernel(deps, w.wd.k, l.cfg, args...)
		}()
		eff = []srEffect{l.effect()}
	case 5, 6:
		kind = "node copy"
		dst := w.pickBlock(r, nil)
		if dst == nil {
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
		w.desc = fmt.Sprintf("add a copy node of %d bytes from %s at %d to %s at %d to %s", n, src.name, soff, dst.name, doff, g.name)
		x.objs, x.before = append(x.objs, dst.obj, src.obj), append(x.before, dst.obj.state.Load(), src.obj.state.Load())
		node, err = func() (GraphNode, error) {
			d, err := dst.p.Add(doff)
			if err != nil {
				return GraphNode{}, err
			}
			sp, err := src.p.Add(soff)
			if err != nil {
				return GraphNode{}, err
			}
			if unit == 4 {
				return srCopyNode[float32](g.g, deps, d, sp, n/4)
			}
			return srCopyNode[byte](g.g, deps, d, sp, n)
		}()
		eff = []srEffect{{kind: srCopy, dst: dst, off: doff, src: src, soff: soff, n: n,
			desc: fmt.Sprintf("copy node %d bytes at %d from %s at %d", n, doff, src.name, soff)}}
	default:
		kind = "node empty"
		w.desc = fmt.Sprintf("add an empty node after %d nodes to %s", len(deps), g.name)
		node, err = g.g.AddEmpty(deps...)
	}
	out := w.judge(x, err)
	w.count(kind, out)
	if out == "ok" {
		g.nodes = append(g.nodes, srNode{node: node, eff: eff, kernel: kernel})
	}
}

// srCopyNode adds a copy node of n elements from src to dst.
func srCopyNode[T any](g *Graph, deps []GraphNode, dst, src MemoryPointer, n int) (GraphNode, error) {
	d, err := ArrayOf[T](dst, n)
	if err != nil {
		return GraphNode{}, err
	}
	s, err := ArrayOf[T](src, n)
	if err != nil {
		return GraphNode{}, err
	}
	return AddCopy(g, deps, d, s)
}

// addChild adds a child graph node to a built graph: another graph of
// the goroutine's, the shared graph, or, refused, the graph itself.
func (w *srWorker) addChild(r *rand.Rand) {
	g := w.pickGraph(r, func(g *srGraph) bool { return g.built && len(g.nodes) < 12 })
	if g == nil {
		return
	}
	var child *srGraph
	switch n := r.IntN(20); {
	case n < 1:
		child = g
	case n < 6:
		child = w.wd.graph
	default:
		if child = w.pickGraph(r, func(h *srGraph) bool { return h != g }); child == nil {
			return
		}
	}
	w.desc = fmt.Sprintf("add %s to %s as a child graph node", child.name, g.name)
	x := w.expect(g.obj, child.obj)
	x.invalid = child == g
	node, err := g.g.AddGraph(w.deps(r, g), child.g)
	out := w.judge(x, err)
	w.count("node child", out)
	if out == "ok" {
		g.nodes = append(g.nodes, srNode{node: node, eff: srEffects(child.nodes)})
	}
}

// instantiate instantiates g, uploading it on a stream one time in 4.
func (w *srWorker) instantiate(r *rand.Rand, g *srGraph) *srExec {
	var opts *InstantiateOptions
	var s *srStream
	if r.IntN(4) == 0 {
		s = w.pickAnyStream(r)
		opts = &InstantiateOptions{Upload: s.s}
	}
	name := w.name("instantiation")
	w.desc = fmt.Sprintf("instantiate %s (upload on %v)", g.name, s)
	x := w.expect(g.obj, s.state())
	xe, err := g.g.Instantiate(opts)
	out := w.judge(x, err)
	w.count("instantiate", out)
	if out != "ok" {
		return nil
	}
	e := &srExec{name: name + " of " + g.name, x: xe, obj: newSrObj(name, ErrClosed), graph: g, nodes: slices.Clone(g.nodes)}
	if len(w.execs) >= 5 {
		w.closeExec(w.execs[0])
	}
	w.execs = append(w.execs, e)
	return e
}

// launch launches e and, where that works, does its work on the model.
func (w *srWorker) launch(r *rand.Rand, e *srExec) {
	s := w.pickStream(r)
	w.desc = fmt.Sprintf("launch %s on %v", e.name, s)
	x := w.expect(e.obj, s.state())
	x.sync = s == nil
	out := w.judge(x, e.x.Launch(s.stream()))
	if e.graph.shared {
		w.count("launch shared", out)
	} else {
		w.count("launch", out)
	}
	if out == "ok" {
		for _, eff := range srEffects(e.nodes) {
			w.apply(eff)
		}
	}
}

// setKernelArgs gives a kernel node of an instantiation of a built graph
// new arguments.
func (w *srWorker) setKernelArgs(r *rand.Rand) {
	hasKernel := func(e *srExec) bool { return slices.ContainsFunc(e.nodes, func(n srNode) bool { return n.kernel }) }
	e := srPick(r, w.execs, hasKernel)
	if r.IntN(10) == 0 {
		if d := srPick(r, w.deadExecs, hasKernel); d != nil {
			e = d
		}
	}
	if e == nil {
		// Instantiate a built graph with a kernel node.
		g := srPick(r, w.graphs, func(g *srGraph) bool { return slices.ContainsFunc(g.nodes, func(n srNode) bool { return n.kernel }) })
		if g == nil {
			return
		}
		if e = w.instantiate(r, g); e == nil {
			return
		}
	}
	var ks []int
	for i, n := range e.nodes {
		if n.kernel {
			ks = append(ks, i)
		}
	}
	i := ks[r.IntN(len(ks))]
	l, ok := w.axpyArgs(r)
	if !ok {
		return
	}
	w.desc = fmt.Sprintf("set the arguments of kernel node %d of %s: %v", i, e.name, l)
	x := w.expect(e.obj, e.graph.obj, l.x.obj, l.y.obj)
	err := func() error {
		args, err := l.args(r)
		if err != nil {
			return err
		}
		return e.x.SetKernelArgs(e.nodes[i].node, w.wd.k, l.cfg, args...)
	}()
	out := w.judge(x, err)
	w.count("set kernel args", out)
	if out == "ok" {
		e.nodes = slices.Clone(e.nodes)
		e.nodes[i].eff = []srEffect{l.effect()}
		// e holds the memory its new arguments name.
		if r.IntN(2) == 0 && slices.Contains(w.blocks, l.y) {
			w.freeHeld(r, e, l.y)
		}
	}
}
