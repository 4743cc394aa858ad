package bench

import (
	"context"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/gocuda/cuda/highlevel"
	"github.com/gocuda/cuda/highlevel/collective"
	"github.com/gocuda/cuda/nccl"
)

// requireCollective loads NCCL, or skips without it or two devices.
func requireCollective(b *testing.B) {
	b.Helper()
	if err := nccl.Load(); err != nil {
		b.Skipf("no NCCL: %v", err)
	}
	if n, err := highlevel.DeviceCount(); err != nil || n < 2 {
		b.Skipf("needs 2 CUDA devices: count %d, %v", n, err)
	}
}

// BenchmarkCollectiveAllReduce is BenchmarkAllReduce through
// highlevel/collective: communicators from NewComms over every device, a
// non-blocking highlevel stream (as the raw binding's and C's) and a
// zeroed Array[float32] of the largest size per device, b.N in-place sums
// of every device queued from one goroutine, each one Run (one NCCL
// group), then every stream waited for with Comm.Wait, the wait timed too.
// busbw-GB/s is as BenchmarkAllReduce's.
func BenchmarkCollectiveAllReduce(b *testing.B) { collectiveAllReduce(b, false, false) }

// BenchmarkCollectiveAllReduceBlocking is BenchmarkCollectiveAllReduce
// with Options.Blocking.
func BenchmarkCollectiveAllReduceBlocking(b *testing.B) { collectiveAllReduce(b, true, false) }

// BenchmarkCollectiveAllReduceBlockingPaired is
// BenchmarkCollectiveAllReduceBlocking against the raw binding's grouped
// calls (BenchmarkAllReduce's) on the same communicators, streams and
// arrays, in blocks of allReduceBlock that take turns, for the sizes up
// to 2 MiB: ns/op is Run's, raw-ns/op the raw calls', and
// go/raw the median of the blocks' ratios. Separate runs of the two differ
// by more than the gap between them.
func BenchmarkCollectiveAllReduceBlockingPaired(b *testing.B) { collectiveAllReduce(b, true, true) }

func collectiveAllReduce(b *testing.B, blocking, pair bool) {
	requireCollective(b)
	ctx := context.Background()
	comms, err := collective.NewComms(ctx, nil, &collective.Options{Timeout: time.Minute, Blocking: blocking})
	if err != nil {
		b.Fatal(err)
	}
	defer collective.CloseAll(comms)
	n := len(comms)
	largest := allReduceSizes[len(allReduceSizes)-1]
	streams := make([]*highlevel.Stream, n)
	bufs := make([]*highlevel.Array[float32], n)
	for i, c := range comms {
		if streams[i], err = highlevel.NewStream(c.Device(), &highlevel.StreamOptions{NonBlocking: true}); err != nil {
			b.Fatal(err)
		}
		defer streams[i].Close()
		if bufs[i], err = highlevel.AllocArray[float32](c.Device(), largest/4); err != nil {
			b.Fatal(err)
		}
		defer bufs[i].Free()
		// Zeros stay zeros however often they are summed.
		if err := bufs[i].MemoryPointer().Memset(0, largest); err != nil {
			b.Fatal(err)
		}
	}
	wait := func() {
		for i, c := range comms {
			if err := c.Wait(ctx, streams[i]); err != nil {
				b.Fatal(err)
			}
		}
	}
	var raw *ncclRanks
	if pair {
		raw = rawRanks(b, comms, streams, bufs)
	}
	for _, size := range allReduceSizes {
		if pair && size > pairedLargest {
			break
		}
		b.Run("size="+sizeName(size), func(b *testing.B) {
			calls := make([]collective.Call, n)
			for i, c := range comms {
				view, err := bufs[i].Slice(0, size/4)
				if err != nil {
					b.Fatal(err)
				}
				calls[i] = collective.AllReduce(streams[i], c, view, view, collective.Sum)
			}
			if pair {
				count := uint64(size / 4)
				// The raw binding's group belongs to the OS thread.
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				pairedAs(b, "raw", raw.sync, allReduceBlock, func(n int) error {
					for range n {
						if err := collective.Run(calls...); err != nil {
							return err
						}
					}
					return nil
				}, func(n int) error { return raw.allReduces(count, n) })
				return
			}
			for range allReduceWarmup {
				if err := collective.Run(calls...); err != nil {
					b.Fatal(err)
				}
			}
			wait()
			b.SetBytes(int64(size))
			b.ResetTimer()
			for range b.N {
				if err := collective.Run(calls...); err != nil {
					b.Fatal(err)
				}
			}
			wait()
			perOp := b.Elapsed().Seconds() / float64(b.N)
			b.ReportMetric(float64(2*(n-1))/float64(n)*float64(size)/perOp/1e9, "busbw-GB/s")
		})
	}
}

