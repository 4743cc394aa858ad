package highlevel

import (
	"fmt"
	"reflect"
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/gocuda/cuda/highlevel/internal/driver"
)

// errGraphMemory is the error of a use of an allocation node's memory
// (AddAlloc) anywhere but in its graph's nodes.
var errGraphMemory = fmt.Errorf("%w: memory of a graph's allocation node, which only that graph's nodes use", ErrInvalid)

// errCapturedAlloc is the error of a launch of a graph with allocation
// nodes on a stream that captures: the captured launch would be a child
// graph node, which CUDA refuses such a graph as, as AllocAsync is
// refused there.
var errCapturedAlloc = fmt.Errorf("%w: a graph with allocation nodes launched in a capture", ErrCapturing)

// graphMemoryMade is set by the first AddAlloc: until then no node
// argument can be an allocation node's memory, and the node adds skip the
// look for it.
var graphMemoryMade atomic.Bool

// A graphMemory is what a graph with allocation nodes keeps to check the
// nodes that use their memory: the dependencies of each node added since
// its first allocation node, which nodes added before cannot come after,
// and the allocations. The graph holds it, as it holds memory, so that its
// instantiations know they have allocation nodes (GraphExec.Launch).
type graphMemory struct {
	deps   map[uintptr][]uintptr
	allocs []*graphAlloc
}

func (*graphMemory) hold()   {}
func (*graphMemory) unhold() {}

// A graphAlloc is the memory of an allocation node of graph t: node
// allocates it, the nodes users use it, each after node, and free, once
// AddFree added it, frees it, after them all.
type graphAlloc struct {
	t     *Graph
	node  uintptr
	users []uintptr
	free  uintptr
}

// made returns node h, just added to g after the nodes hs; where t, g's
// top, has allocation nodes, it records h's dependencies for the checks
// of the nodes that use their memory. t.mu is held.
func (t *Graph) made(g *Graph, h uintptr, hs []uintptr) GraphNode {
	if t.mem != nil && g == t {
		t.mem.deps[h] = slices.Clone(hs)
	}
	return GraphNode{h, g}
}

// before returns the nodes of t that come before the nodes hs, or are
// among them, of those added since its first allocation node. t.mu is held.
func (m *graphMemory) before(hs []uintptr) map[uintptr]bool {
	seen := map[uintptr]bool{}
	stack := slices.Clone(hs)
	for len(stack) > 0 {
		h := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[h] {
			continue
		}
		seen[h] = true
		stack = append(stack, m.deps[h]...)
	}
	return seen
}

// AddAlloc adds a node that allocates an array of n elements of T on g's
// device at each run, from CUDA's graph memory (cuGraphAddMemAllocNode),
// and returns the array. Its address is the same at every launch, but its
// memory is there only from the node's run to the run of the free node
// AddFree adds: the array is for the nodes of g that come after the
// allocation node, added by AddKernel, AddMemset or AddCopy, and before
// the free node, and for SetKernelArgs, SetMemset and SetCopy of those
// nodes in an instantiation. Every other use of it returns an error
// wrapping ErrInvalid: in a launch, a copy, a library's call, a node of
// another graph or of a conditional node's body, a node that does not
// come after the allocation node (which AddKernel and the others
// refuse), and its Free. AddFree must free it: Instantiate refuses a graph
// with an allocation node that no free node frees. As CUDA requires, such
// a graph has one instantiation at a time and is no child graph (AddGraph
// refuses it, and GraphExec.Launch on a stream that captures returns
// ErrCapturing).
func AddAlloc[T any](g *Graph, deps []GraphNode, n int) (_ GraphNode, _ *Array[T], err error) {
	defer wrap(&err, "add allocation node of", n, reflect.TypeFor[T]())
	if err := checkElem[T](); err != nil {
		return GraphNode{}, nil, err
	}
	t, hs, err := g.build(deps)
	if err != nil {
		return GraphNode{}, nil, err
	}
	defer t.end()
	size, err := arrayBytes[T](n, g.dev)
	switch {
	case err != nil:
		return GraphNode{}, nil, err
	case n == 0:
		return GraphNode{}, nil, invalid("highlevel: an allocation node of no elements")
	case g != t:
		return GraphNode{}, nil, invalid("highlevel: an allocation node in the body of a conditional node, which CUDA refuses")
	}
	var node uintptr
	var p unsafe.Pointer
	r := driver.GraphAddAlloc(g.ctx, &node, uintptr(g.h), depsPtr(hs), uintptr(len(hs)), int32(g.dev), uintptr(size), &p)
	if err := check("cuGraphAddMemAllocNode", r); err != nil {
		return GraphNode{}, nil, err
	}
	if t.mem == nil {
		t.mem = &graphMemory{deps: map[uintptr][]uintptr{}}
		t.keep(t.mem)
	}
	a := &graphAlloc{t: t, node: node}
	t.mem.allocs = append(t.mem.allocs, a)
	graphMemoryMade.Store(true)
	m := &Memory{ptr: p, size: size, dev: g.dev, graph: a}
	return t.made(g, node, hs), &Array[T]{p: MemoryPointer{mem: m}, n: n, owned: true}, nil
}

