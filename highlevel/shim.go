package highlevel

/*
#include "shim.h"
*/
import "C"

import (
	"errors"
	"strings"
	"sync"

	"github.com/gocuda/cuda/cudadrv"
	"github.com/gocuda/cuda/cudart"
)

var (
	// ErrClosed is returned by operations on a closed Stream, Event, Graph,
	// GraphExec or pool.
	ErrClosed = errors.New("highlevel: use of closed object")
	// ErrFreed is returned by operations on memory that was freed, and by a
	// second Free.
	ErrFreed = errors.New("highlevel: use of freed memory")
	// ErrInCallback is returned by every operation of the package called
	// from a stream callback or host function (Stream.AddCallback,
	// Stream.LaunchHostFunc), where CUDA forbids calls into CUDA.
	ErrInCallback = errors.New("highlevel: CUDA called from a stream callback")
)

var (
	loadOnce sync.Once
	loadErr  error
)

// load resolves the shim's functions in the libraries that cudart and
// cudadrv opened, once.
func load() error {
	loadOnce.Do(func() {
		for i := range int(C.hl_nsymbols()) {
			name := C.GoString(C.hl_symbol(C.int(i)))
			addr := cudart.ProcAddress
			if !strings.HasPrefix(name, "cuda") {
				addr = cudadrv.ProcAddress
			}
			p, err := addr(name)
			if err != nil {
				loadErr = opErr("loading CUDA", err)
				return
			}
			C.hl_set_symbol(C.int(i), p)
		}
	})
	return loadErr
}

// check turns a status of the shim into an error naming the operation.
func check(op string, r C.int) error {
	if r == 0 {
		return nil
	}
	return opErr(op, statusError(r))
}

// ready turns the status of a query (cudaEventQuery, cudaStreamQuery) into
// whether the work is done: cudaErrorNotReady is not an error.
func ready(op string, r C.int) (bool, error) {
	if r == C.cudaErrorNotReady {
		return false, nil
	}
	return r == 0, check(op, r)
}

func statusError(r C.int) error {
	switch {
	case r > 0:
		return cudart.Error(r)
	case r == C.HL_IN_CALLBACK:
		return ErrInCallback
	default:
		return cudadrv.Result(C.HL_DRIVER_BASE - r)
	}
}
