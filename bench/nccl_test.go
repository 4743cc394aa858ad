package bench

import (
	"encoding/hex"
	"fmt"
	"runtime"
	"testing"
	"unsafe"

	"github.com/gocuda/cuda/cudart"
	"github.com/gocuda/cuda/nccl"
)

// allReduceSizes are BenchmarkAllReduce's message sizes in bytes, each
// device's buffer; c/nccl.cu has the same list.
var allReduceSizes = []int{
	8, 64, 512, 4 << 10, 32 << 10, 256 << 10, 2 << 20, 16 << 20,
	64 << 20, 128 << 20, 256 << 20, 512 << 20, 1 << 30,
}

// allReduceWarmup is how many all-reduces each run queues, and waits for,
// before its timer starts.
const allReduceWarmup = 5

// sizeName writes n bytes in the largest binary unit that divides it: 8B,
// 4KiB, 1GiB.
func sizeName(n int) string {
	units := []string{"B", "KiB", "MiB", "GiB"}
	u := 0
	for u < len(units)-1 && n >= 1024 && n%1024 == 0 {
		n /= 1024
		u++
	}
	return fmt.Sprintf("%d%s", n, units[u])
}

// ncclRanks are this process's ranks of an NCCL communicator, one per
// device, each with a non-blocking stream and a zeroed buffer: every device
// of the process (newNCCLRanks), or one rank of several processes
// (newNCCLRank).
type ncclRanks struct {
	devs    []int32
	comms   []nccl.Comm
	streams []cudart.Stream
	bufs    []unsafe.Pointer
}

// requireNCCL loads NCCL and the CUDA runtime and returns the number of
// devices, or skips without them or two devices.
func requireNCCL(b *testing.B) int32 {
	b.Helper()
	if err := nccl.Load(); err != nil {
		b.Skipf("no NCCL: %v", err)
	}
	if err := cudart.Load(); err != nil {
		b.Skipf("no CUDA runtime: %v", err)
	}
	var n int32
	if err := cudart.GetDeviceCount(&n); err != nil || n < 2 {
		b.Skipf("needs 2 CUDA devices: count %d, %v", n, err)
	}
	var v int32
	if err := nccl.GetVersion(&v); err != nil {
		b.Fatal(err)
	}
	b.Logf("NCCL %d from %s, %d devices", v, nccl.LibraryPath(), n)
	return n
}

// newNCCLRanks makes the communicators, from CommInitAll, and buffers of
// bytes over every device, or skips without NCCL or two devices. The
// caller has locked its OS thread.
func newNCCLRanks(b *testing.B, bytes int) *ncclRanks {
	b.Helper()
	n := requireNCCL(b)
	r := &ncclRanks{devs: make([]int32, n), comms: make([]nccl.Comm, n)}
	for g := range r.devs {
		r.devs[g] = int32(g)
	}
	if err := nccl.CommInitAll(&r.comms[0], n, nil); err != nil {
		b.Fatalf("CommInitAll: %v", err)
	}
	r.alloc(b, bytes)
	return r
}

// newNCCLRank makes rank rank of a communicator of two processes, on
// device rank, from CommInitRank with id, which returns once both ranks
// have joined, and its stream and buffer of bytes. The caller has locked
// its OS thread.
func newNCCLRank(tb testing.TB, id nccl.UniqueId, rank int32, bytes int) *ncclRanks {
	tb.Helper()
	r := &ncclRanks{devs: []int32{rank}, comms: make([]nccl.Comm, 1)}
	if err := cudart.SetDevice(rank); err != nil {
		tb.Fatal(err)
	}
	if err := nccl.CommInitRank(&r.comms[0], 2, id, rank); err != nil {
		tb.Fatalf("CommInitRank: %v", err)
	}
	r.alloc(tb, bytes)
	return r
}

// alloc makes each rank's stream and zeroed buffer of bytes on its device.
func (r *ncclRanks) alloc(tb testing.TB, bytes int) {
	tb.Helper()
	r.streams, r.bufs = make([]cudart.Stream, len(r.devs)), make([]unsafe.Pointer, len(r.devs))
	for g, dev := range r.devs {
		if err := cudart.SetDevice(dev); err != nil {
			tb.Fatal(err)
		}
		if err := cudart.StreamCreateWithFlags(&r.streams[g], cudart.StreamNonBlocking); err != nil {
			tb.Fatal(err)
		}
		if err := cudart.Malloc(&r.bufs[g], uint64(bytes)); err != nil {
			tb.Fatal(err)
		}
		// Zeros stay zeros however often they are summed. The memset is
		// on the default stream, which the non-blocking stream ignores.
		if err := cudart.Memset(r.bufs[g], 0, uint64(bytes)); err != nil {
			tb.Fatal(err)
		}
		if err := cudart.DeviceSynchronize(); err != nil {
			tb.Fatal(err)
		}
	}
}

// close ends the communicators, aborted where tb failed (their work may
// wait for a rank that is gone), then frees the streams and buffers.
func (r *ncclRanks) close(tb testing.TB) {
	end := nccl.CommDestroy
	if tb.Failed() {
		end = nccl.CommAbort
	}
	for _, c := range r.comms {
		if err := end(c); err != nil {
			tb.Error(err)
		}
	}
	for g, dev := range r.devs {
		if err := cudart.SetDevice(dev); err != nil {
			tb.Error(err)
		}
		if err := cudart.Free(r.bufs[g]); err != nil {
			tb.Error(err)
		}
		if err := cudart.StreamDestroy(r.streams[g]); err != nil {
			tb.Error(err)
		}
	}
}

