package highlevel

// #include "shim.h"
import "C"

import (
	"errors"
	"runtime/cgo"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gocuda/cuda/cudart"
)

// A Graph is CUDA work captured from a stream (Capture, or
// Stream.BeginCapture and Stream.EndCapture), to be instantiated and
// launched as a whole.
type Graph struct {
	h      cudart.Graph
	dev    Device
	ctx    unsafe.Pointer
	funcs  *hostFuncs
	closed atomic.Bool
}

// A GraphExec is an instantiated Graph, ready to launch (CuPy's Graph).
type GraphExec struct {
	h      cudart.GraphExec
	dev    Device
	ctx    unsafe.Pointer
	closed atomic.Bool

	mu    sync.Mutex
	funcs *hostFuncs
}

// hostFuncs are the Go functions of a graph's host nodes, shared by the
// graph and its instantiations and deleted when the last one closes.
type hostFuncs struct {
	mu      sync.Mutex
	refs    int
	handles []cgo.Handle
}

func newHostFuncs(h []cgo.Handle) *hostFuncs { return &hostFuncs{refs: 1, handles: h} }

func (f *hostFuncs) acquire() *hostFuncs {
	f.mu.Lock()
	f.refs++
	f.mu.Unlock()
	return f
}

func (f *hostFuncs) release() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.refs--; f.refs == 0 {
		for _, h := range f.handles {
			h.Delete()
		}
		f.handles = nil
	}
}

// Capture captures the work fn queues on s into a graph (CuPy's
// capture_begin and capture_end). If fn returns an error or panics, the
// capture is ended and its graph discarded.
func Capture(s *Stream, fn func() error) (g *Graph, err error) {
	if err := s.BeginCapture(); err != nil {
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

// Handle returns the CUDA graph, for use with cudart.
func (g *Graph) Handle() cudart.Graph { return g.h }

// Instantiate makes an executable graph of g.
func (g *Graph) Instantiate() (*GraphExec, error) {
	if g.closed.Load() {
		return nil, ErrClosed
	}
	var x C.uintptr_t
	if err := check("cudaGraphInstantiate", C.hl_graph_instantiate(g.ctx, &x, C.uintptr_t(g.h))); err != nil {
		return nil, err
	}
	return &GraphExec{h: cudart.GraphExec(x), dev: g.dev, ctx: g.ctx, funcs: g.funcs.acquire()}, nil
}

// Close destroys the graph; its instantiations stay usable. A second Close
// does nothing and returns nil.
func (g *Graph) Close() error {
	if !g.closed.CompareAndSwap(false, true) {
		return nil
	}
	err := check("cudaGraphDestroy", C.hl_graph_destroy(g.ctx, C.uintptr_t(g.h)))
	g.funcs.release()
	return err
}

// Handle returns the CUDA executable graph, for use with cudart.
func (x *GraphExec) Handle() cudart.GraphExec { return x.h }

// Launch launches the graph on s, a stream of its device (nil: the legacy
// default stream).
func (x *GraphExec) Launch(s *Stream) error {
	sh, err := x.stream(s)
	if err != nil {
		return err
	}
	return check("cudaGraphLaunch", C.hl_graph_launch(x.ctx, C.uintptr_t(x.h), sh))
}

// Upload uploads the graph's work to the device ahead of its first Launch,
// ordered on s.
func (x *GraphExec) Upload(s *Stream) error {
	sh, err := x.stream(s)
	if err != nil {
		return err
	}
	return check("cudaGraphUpload", C.hl_graph_upload(x.ctx, C.uintptr_t(x.h), sh))
}

func (x *GraphExec) stream(s *Stream) (C.uintptr_t, error) {
	if x.closed.Load() {
		return 0, ErrClosed
	}
	sh, err := s.handleOn(x.dev)
	return C.uintptr_t(sh), err
}

// Update makes x run g instead, in place, where g has the same shape as
// the graph x was made of and differs only in the nodes' parameters
// (cudaGraphExecUpdate); otherwise it returns an error naming why, and x is
// unchanged.
func (x *GraphExec) Update(g *Graph) error {
	if x.closed.Load() || g.closed.Load() {
		return ErrClosed
	}
	var result C.int
	if err := check("cudaGraphExecUpdate", C.hl_graph_update(x.ctx, C.uintptr_t(x.h), C.uintptr_t(g.h), &result)); err != nil {
		return errors.Join(err, errors.New("highlevel: graph update: "+cudart.GraphExecUpdateResult(result).String()))
	}
	x.mu.Lock()
	old := x.funcs
	x.funcs = g.funcs.acquire()
	x.mu.Unlock()
	old.release()
	return nil
}

// Close destroys the executable graph. A second Close does nothing and
// returns nil.
func (x *GraphExec) Close() error {
	if !x.closed.CompareAndSwap(false, true) {
		return nil
	}
	err := check("cudaGraphExecDestroy", C.hl_graph_exec_destroy(x.ctx, C.uintptr_t(x.h)))
	x.mu.Lock()
	x.funcs.release()
	x.mu.Unlock()
	return err
}