// AddFree adds a node that frees a, the array of an allocation node of g
// (AddAlloc), after deps, which must come after every node that uses it.
// Once added, no node may use a.
func AddFree[T any](g *Graph, deps []GraphNode, a *Array[T]) (_ GraphNode, err error) {
	defer wrap(&err, "add free node")
	if a == nil {
		return GraphNode{}, nilError("Array")
	}
	m := a.p.mem
	if m == nil || m.graph == nil {
		return GraphNode{}, invalid("highlevel: an array of no allocation node freed by a free node")
	}
	t, hs, err := g.build(deps)
	if err != nil {
		return GraphNode{}, err
	}
	defer t.end()
	ga := m.graph
	switch {
	case g != t || ga.t != t:
		return GraphNode{}, invalid("highlevel: the array of another graph's allocation node")
	case ga.free != 0:
		return GraphNode{}, invalid("highlevel: an allocation freed twice")
	}
	before := t.mem.before(hs)
	if !before[ga.node] {
		return GraphNode{}, invalid("highlevel: a free node that does not come after its allocation node")
	}
	for _, u := range ga.users {
		if !before[u] {
			return GraphNode{}, invalid("highlevel: a free node that does not come after every node that uses the memory")
		}
	}
	var node uintptr
	r := driver.GraphAddFree(g.ctx, &node, uintptr(g.h), depsPtr(hs), uintptr(len(hs)), uintptr(m.ptr))
	if err := check("cuGraphAddMemFreeNode", r); err != nil {
		return GraphNode{}, err
	}
	ga.free = node
	return t.made(g, node, hs), nil
}

// useIn checks a use of m by a node of g, whose top is t, added after the
// nodes hs: where m is an allocation node's memory, it must be t's, not
// freed yet, and the allocation node must come before the node. t.mu is
// held.
func (m *Memory) useIn(t, g *Graph, hs []uintptr) error {
	a := m.graph
	switch {
	case a == nil:
		return nil
	case a.t != t || g != t:
		return errGraphMemory
	case a.free != 0:
		return invalid("highlevel: the memory of an allocation node used after its free node")
	case !t.mem.before(hs)[a.node]:
		return invalid("highlevel: the memory of an allocation node used by a node that does not come after it")
	}
	return nil
}

// usedBy records that node, just added, uses m. t.mu is held.
func (m *Memory) usedBy(node uintptr) {
	if a := m.graph; a != nil && !slices.Contains(a.users, node) {
		a.users = append(a.users, node)
	}
}

// setIn checks a use of m by node, a node of t, in an update of an
// instantiation: where m is an allocation node's memory, node must have
// used it when it was added. t.mu is held.
func (m *Memory) setIn(t *Graph, node uintptr) error {
	if a := m.graph; a != nil && (a.t != t || !slices.Contains(a.users, node)) {
		return invalid("highlevel: the memory of an allocation node given to a node that did not use it when added")
	}
	return nil
}

// unfreed returns an error where t has an allocation node that no free
// node frees; t.mu is held.
func (t *Graph) unfreed() error {
	if t.mem == nil {
		return nil
	}
	for _, a := range t.mem.allocs {
		if a.free == 0 {
			return invalid("highlevel: an allocation node with no free node (AddFree)")
		}
	}
	return nil
}

// updateAllocs refuses an update of x, or one to g, where either has
// allocation nodes: an allocation node's address is its own, which the
// nodes of the other graph do not name. x.mu and g.mu are held.
func updateAllocs(x *GraphExec, g *Graph) error {
	if x.mem || g.mem != nil {
		return invalid("highlevel: an update of or to a graph with allocation nodes")
	}
	return nil
}

// argsCheck returns the first error of check of the memory among the
// arguments of a kernel node, which k.node took hold of: useIn for a node
// added, setIn for an update. With no allocation node made yet, none is
// one's and it checks nothing.
func (k *Kernel) argsCheck(args []any, check func(*Memory) error) (err error) {
	if !graphMemoryMade.Load() {
		return nil
	}
	k.forArgMemory(args, func(m *Memory) {
		if err == nil {
			err = check(m)
		}
	})
	return err
}

// argsUsedBy records that node, a kernel node just added, uses the
// allocation node memory among args.
func (k *Kernel) argsUsedBy(node uintptr, args []any) {
	if graphMemoryMade.Load() {
		k.forArgMemory(args, func(m *Memory) { m.usedBy(node) })
	}
}
