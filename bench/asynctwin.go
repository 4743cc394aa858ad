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

static uintptr_t twin_sym(const char *name) { return (uintptr_t)dlsym(RTLD_DEFAULT, name); }
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/gocuda/cuda/cudart"
)

// An asyncTwin makes c/highlevel.c's cudaMallocFromPoolAsync and
// cudaFreeAsync in this process, a block of rounds a cgo call, so that a
// benchmark can alternate them with highlevel's AllocAsync and Free
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
	if err := lookup("libcudart", map[string]*C.uintptr_t{"cudaMallocFromPoolAsync": &t.malloc, "cudaFreeAsync": &t.free}); err != nil {
		return nil, err
	}
	return t, nil
}

// lookup sets each of syms to the address of the function it is the name
// of, in the libraries the process loaded (the bindings load theirs
// RTLD_GLOBAL), or says which is missing from lib.
func lookup(lib string, syms map[string]*C.uintptr_t) error {
	for name, p := range syms {
		cname := C.CString(name)
		*p = C.twin_sym(cname)
		C.free(unsafe.Pointer(cname))
		if *p == 0 {
			return fmt.Errorf("%s: not found in the loaded %s", name, lib)
		}
	}
	return nil
}

// rounds makes n rounds.
func (t *asyncTwin) rounds(n int) error {
	if r := C.async_twin_rounds(t.malloc, t.free, t.pool, t.s, C.int(n)); r != 0 {
		return cudart.Error(r)
	}
	return nil
}
