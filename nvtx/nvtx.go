// Package nvtx annotates a program's timeline for NVIDIA's profilers
// (Nsight Systems, Nsight Compute) with NVTX 3 markers and ranges.
//
// NVTX 3 is header-only: nothing is linked and no library is needed to
// build or run. On its first call, NVTX opens the tool library that a
// profiler names in $NVTX_INJECTION64_PATH; without one, every function
// here is a no-op that costs one cgo call and allocates nothing.
//
// A mark is an instant; a range spans the time between RangePush and the
// matching RangePop:
//
//	nvtx.Mark("loaded")
//	defer nvtx.Range("train")()
//	for step := range steps {
//		end := nvtx.RangeC("step", 0xff76b900)
//		run(step)
//		end()
//	}
//
// # Threads and goroutines
//
// NVTX keeps one stack of push/pop ranges per OS thread, and a goroutine
// can move to another thread between any two calls. A goroutine that
// calls RangePush must hold its thread until the matching RangePop, by
// calling runtime.LockOSThread before and runtime.UnlockOSThread after;
// otherwise the pop may land on another thread's stack. Range and RangeC
// do this for the caller: they lock the goroutine to its thread and the
// function they return pops the range and unlocks it (the locks nest, so
// this is safe inside code that locks the thread itself). Marks carry no
// state and need no lock.
//
// # Messages
//
// Messages are passed to NVTX as ASCII C strings: a message is cut at its
// first NUL byte. Messages shorter than 256 bytes are copied on the C
// stack; longer ones cost a malloc and a free.
//
// Colors are 0xAARRGGBB values, as NVTX_COLOR_ARGB.
package nvtx

// The NVTX 3 headers are those of the major the build binds: zcflags_*.go
// put them on the include path.
//go:generate go run ../gen -pkg nvtx

/*
#cgo linux LDFLAGS: -ldl
#cgo noescape gocuda_nvtxMark
#cgo nocallback gocuda_nvtxMark
#cgo noescape gocuda_nvtxMarkC
#cgo nocallback gocuda_nvtxMarkC
#cgo noescape gocuda_nvtxRangePush
#cgo nocallback gocuda_nvtxRangePush
#cgo noescape gocuda_nvtxRangePushC
#cgo nocallback gocuda_nvtxRangePushC
#cgo nocallback gocuda_nvtxRangePop
#include "shim.h"
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// NoPushPopTracking is what RangePush, RangePushC and RangePop return when
// no tool is attached, or when the tool does not track nesting
// (NVTX_NO_PUSH_POP_TRACKING).
const NoPushPopTracking = -2

// cstr returns the pointer and length that the shim copies msg from. The
// shim neither keeps the pointer nor calls back into Go, which the
// noescape and nocallback directives above declare.
func cstr(msg string) (*C.char, C.size_t) {
	return (*C.char)(unsafe.Pointer(unsafe.StringData(msg))), C.size_t(len(msg))
}

// Mark marks an instant on the calling thread's timeline with msg
// (nvtxMarkA).
func Mark(msg string) {
	p, n := cstr(msg)
	C.gocuda_nvtxMark(p, n)
}

// MarkC is like Mark with the marker drawn in color argb, 0xAARRGGBB
// (nvtxMarkEx).
func MarkC(msg string, argb uint32) {
	p, n := cstr(msg)
	C.gocuda_nvtxMarkC(p, n, C.uint32_t(argb))
}

// RangePush starts a range named msg nested in the calling thread's open
// ranges (nvtxRangePushA). It returns the zero-based nesting level of the
// new range, a negative value if the tool reports an error, or
// NoPushPopTracking without a tool. See the package documentation for
// keeping a goroutine on its thread until RangePop.
func RangePush(msg string) int {
	p, n := cstr(msg)
	return int(C.gocuda_nvtxRangePush(p, n))
}

// RangePushC is like RangePush with the range drawn in color argb,
// 0xAARRGGBB (nvtxRangePushEx).
func RangePushC(msg string, argb uint32) int {
	p, n := cstr(msg)
	return int(C.gocuda_nvtxRangePushC(p, n, C.uint32_t(argb)))
}

// RangePop ends the innermost range that RangePush or RangePushC started
// on the calling thread (nvtxRangePop). It returns the level of the range
// it ended, a negative value if the tool reports an error, or
// NoPushPopTracking without a tool.
func RangePop() int {
	return int(C.gocuda_nvtxRangePop())
}

// Range locks the calling goroutine to its OS thread, starts a range named
// msg as RangePush does, and returns a function that ends the range and
// unlocks the goroutine. The returned function must be called once, by the
// same goroutine:
//
//	defer nvtx.Range("step")()
func Range(msg string) func() {
	runtime.LockOSThread()
	RangePush(msg)
	return endRange
}

// RangeC is like Range with the range drawn in color argb, 0xAARRGGBB.
func RangeC(msg string, argb uint32) func() {
	runtime.LockOSThread()
	RangePushC(msg, argb)
	return endRange
}

// endRange is the function that Range and RangeC return: a package-level
// function, so returning it allocates nothing.
func endRange() {
	RangePop()
	runtime.UnlockOSThread()
}
