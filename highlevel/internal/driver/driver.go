// Package driver is highlevel's one boundary to C: the shim (shim.c) that
// calls the CUDA driver API through the entry points cuGetProcAddress gives
// it, and the Go functions that call the shim.
//
// Each shim function makes the context it names current on the calling OS
// thread (when it is not already), calls the driver, and puts the previous
// context back, all in one cgo call, so no goroutine migration can send work
// to the wrong device. The functions return a status: 0, a CUresult, or one
// of the shim's own (InCallback, Capturing, MissingBase - i).
//
// gen writes zshim.go, a Go function for each function shim.h declares and
// a Go type for each of its structs, and zsymbols.h, the driver functions the
// shim calls with the version of each, from gen/packages.txt. What C must do
// by hand stays in shim.c: making the context current around each call, the
// gates that keep captures and the driver's crashes apart, and the
// trampolines of callbacks.
//
// cgo checks each pointer argument for Go pointers in the memory it points
// to. Where a call names a field (C.f(&s.x)), it checks the field; through
// a function of this package's, it checks all of the allocation the
// argument points into. So a pointer to memory C writes (a *unsafe.Pointer
// result) must point to a variable of its own, never to a field of a
// struct that holds Go pointers, or the call panics: "argument of cgo
// function has Go pointer to unpinned Go pointer".
package driver

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"runtime/cgo"
	"unsafe"
)

// BaseVersion is the CUDA version of the driver API the shim calls: every
// function it needs has the form it calls from CUDA 12.0 on, except those
// of later versions that a few operations need.
const BaseVersion = C.HL_BASE_VERSION

// A Waker is woken by the host function that WakeAfter queues, once.
type Waker interface {
	Wake()
}

// hlWake is the host function WakeAfter queues: h is a cgo.Handle of a
// Waker.
//
//export hlWake
func hlWake(h C.uintptr_t) {
	c := cgo.Handle(h)
	w := c.Value().(Waker)
	c.Delete()
	w.Wake()
}

// CString returns s in C memory, NUL-terminated, for CFree.
func CString(s string) *byte { return (*byte)(unsafe.Pointer(C.CString(s))) }

// CBytes returns a copy of b in C memory, for CFree.
func CBytes(b []byte) unsafe.Pointer { return C.CBytes(b) }

// CFree frees the C memory of CString or CBytes.
func CFree(p unsafe.Pointer) { C.free(p) }
