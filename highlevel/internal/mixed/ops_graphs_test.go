package mixed

import (
	"errors"
	"fmt"

	"github.com/gocuda/cuda/highlevel"
)

// The kinds of captures and graphs: capture and gexec (and write's graphs,
// in ops_blocks_test.go).

// instantiate instantiates g with options drawn at random: each flag now
// and then, Upload on the goroutine's own stream; never DeviceLaunch, whose
// limits TestGPURandomOps tries. It reports whether it worked.
func (w *worker) instantiate(g *highlevel.Graph) (*highlevel.GraphExec, bool) {
	var opts *highlevel.InstantiateOptions
	if w.r.IntN(3) != 0 {
		opts = &highlevel.InstantiateOptions{AutoFreeOnLaunch: w.r.IntN(3) == 0, UseNodePriority: w.r.IntN(2) == 0}
		if w.r.IntN(3) == 0 {
			opts.Upload = w.own.s
		}
	}
	var x *highlevel.GraphExec
	err := retry(&w.op, func() (err error) {
		x, err = g.Instantiate(opts)
		return err
	})
	return x, w.ok(err, aCapGlobal, "Graph.Instantiate with %+v", opts)
}

// launched accounts for a launch of a graph with a host node or none: the
// host function runs once if the launch worked, and may have if it failed
// otherwise than by ErrClosed.
func (w *worker) launched(err error, host bool) {
	n := int64(0)
	if host {
		n = 1
	}
	switch {
	case err == nil:
		w.note("graphs launched")
		w.hostWant.Add(n)
	case !errors.Is(err, highlevel.ErrClosed):
		w.hostMaybe.Add(n)
	}
}

// capture captures, in a mode drawn at random, on a shared non-blocking
// stream (which the others wait for, close and replace meanwhile) or the
// goroutine's own: a fill of a span of the goroutine's target; maybe a
// fill of another span on its second stream, forked from the capture with
// an event and joined back; maybe a memset; maybe a host function. Then it
// instantiates the graph, launches it on any stream, closes the graph and
// its instantiation before the launch is done or after, and checks the
// target. A capture that fails leaves the target as it was: CUDA ran
// nothing of it.
func (w *worker) capture() {
	rs := w.own
	if w.r.IntN(3) != 0 {
		rs = w.capturable()
	}
	mode := w.mode()
	i := w.r.IntN(targetWords)
	j := i + 1 + w.r.IntN(targetWords-i)
	v := w.r.Uint32()
	fork := w.r.IntN(3) == 0
	fi := w.r.IntN(targetWords)
	fj := fi + 1 + w.r.IntN(targetWords-fi)
	fv := w.r.Uint32()
	memset := w.r.IntN(4) == 0
	mi := i + w.r.IntN(j-i)
	mj := mi + 1 + w.r.IntN(j-mi)
	mb := byte(w.r.Uint32())
	host := w.r.IntN(2) == 0
	direct := w.r.IntN(3) == 0
	var events []*highlevel.Event
	forked := false
	g, err := w.captureOn(rs, mode, direct, func(s *highlevel.Stream) error {
		if err := w.fillTarget(s, i, j, v); err != nil {
			return err
		}
		if fork {
			forked = true
			e, err := recordNew(s)
			if err != nil {
				return err
			}
			events = append(events, e)
			if err := w.own2.s.WaitEvent(e); err != nil {
				return err
			}
			if err := w.fillTarget(w.own2.s, fi, fj, fv); err != nil {
				return err
			}
			e2, err := recordNew(w.own2.s)
			if err != nil {
				return err
			}
			events = append(events, e2)
			if err := s.WaitEvent(e2); err != nil {
				return err
			}
		}
		if memset {
			p, _ := w.target.Add(4 * mi)
			if err := p.MemsetAsync(s, mb, 4*(mj-mi)); err != nil {
				return err
			}
		}
		if host {
			return s.LaunchHostFunc(func() { w.hostRan.Add(1) })
		}
		return nil
	})
	for _, e := range events {
		w.ok(e.Close(), 0, "Event.Close of a fork's event")
	}
	if forked && err != nil {
		// The second stream took part in a capture that failed: start
		// afresh rather than depend on what CUDA left of its state.
		w.replaceOwn2()
	}
	w.note(fmt.Sprintf("captures %v ok %v", mode, err == nil))
	if !w.ok(err, aClosed|aCapStatus|aCapGlobal, "capture in %v mode on %s (direct %v, fork %v, memset %v, host %v)",
		mode, rs.what, direct, fork, memset, host) {
		return
	}
	x, ok := w.instantiate(g)
	if !ok {
		w.ok(g.Close(), 0, "Graph.Close")
		return
	}
	closeAll := func() {
		if w.r.IntN(2) == 0 {
			w.ok(x.Close(), 0, "GraphExec.Close")
			w.ok(g.Close(), 0, "Graph.Close")
		} else {
			w.ok(g.Close(), 0, "Graph.Close")
			w.ok(x.Close(), 0, "GraphExec.Close")
		}
	}
	early := w.r.IntN(2) == 0
	on := w.anyStream()
	waited, err := w.queueAndWait(on, func(s *highlevel.Stream) error {
		err := x.Launch(s)
		if early {
			closeAll() // the launch runs to its end
		}
		return err
	})
	w.launched(err, host)
	if !early {
		closeAll()
	}
	model := func(i, j int, v uint32) {
		switch {
		case err == nil && waited:
			w.setTarget(i, j, int64(v))
		case err != nil && outcome(err) == wroteNothing:
		default:
			w.setTarget(i, j, -1)
		}
	}
	model(i, j, v)
	if fork {
		model(fi, fj, fv)
	}
	if memset {
		model(mi, mj, uint32(mb)*0x01010101)
	}
	if !w.ok(err, on.allow()|aCapGlobal, "GraphExec.Launch on %s", on.what) {
		return
	}
	lo, hi := i, j
	if fork {
		lo, hi = min(lo, fi), max(hi, fj)
	}
	w.checkTarget(lo, hi, "a graph's launch")
}

