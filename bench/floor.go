package bench

/*
#cgo noescape bench_noop
#cgo nocallback bench_noop
static int bench_noop(int *p) { return 0; }
*/
import "C"

import "unsafe"

// cgoNoop calls a C function that does nothing, with a raw call's shape (an
// int * in, a status out): the cost of the cgo transition alone, which
// BenchmarkCgoNoop measures beside BenchmarkGetDevice.
func cgoNoop(p *int32) int {
	return int(C.bench_noop((*C.int)(unsafe.Pointer(p))))
}
