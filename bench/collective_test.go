package bench

import (
	"context"
	"testing"
	"time"

	"github.com/gocuda/cuda/highlevel"
	"github.com/gocuda/cuda/highlevel/collective"
	"github.com/gocuda/cuda/nccl"
)

// BenchmarkCollectiveAllReduce is BenchmarkAllReduce through
// highlevel/collective: communicators from NewComms over every device, a
// blocking highlevel stream and a zeroed Array[float32] of the largest
// size per device, b.N in-place sums of every device queued from one
// goroutine, each one Run (one NCCL group), then every stream waited for
// with Comm.Wait, the wait timed too. busbw-GB/s is as BenchmarkAllReduce's.
func BenchmarkCollectiveAllReduce(b *testing.B) {
	if err := nccl.Load(); err != nil {
		b.Skipf("no NCCL: %v", err)
	}
	if n, err := highlevel.DeviceCount(); err != nil || n < 2 {
		b.Skipf("needs 2 CUDA devices: count %d, %v", n, err)
	}
	ctx := context.Background()
	comms, err := collective.NewComms(ctx, nil, &collective.Options{Timeout: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	defer collective.CloseAll(comms)
	n := len(comms)
	largest := allReduceSizes[len(allReduceSizes)-1]
	streams := make([]*highlevel.Stream, n)
	bufs := make([]*highlevel.Array[float32], n)
	for i, c := range comms {
		if streams[i], err = highlevel.NewStream(c.Device(), nil); err != nil {
			b.Fatal(err)
		}
		defer streams[i].Close()
		if bufs[i], err = highlevel.NewArrayOn[float32](c.Device(), largest/4); err != nil {
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
	for _, size := range allReduceSizes {
		b.Run("size="+sizeName(size), func(b *testing.B) {
			calls := make([]collective.Call, n)
			for i, c := range comms {
				view, err := bufs[i].Slice(0, size/4)
				if err != nil {
					b.Fatal(err)
				}
				calls[i] = collective.AllReduce(c, view, view, collective.Sum, streams[i])
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
