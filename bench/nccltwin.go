package bench

/*
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

typedef int (*nccl_group_fn)(void);
typedef int (*nccl_all_reduce_fn)(const void *, void *, size_t, int, int, uintptr_t, uintptr_t);

// nccl_twin holds what c/nccl.cu's all_reduce needs: NCCL's entry points
// and the ranks' communicators, streams and buffers.
typedef struct {
	uintptr_t start, end, all_reduce;
	uintptr_t *comms, *streams;
	void **bufs;
	int ndev, datatype, op;
} nccl_twin;

// nccl_twin_rounds makes n of c/nccl.cu's grouped in-place all-reduces of
// count elements, and returns the first status that is not 0.
static int nccl_twin_rounds(nccl_twin t, size_t count, int n) {
	for (int i = 0; i < n; i++) {
		int e = ((nccl_group_fn)t.start)();
		for (int g = 0; g < t.ndev && e == 0; g++) {
			e = ((nccl_all_reduce_fn)t.all_reduce)(t.bufs[g], t.bufs[g], count, t.datatype, t.op, t.comms[g], t.streams[g]);
		}
		int end = ((nccl_group_fn)t.end)();
		if (e == 0) {
			e = end;
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
	"unsafe"

	"github.com/gocuda/cuda/nccl"
)

// An ncclTwin makes c/nccl.cu's grouped all-reduces in this process, a
// block of them a cgo call, over the ranks Go's side uses, so that a
// benchmark can alternate them with Go's calls (BenchmarkAllReducePaired):
// it tells the cost of Go's calls from that of the process (its threads,
// its signals) around NCCL's.
type ncclTwin struct {
	t C.nccl_twin
	// The ranks' handles, in C memory: the twin keeps pointers to them.
	comms, streams *C.uintptr_t
	bufs           *unsafe.Pointer
}

// newNCCLTwin returns the twin of r, with NCCL's entry points from the
// libnccl the nccl package loaded.
func newNCCLTwin(r *ncclRanks) (*ncclTwin, error) {
	n := len(r.comms)
	t := &ncclTwin{t: C.nccl_twin{ndev: C.int(n), datatype: C.int(nccl.Float32), op: C.int(nccl.Sum)}}
	err := lookup("libnccl", map[string]*C.uintptr_t{"ncclGroupStart": &t.t.start, "ncclGroupEnd": &t.t.end, "ncclAllReduce": &t.t.all_reduce})
	if err != nil {
		return nil, err
	}
	comms := (*[1 << 20]C.uintptr_t)(C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof(C.uintptr_t(0)))))[:n:n]
	streams := (*[1 << 20]C.uintptr_t)(C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof(C.uintptr_t(0)))))[:n:n]
	bufs := (*[1 << 20]unsafe.Pointer)(C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof(unsafe.Pointer(nil)))))[:n:n]
	for g := range n {
		comms[g], streams[g], bufs[g] = C.uintptr_t(r.comms[g]), C.uintptr_t(r.streams[g]), r.bufs[g]
	}
	t.comms, t.streams, t.bufs = &comms[0], &streams[0], &bufs[0]
	t.t.comms, t.t.streams, t.t.bufs = t.comms, t.streams, t.bufs
	return t, nil
}

// rounds makes n all-reduces of count elements.
func (t *ncclTwin) rounds(count uint64, n int) error {
	if r := C.nccl_twin_rounds(t.t, C.size_t(count), C.int(n)); r != 0 {
		return nccl.Result(r)
	}
	return nil
}

// close frees the C memory.
func (t *ncclTwin) close() {
	C.free(unsafe.Pointer(t.comms))
	C.free(unsafe.Pointer(t.streams))
	C.free(unsafe.Pointer(t.bufs))
}
