package bench

/*
#include <stddef.h>
#include <stdint.h>

// mix_twin holds what c/mix.c's round needs: the driver's entry points
// (cuMemsetD8Async, cuLaunchKernel, cuMemcpyAsync), axpy's CUfunction, the
// stream, x and y, and the mix's sizes.
typedef struct {
	uintptr_t memset, launch, copy, f, s;
	uint64_t x, y;
	int n, launches;
} mix_twin;

typedef int (*mix_memset_fn)(uint64_t, unsigned char, size_t, uintptr_t);
typedef int (*mix_launch_fn)(uintptr_t, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
	uintptr_t, void **, void **);
typedef int (*mix_copy_fn)(uint64_t, uint64_t, size_t, uintptr_t);

// mix_twin_rounds makes rounds rounds of c/mix.c's calls and returns the
// first status that is not 0.
static int mix_twin_rounds(mix_twin t, int rounds) {
	mix_memset_fn memset_ = (mix_memset_fn)t.memset;
	mix_launch_fn launch = (mix_launch_fn)t.launch;
	mix_copy_fn copy = (mix_copy_fn)t.copy;
	size_t bytes = (size_t)t.n * 4;
	for (int r = 0; r < rounds; r++) {
		int e = memset_(t.y, 0, bytes, t.s);
		for (int i = 0; i < t.launches && e == 0; i++) {
			float a = 2;
			int n = t.n;
			void *args[] = {&a, &t.x, &t.y, &n};
			e = launch(t.f, t.n / 256, 1, 1, 256, 1, 1, 0, t.s, args, NULL);
		}
		if (e == 0) {
			e = copy(t.x, t.y, bytes, t.s);
		}
		if (e != 0) {
			return e;
		}
	}
	return 0;
}
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/gocuda/cuda/cudadrv"
)

// A mixTwin makes c/mix.c's calls in this process, one cgo call a round,
// on the stream and memory it is given, so that a benchmark can alternate
// its rounds with highlevel's a few milliseconds apart (BenchmarkMixPaired).
type mixTwin struct{ t C.mix_twin }

// newMixTwin returns the twin of a mix of n floats and launches launches a
// round, on stream s, over x and y; f is axpy's CUfunction. It looks the
// driver's entry points up with cuGetProcAddress, in the libcuda that
// cudadrv loaded.
func newMixTwin(f cudadrv.Function, s cudadrv.Stream, x, y cudadrv.Deviceptr, n, launches int) (*mixTwin, error) {
	fns, err := driverProcs("cuMemsetD8Async", "cuLaunchKernel", "cuMemcpyAsync")
	if err != nil {
		return nil, err
	}
	return &mixTwin{C.mix_twin{
		memset: C.uintptr_t(uintptr(fns[0])), launch: C.uintptr_t(uintptr(fns[1])), copy: C.uintptr_t(uintptr(fns[2])),
		f: C.uintptr_t(f), s: C.uintptr_t(s), x: C.uint64_t(x), y: C.uint64_t(y), n: C.int(n), launches: C.int(launches),
	}}, nil
}

// driverProcs returns the driver's entry points of names, as CUDA 12's
// headers call them, from cuGetProcAddress in the libcuda that cudadrv
// loaded.
func driverProcs(names ...string) ([]unsafe.Pointer, error) {
	fns := make([]unsafe.Pointer, len(names))
	for i, name := range names {
		var st cudadrv.DriverProcAddressQueryResult
		if err := cudadrv.GetProcAddress(name, &fns[i], 12000, cudadrv.Uint64(cudadrv.GET_PROC_ADDRESS_DEFAULT), &st); err != nil {
			return nil, err
		}
		if st != cudadrv.GET_PROC_ADDRESS_SUCCESS || fns[i] == nil {
			return nil, fmt.Errorf("cuGetProcAddress %s: %v", name, st)
		}
	}
	return fns, nil
}

// round makes one round of the twin's calls.
func (t *mixTwin) round() error {
	if r := C.mix_twin_rounds(t.t, 1); r != 0 {
		return cudadrv.Result(r)
	}
	return nil
}
