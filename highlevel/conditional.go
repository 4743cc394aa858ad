package highlevel

import (
	"fmt"
	"sync"

	"github.com/gocuda/cuda/cudadrv"

	"github.com/gocuda/cuda/highlevel/internal/driver"
)

// A Conditional is the value a graph's conditional nodes test
// (CUgraphConditionalHandle). A kernel of the graph sets it on the device:
// it takes the Conditional as an argument of type
// cudaGraphConditionalHandle (an unsigned long long) and calls
// cudaGraphSetConditional(handle, value) (from cuda_device_runtime_api.h,
// which Compile finds), so that a loop runs until the device says stop,
// with no round trip to the host.
type Conditional uint64

// NewConditional makes a Conditional for a conditional node of g (for a
// node in a body, call it on the body). With reset, each launch of the
// graph starts with it set to value (CU_GRAPH_COND_ASSIGN_DEFAULT);
// without, its value at a launch's start is not defined: a kernel of the
// graph must set it before the node tests it. Conditionals need CUDA 12.3:
// on an older driver it returns a *DriverVersionError.
func (g *Graph) NewConditional(value uint32, reset bool) (_ Conditional, err error) {
	defer wrap(&err, "new conditional")
	t, _, err := g.build(nil)
	if err != nil {
		return 0, err
	}
	defer t.end()
	var flags uint32
	if reset {
		flags = uint32(cudadrv.GRAPH_COND_ASSIGN_DEFAULT)
	}
	var h uint64
	err = check("cuGraphConditionalHandleCreate", driver.GraphConditional(g.ctx, &h, uintptr(g.h), value, flags))
	return Conditional(h), err
}

// Conditional node types (CUgraphConditionalNodeType).
const (
	condIf     = 0
	condWhile  = 1
	condSwitch = 2
)

// AddIf adds a node that runs its body, built node by node as a graph
// is, once when c is not 0 at the node's turn.
func (g *Graph) AddIf(deps []GraphNode, c Conditional) (GraphNode, *Graph, error) {
	n, bodies, err := g.addConditional(deps, c, condIf, 1, 12030, "if")
	if err != nil {
		return GraphNode{}, nil, err
	}
	return n, bodies[0], nil
}

// AddIfElse adds a node that runs its first body when c is not 0 at the
// node's turn, else its second. It needs CUDA 12.8: on an older driver it
// returns a *DriverVersionError.
func (g *Graph) AddIfElse(deps []GraphNode, c Conditional) (_ GraphNode, then, els *Graph, err error) {
	n, bodies, err := g.addConditional(deps, c, condIf, 2, 12080, "if/else")
	if err != nil {
		return GraphNode{}, nil, nil, err
	}
	return n, bodies[0], bodies[1], nil
}

// AddWhile adds a node that runs its body while c is not 0: it tests c at
// its turn and after each run of the body, which a kernel of the body sets
// to 0 to end the loop.
func (g *Graph) AddWhile(deps []GraphNode, c Conditional) (GraphNode, *Graph, error) {
	n, bodies, err := g.addConditional(deps, c, condWhile, 1, 12030, "while")
	if err != nil {
		return GraphNode{}, nil, err
	}
	return n, bodies[0], nil
}

// AddSwitch adds a node with n bodies that runs body c at its turn, and
// none when c is n or more. It needs CUDA 12.8: on an older driver it
// returns a *DriverVersionError.
func (g *Graph) AddSwitch(deps []GraphNode, c Conditional, n int) (GraphNode, []*Graph, error) {
	return g.addConditional(deps, c, condSwitch, n, 12080, "switch")
}

// addConditional adds a conditional node of typ with size bodies, which
// the driver makes, after checking that the driver is of version need or
// later.
func (g *Graph) addConditional(deps []GraphNode, c Conditional, typ, size, need int, what string) (_ GraphNode, _ []*Graph, err error) {
	defer wrap(&err, "add "+what+" node")
	t, hs, err := g.build(deps)
	if err != nil {
		return GraphNode{}, nil, err
	}
	defer t.end()
	if v, err := DriverVersion(); err != nil {
		return GraphNode{}, nil, err
	} else if v < need {
		return GraphNode{}, nil, &DriverVersionError{Function: fmt.Sprintf("cuGraphAddNode (%s)", what), Needed: need, Driver: v}
	}
	switch {
	case c == 0:
		return GraphNode{}, nil, invalid("highlevel: the zero Conditional (make one with Graph.NewConditional)")
	case size < 1 || size > 1<<20:
		return GraphNode{}, nil, invalid("highlevel: a switch of %d bodies", size)
	}
	hb := make([]uintptr, size)
	var n uintptr
	if err := check("cuGraphAddNode", driver.GraphAddConditional(g.ctx, &n, uintptr(g.h), depsPtr(hs), uintptr(len(hs)),
		uint64(c), int32(typ), uint32(size), &hb[0])); err != nil {
		return GraphNode{}, nil, err
	}
	bodies := make([]*Graph, size)
	for i, h := range hb {
		if h == 0 {
			return GraphNode{}, nil, fmt.Errorf("highlevel: cuGraphAddNode gave no graph for body %d of %d", i, size)
		}
		bodies[i] = &Graph{h: cudadrv.Graph(h), dev: g.dev, ctx: g.ctx, parent: g}
	}
	ds, err := g.dev.state()
	if err != nil {
		return GraphNode{}, nil, err
	}
	t.keep(&ds.turns)
	return t.made(g, n, hs), bodies, nil
}

// condTurns orders the launches of a device's graphs with conditional
// nodes, one after the other. CUDA calls concurrent calls of
// cudaGraphSetConditional undefined (cuda_device_runtime_api.h), and
// graphs with while nodes running at once on an H200 (driver 580.159.04,
// 2026-12-02) ended in CUDA_ERROR_LAUNCH_FAILED within a thousand
// launches, from 8 threads of a C program as from Go, where the same
// launches ordered by an event ran clean (testdata/whilefault.c); so a
// launch waits for the device's last one, where it was on another stream,
// by an event recorded after each. On that driver a while node also
// failed beside kernels or memsets on four other streams, which no
// ordering short of the whole device's would prevent: docs/graphs.md says
// so.
//
// A graph with a conditional node holds its device's condTurns as it holds
// memory, so that the graphs it is copied into (AddGraph), captured into
// (a launch during a capture) and instantiated as hold it too:
// GraphExec.Launch takes a turn for those.
type condTurns struct {
	mu   sync.Mutex
	ev   uintptr // recorded after the last launch; made by the first
	last *Stream // where the last launch was
	any  bool    // a launch was recorded
}

func (*condTurns) hold()   {}
func (*condTurns) unhold() {}

// launch launches x on s, entered as sh, after the device's last launch of
// a graph with conditional nodes.
func (c *condTurns) launch(x *GraphExec, s *Stream, sh uintptr) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ev == 0 {
		if err := check("cuEventCreate", driver.EventCreate(x.ctx, &c.ev, uint32(cudadrv.EVENT_DISABLE_TIMING))); err != nil {
			c.ev = 0
			return err
		}
	}
	var wait int32
	if c.any && c.last != s { // on s, the stream orders them
		wait = 1
	}
	if err := check("cuGraphLaunch", driver.GraphLaunchAfter(x.ctx, uintptr(x.h), sh, c.ev, wait)); err != nil {
		return err
	}
	c.last, c.any = s, true
	return nil
}