// BenchmarkCollectiveAllReduceProcesses is BenchmarkAllReduceProcesses
// through highlevel/collective: each rank joins with Join over loopback,
// rank 0's rendezvous on a free port, rank 1's Config from the torchrun
// variables (ConfigFromEnv), and has a highlevel stream and a zeroed
// Array[float32] of the largest size; each sum is a Run of one AllReduce,
// each wait a Comm.Wait. Its C twin is BenchmarkAllReduceProcesses'.
func BenchmarkCollectiveAllReduceProcesses(b *testing.B) {
	collectiveProcesses(b, "collective", false)
}

// BenchmarkCollectiveAllReduceProcessesBlocking is
// BenchmarkCollectiveAllReduceProcesses with blocking communicators
// (collective.Options.Blocking).
func BenchmarkCollectiveAllReduceProcessesBlocking(b *testing.B) {
	collectiveProcesses(b, "collective-blocking", true)
}

// collectiveProcesses runs BenchmarkCollectiveAllReduceProcesses, its rank
// 1 the variant named.
func collectiveProcesses(b *testing.B, variant string, blocking bool) {
	requireCollective(b)
	port := freePort(b)
	cfg, env := procsConfig(port)
	benchmarkProcs(b, variant, env, func(tb testing.TB) allReduceRank { return joinCollective(tb, cfg, blocking) })
}

// procsConfig returns rank 0's Config of a two-process job whose
// rendezvous is on port of the loopback, and rank 1's torchrun variables.
func procsConfig(port int) (collective.Config, []string) {
	env := []string{collective.EnvAddr + "=127.0.0.1", collective.EnvPort + "=" + strconv.Itoa(port),
		collective.EnvRank + "=1", collective.EnvWorldSize + "=2", collective.EnvLocalRank + "=1"}
	return collective.Config{Addr: "127.0.0.1", BindAddr: "127.0.0.1", Port: port, Rank: 0, WorldSize: 2, LocalRank: 0}, env
}

// A collectiveRank is one process's rank of
// BenchmarkCollectiveAllReduceProcesses, with the Call of its last sum.
type collectiveRank struct {
	c     *collective.Comm
	s     *highlevel.Stream
	buf   *highlevel.Array[float32]
	count uint64
	call  collective.Call
	// raw, when set, makes the sums through the raw binding (useRaw).
	raw *ncclRanks
}

// joinCollective joins the job cfg describes on device cfg.LocalRank, its
// communicator blocking or not, and makes the rank's stream, non-blocking
// as the raw binding's and C's, and zeroed buffer of the largest size. The
// rendezvous and the communicator time out within half of procsTimeout, so
// that a rank that is gone fails the other with an error (ErrAborted)
// before the watchdogs end the processes.
func joinCollective(tb testing.TB, cfg collective.Config, blocking bool) *collectiveRank {
	tb.Helper()
	cfg.Timeout = procsTimeout / 2
	dev := highlevel.Device(cfg.LocalRank)
	c, err := collective.Join(context.Background(), cfg, dev, &collective.Options{Timeout: procsTimeout / 2, Blocking: blocking})
	if err != nil {
		tb.Fatal(err)
	}
	r := &collectiveRank{c: c}
	largest := allReduceSizes[len(allReduceSizes)-1]
	if r.s, err = highlevel.NewStream(dev, &highlevel.StreamOptions{NonBlocking: true}); err != nil {
		tb.Fatal(err)
	}
	if r.buf, err = highlevel.AllocArray[float32](dev, largest/4); err != nil {
		tb.Fatal(err)
	}
	// Zeros stay zeros however often they are summed.
	if err := r.buf.MemoryPointer().Memset(0, largest); err != nil {
		tb.Fatal(err)
	}
	return r
}

