package bench

/*
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

typedef int (*async_malloc_fn)(void **, size_t, uintptr_t, uintptr_t);
typedef int (*async_free_fn)(void *, uintptr_t);

// async_twin_rounds makes n rounds of c/highlevel.c's
// malloc_from_pool_async_free, cudaMallocFromPoolAsync and cudaFreeAsync
// of 1 MiB on stream s from pool, and returns the first status that is not
// 0.
static int async_twin_rounds(uintptr_t malloc_, uintptr_t free_, uintptr_t pool, uintptr_t s, int n) {
	for (int i = 0; i < n; i++) {
		void *p;
		int e = ((async_malloc_fn)malloc_)(&p, 1 << 20, pool, s);
		if (e == 0) {
			e = ((async_free_fn)free_)(p, s);
		}
		if (e != 0) {
			return e;
		}
	}
	return 0;
}

static uintptr_t async_twin_sym(const char *name) { return (uintptr_t)dlsym(RTLD_DEFAULT, name); }
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/gocuda/cuda/cudart"
)

// An asyncTwin makes c/highlevel.c's cudaMallocFromPoolAsync and
// cudaFreeAsync in this process, a block of rounds a cgo call, so that a
// benchmark can alternate them with highlevel's MallocAsync and Free
// (BenchmarkMallocAsyncFreePaired).
type asyncTwin struct {
	malloc, free, pool, s C.uintptr_t
}

// newAsyncTwin returns the twin for stream s and device 0's default pool,
// with the runtime's entry points from the libcudart cudart loaded.
func newAsyncTwin(s cudart.Stream) (*asyncTwin, error) {
	var pool cudart.MemPool
	if err := cudart.DeviceGetDefaultMemPool(&pool, 0); err != nil {
		return nil, err
	}
	t := &asyncTwin{pool: C.uintptr_t(pool), s: C.uintptr_t(s)}
	for _, f := range []struct {
		p    *C.uintptr_t
		name string
	}{{&t.malloc, "cudaMallocFromPoolAsync"}, {&t.free, "cudaFreeAsync"}} {
		name := C.CString(f.name)
		*f.p = C.async_twin_sym(name)
		C.free(unsafe.Pointer(name))
		if *f.p == 0 {
			return nil, fmt.Errorf("%s: not found in the loaded libcudart", f.name)
		}
	}
	return t, nil
}

// rounds makes n rounds.
func (t *asyncTwin) rounds(n int) error {
	if r := C.async_twin_rounds(t.malloc, t.free, t.pool, t.s, C.int(n)); r != 0 {
		return cudart.Error(r)
	}
	return nil
}
