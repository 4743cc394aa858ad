// Package cgoannot measures what the #cgo nocallback and noescape
// annotations that gen may put on a trampoline save on a raw call. Its C
// function stands in for a library's: it writes through its pointer
// argument and returns 0, called through a function pointer as gen's
// trampolines call a library's symbol. The same C function is bound four
// times, with no annotation, with each, and with both.
package cgoannot

/*
#include <stdint.h>

static int standin(int *p) { *p = 7; return 0; }
static uintptr_t standinAddr(void) { return (uintptr_t)&standin; }

static int plain(uintptr_t fp, void *p) { return ((int (*)(int *))fp)(p); }
static int callback(uintptr_t fp, void *p) { return ((int (*)(int *))fp)(p); }
static int escape(uintptr_t fp, void *p) { return ((int (*)(int *))fp)(p); }
static int both(uintptr_t fp, void *p) { return ((int (*)(int *))fp)(p); }

#cgo nocallback callback
#cgo noescape escape
#cgo nocallback both
#cgo noescape both
*/
import "C"

import (
	"errors"
	"unsafe"
)

var fp = C.standinAddr()

var errCall = errors.New("cgoannot: the stand-in failed")

// Plain calls the stand-in through a trampoline with no annotation.
func Plain(p *int32) error {
	if C.plain(fp, unsafe.Pointer(p)) != 0 {
		return errCall
	}
	return nil
}

// NoCallback calls it through a trampoline marked #cgo nocallback.
func NoCallback(p *int32) error {
	if C.callback(fp, unsafe.Pointer(p)) != 0 {
		return errCall
	}
	return nil
}

// NoEscape calls it through a trampoline marked #cgo noescape.
func NoEscape(p *int32) error {
	if C.escape(fp, unsafe.Pointer(p)) != 0 {
		return errCall
	}
	return nil
}

// Both calls it through a trampoline marked #cgo nocallback and noescape.
func Both(p *int32) error {
	if C.both(fp, unsafe.Pointer(p)) != 0 {
		return errCall
	}
	return nil
}