// allReduce queues one in-place float32 sum of count elements on every
// rank of the process, grouped where it has several: what nccl-tests'
// all_reduce_perf does from one thread.
func (r *ncclRanks) allReduce(count uint64) error {
	if len(r.comms) == 1 {
		return nccl.AllReduce(r.bufs[0], r.bufs[0], count, nccl.Float32, nccl.Sum, r.comms[0], r.streams[0])
	}
	if err := nccl.GroupStart(); err != nil {
		return err
	}
	for g, c := range r.comms {
		if err := nccl.AllReduce(r.bufs[g], r.bufs[g], count, nccl.Float32, nccl.Sum, c, r.streams[g]); err != nil {
			nccl.GroupEnd()
			return err
		}
	}
	return nccl.GroupEnd()
}

// allReduces queues n of allReduce's sums.
func (r *ncclRanks) allReduces(count uint64, n int) error {
	for range n {
		if err := r.allReduce(count); err != nil {
			return err
		}
	}
	return nil
}

func (r *ncclRanks) sync() error {
	for _, s := range r.streams {
		if err := cudart.StreamSynchronize(s); err != nil {
			return err
		}
	}
	return nil
}

// BenchmarkAllReduce is NCCL's all-reduce over every GPU of one process,
// communicators from CommInitAll, one goroutine: b.N grouped in-place
// float32 sums queued, then every stream waited for, the wait timed too, as
// nccl-tests times a batch. busbw-GB/s is nccl-tests' bus bandwidth,
// 2(n-1)/n times the bytes per device over the time per all-reduce.
// c/nccl.cu is its C twin.
func BenchmarkAllReduce(b *testing.B) {
	// The device made current here, and NCCL's group state, belong to the
	// OS thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r := newNCCLRanks(b, allReduceSizes[len(allReduceSizes)-1])
	defer r.close(b)
	n := len(r.comms)
	for _, size := range allReduceSizes {
		b.Run("size="+sizeName(size), func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			count := uint64(size / 4)
			for range allReduceWarmup {
				if err := r.allReduce(count); err != nil {
					b.Fatal(err)
				}
			}
			if err := r.sync(); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(size))
			b.ResetTimer()
			// Not b.Loop: it would stop the timer before the wait below.
			for range b.N {
				if err := r.allReduce(count); err != nil {
					b.Fatal(err)
				}
			}
			if err := r.sync(); err != nil {
				b.Fatal(err)
			}
			perOp := b.Elapsed().Seconds() / float64(b.N)
			b.ReportMetric(float64(2*(n-1))/float64(n)*float64(size)/perOp/1e9, "busbw-GB/s")
		})
	}
}

// BenchmarkAllReduceProcesses is BenchmarkAllReduce in two processes, one
// GPU each, as a job of one process per GPU runs it: this process is rank
// 0, on device 0, and runs the test binary again as rank 1, on device 1
// (TestAllReduceProcessesRank1), with the unique id from GetUniqueId in its
// environment; the communicators are CommInitRank's, blocking as
// CommInitAll's are, and each sum is one ncclAllReduce on the rank's
// non-blocking stream. Each run of a size is a round that both ranks make
// (allReduceRound): rank 0 sends rank 1 the size and b.N, both make
// allReduceWarmup sums and wait, then b.N sums and wait; rank 0 times its
// b.N sums and the wait, as BenchmarkAllReduce does. c/nccl.cu, run as
// "nccl RUNS procs", is its C twin.
func BenchmarkAllReduceProcesses(b *testing.B) {
	// The device made current here belongs to the OS thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	requireNCCL(b)
	var id nccl.UniqueId
	if err := nccl.GetUniqueId(&id); err != nil {
		b.Fatal(err)
	}
	env := []string{ncclIDEnv + "=" + hex.EncodeToString(id.Internal[:])}
	benchmarkProcs(b, "nccl", env, func(tb testing.TB) allReduceRank {
		return newNCCLRank(tb, id, 0, allReduceSizes[len(allReduceSizes)-1])
	})
}

// BenchmarkAllReducePaired is BenchmarkAllReduce against c/nccl.cu's calls
// made in this process (ncclTwin, a block of all-reduces a cgo call) over
// the same ranks, in blocks of allReduceBlock that take turns (paired), for
// the sizes where Go's calls trailed C's: if the twin keeps C's speed in
// Go's process, the gap is in Go's calls; if it loses it too, in the
// process around NCCL's (its threads, its signals).
func BenchmarkAllReducePaired(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r := newNCCLRanks(b, pairedLargest)
	defer r.close(b)
	twin, err := newNCCLTwin(r)
	if err != nil {
		b.Fatal(err)
	}
	defer twin.close()
	for _, size := range allReduceSizes {
		if size > pairedLargest {
			break
		}
		b.Run("size="+sizeName(size), func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			count := uint64(size / 4)
			paired(b, r.sync, allReduceBlock, func(n int) error { return r.allReduces(count, n) },
				func(n int) error { return twin.rounds(count, n) })
		})
	}
}

// allReduceBlock is the all-reduces of a block of
// BenchmarkAllReducePaired: a few milliseconds.
const allReduceBlock = 200

// pairedLargest is the largest size of the paired all-reduce benchmarks:
// from it up, Go and C take the same time in separate runs.
const pairedLargest = 2 << 20