// fillTarget queues the fill of words i to j-1 of the goroutine's target
// with v on s.
func (w *worker) fillTarget(s *highlevel.Stream, i, j int, v uint32) error {
	p, _ := w.target.Add(4 * i)
	return w.k.fill.Launch(s, grid(j-i), p, v, int32(j-i))
}

// replaceOwn2 replaces the goroutine's second stream.
func (w *worker) replaceOwn2() {
	s, err := highlevel.NewStream(w.d, &highlevel.StreamOptions{NonBlocking: true, Priority: -1})
	if !w.ok(err, 0, "NewStream") {
		return
	}
	old := w.own2
	w.own2 = &stream{s: s, what: "the goroutine's second stream", capturable: true}
	w.ok(old.s.Close(), 0, "Stream.Close of the goroutine's second stream after a failed capture")
}

// sharedGraph captures, on the goroutine's own stream in a mode drawn at
// random, a fill of all of the shared target and a host function (shape
// 0) or a memset of its first 256 words (shape 1); the target allows the
// values first.
func (w *worker) sharedGraph(shape int) *highlevel.Graph {
	tg := w.graphTarget
	v, b := w.r.Uint32(), byte(w.r.Uint32())
	tg.allowValue(v)
	if shape == 1 {
		tg.allowValue(uint32(b) * 0x01010101)
	}
	mode := w.mode()
	g, err := w.captureOn(w.own, mode, w.r.IntN(3) == 0, func(s *highlevel.Stream) error {
		if err := w.k.fill.Launch(s, grid(tg.n), tg.p, v, int32(tg.n)); err != nil {
			return err
		}
		if shape == 0 {
			return s.LaunchHostFunc(func() { w.hostRan.Add(1) })
		}
		return tg.p.MemsetAsync(s, b, 1024)
	})
	if !w.ok(err, aClosed|aCapStatus|aCapGlobal, "capture in %v mode of a shared graph of shape %d", mode, shape) {
		return nil
	}
	return g
}

// newExec makes a shared GraphExec of a shape drawn at random.
func (w *worker) newExec() *sharedExec {
	shape := w.r.IntN(2)
	g := w.sharedGraph(shape)
	if g == nil {
		return nil
	}
	x, ok := w.instantiate(g)
	w.ok(g.Close(), 0, "Graph.Close of a shared graph") // its instantiation stays usable
	if !ok {
		return nil
	}
	return &sharedExec{x: x, hostNodes: 1 - shape}
}

// gexec works on the GraphExecs the goroutines share: launches one on any
// stream (uploaded first now and then), updates one with a graph of its
// shape, replaces one with a new instantiation and closes the old, closes
// one, or checks the target they write. Each meets the others' launches,
// updates and closes of the same GraphExec.
func (w *worker) gexec() {
	slot := w.r.IntN(len(w.execs))
	w.mu.Lock()
	ex := w.execs[slot]
	w.mu.Unlock()
	act := w.r.IntN(10)
	if ex == nil && act < 6 {
		act = 6
	}
	switch {
	case act < 4:
		rs := w.anyStream()
		upload := w.r.IntN(4) == 0
		err := rs.queue(func(s *highlevel.Stream) error {
			if upload {
				if err := ex.x.Upload(s); err != nil {
					return err
				}
			}
			return ex.x.Launch(s)
		})
		w.launched(err, ex.hostNodes == 1)
		w.ok(err, rs.allow()|aCapGlobal, "Launch of a shared GraphExec (uploaded first %v) on %s", upload, rs.what)
	case act < 6:
		g := w.sharedGraph(1 - ex.hostNodes)
		if g == nil {
			return
		}
		if w.ok(ex.x.Update(g), aClosed|aCapGlobal, "GraphExec.Update of a shared GraphExec") {
			w.note("shared GraphExecs updated")
		}
		w.ok(g.Close(), 0, "Graph.Close of an update's graph")
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
			w.ok(old.x.Close(), 0, "GraphExec.Close of a replaced shared GraphExec")
		}
		w.note("shared GraphExecs replaced")
	case act == 8:
		w.mu.Lock()
		old := w.execs[slot]
		w.execs[slot] = nil
		w.mu.Unlock()
		if old != nil {
			w.ok(old.x.Close(), 0, "GraphExec.Close of a shared GraphExec")
		}
	default:
		w.verifyTarget()
	}
}