// useRaw makes r's sums the raw binding's calls on r's communicator,
// stream and array.
func (r *collectiveRank) useRaw(tb testing.TB) { r.raw = r.rawRanks(tb) }

// rawRanks returns the raw binding's view of r's communicator, stream and
// array (rawRanks).
func (r *collectiveRank) rawRanks(tb testing.TB) *ncclRanks {
	return rawRanks(tb, []*collective.Comm{r.c}, []*highlevel.Stream{r.s}, []*highlevel.Array[float32]{r.buf})
}

func (r *collectiveRank) allReduce(count uint64) error {
	if r.raw != nil {
		return r.raw.allReduce(count)
	}
	if count != r.count {
		view, err := r.buf.Slice(0, int(count))
		if err != nil {
			return err
		}
		r.count, r.call = count, collective.AllReduce(r.s, r.c, view, view, collective.Sum)
	}
	return collective.Run(r.call)
}

func (r *collectiveRank) sync() error { return r.c.Wait(context.Background(), r.s) }

func (r *collectiveRank) close(tb testing.TB) {
	end := r.c.Close
	if tb.Failed() {
		end = r.c.Abort
	}
	if err := end(); err != nil {
		tb.Error(err)
	}
	if err := r.s.Close(); err != nil {
		tb.Error(err)
	}
	if err := r.buf.Free(); err != nil {
		tb.Error(err)
	}
}

// BenchmarkCollectiveAllReduceProcessesPaired is
// BenchmarkCollectiveAllReduceProcessesBlocking against the raw binding's
// calls on the same communicator, stream and array, in blocks of
// allReduceBlock that take turns on rank 0 (pairedAs, as
// BenchmarkCollectiveAllReduceBlockingPaired), for the sizes up to 2 MiB.
// Rank 1 makes its sums through the raw binding, so that on rank 0 the
// two sides differ only in their calls; ns/op is Run's, raw-ns/op the raw
// binding's, go/raw the median of the blocks' ratios.
func BenchmarkCollectiveAllReduceProcessesPaired(b *testing.B) {
	requireCollective(b)
	port := freePort(b)
	cfg, env := procsConfig(port)
	var sizes []int
	for _, size := range allReduceSizes {
		if size <= pairedLargest {
			sizes = append(sizes, size)
		}
	}
	var raw *ncclRanks // rank 0's, once joined
	procs(b, "collective-blocking-raw", env, func(tb testing.TB) allReduceRank { return joinCollective(tb, cfg, true) }, sizes,
		func(b *testing.B, peer *rank1, ar allReduceRank, count uint64) {
			r := ar.(*collectiveRank)
			if raw == nil {
				raw = r.rawRanks(b)
			}
			// Rank 1 makes as many sums as rank 0's two sides, a block of
			// each to warm up and b.N of each, its own warm-up first.
			peer.round(b, count, 2*allReduceBlock+2*b.N-allReduceWarmup)
			pairedAs(b, "raw", r.sync, allReduceBlock, func(n int) error {
				for range n {
					if err := r.allReduce(count); err != nil {
						return err
					}
				}
				return nil
			}, func(n int) error { return raw.allReduces(count, n) })
			peer.done(b)
		})
}

// rawRanks returns the raw binding's view of comms and their streams and
// arrays, for benchmarks that pair Run with NCCL's own calls on the same
// communicators: the handles NCCL and CUDA know them by, kept past Comm.Do,
// which only a benchmark that closes comms after its last use may. Its
// close must not be called: they stay comms'.
func rawRanks(tb testing.TB, comms []*collective.Comm, streams []*highlevel.Stream, bufs []*highlevel.Array[float32]) *ncclRanks {
	tb.Helper()
	r := &ncclRanks{}
	for i, c := range comms {
		err := c.Do(func(h nccl.Comm) error {
			r.comms = append(r.comms, h)
			return nil
		})
		if err != nil {
			tb.Fatal(err)
		}
		r.devs = append(r.devs, int32(c.Device()))
		r.streams = append(r.streams, streams[i].Handle())
		r.bufs = append(r.bufs, bufs[i].MemoryPointer().Ptr())
	}
	return r
}
