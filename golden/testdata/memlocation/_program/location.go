// Package golden is one program, built against the bindings of each
// variant of CUmemLocation (../cuda13.0, ../cuda13.2, ../cuda13.4): the
// test copies it beside each, so that it must compile against all three.
package golden

/*
#include "input.h"

static int gocuda_id(CUmemLocation *loc) { return loc->id; }
static void gocuda_set_id(CUmemLocation *loc, int id) { loc->id = id; }
*/
import "C"

import "unsafe"

// cID returns loc.id as C reads it.
func cID(loc *MemLocation) int32 {
	return int32(C.gocuda_id((*C.CUmemLocation)(unsafe.Pointer(loc))))
}

// setCID sets loc.id in C.
func setCID(loc *MemLocation, id int32) {
	C.gocuda_set_id((*C.CUmemLocation)(unsafe.Pointer(loc)), C.int(id))
}
