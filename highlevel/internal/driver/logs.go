package driver

/*
#include "shim.h"
*/
import "C"

import (
	"github.com/gocuda/cuda/highlevel/internal/cudalog"
)

// hlDriverLog is the shim's logger's way into Go (shim.c's section
// "Logs"): a line of the driver's error log, at CUlogLevel level, n bytes
// at msg, given on thread tid after its serial-th call of the shim's. It
// runs inside the driver's call, on the driver's thread: it copies the
// line and queues it (cudalog.FromDriver), and never panics through the
// driver's frames.
//
//export hlDriverLog
func hlDriverLog(level C.int, msg *C.char, n C.size_t, tid C.long, serial C.ulonglong) {
	defer func() { _ = recover() }()
	n = min(n, 1<<16)
	cudalog.FromDriver(int(level), C.GoStringN(msg, C.int(n)), cudalog.Stamp{Tid: int64(tid), Serial: uint64(serial)})
}

// hlLibraryLog is the way into Go of the loggers of the libraries (lib:
// LogBlas, LogBlasLt, LogSparse) that the shim has: a message, at the
// library's level, from its function fn (NULL where it names none).
//
//export hlLibraryLog
func hlLibraryLog(lib, level C.int, fn, msg *C.char) {
	defer func() { _ = recover() }()
	var from cudalog.Library
	switch lib {
	case LogBlas:
		from = cudalog.CUBLAS
	case LogBlasLt:
		from = cudalog.CUBLASLt
	case LogSparse:
		from = cudalog.CUSPARSE
	default:
		return
	}
	var name string
	if fn != nil {
		name = C.GoString(fn)
	}
	cudalog.FromLibrary(from, int(level), name, C.GoString(msg))
}
