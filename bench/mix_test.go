package bench

import (
	"context"
	"runtime"
	"testing"

	"github.com/gocuda/cuda/cudadrv"
	"github.com/gocuda/cuda/highlevel"
)

// mixSource is the mix's kernel; c/mix.c compiles the same source.
const mixSource = `
extern "C" __global__ void axpy(float a, const float *x, float *y, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) y[i] += a * x[i];
}
`

const (
	mixN        = 1024     // elements of x and y
	mixBytes    = mixN * 4 // bytes of x and y
	mixLaunches = 20       // launches of axpy in one round of the mix
)

// mixConfig launches a thread per element.
var mixConfig = highlevel.LaunchConfig{Grid: highlevel.Dim3{X: mixN / 256}, Block: highlevel.Dim3{X: 256}}

// A mix is what the mix benchmarks queue their work with: axpy, a stream,
// and two arrays of mixN float32 from a memory pool, all on device 0.
type mix struct {
	k    *highlevel.Kernel
	s    *highlevel.Stream
	x, y *highlevel.Array[float32]
}

func mixSetup(b *testing.B) *mix {
	d := device(b)
	m := &mix{k: kernel(b, mixSource, "axpy")}
	var err error
	if m.s, err = highlevel.NewStream(d, nil); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { m.s.Close() })
	pool, err := highlevel.NewMemoryPool(d)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { pool.Close() })
	for _, a := range []**highlevel.Array[float32]{&m.x, &m.y} {
		if *a, err = highlevel.AllocArray[float32](pool, mixN); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { (*a).Free() })
	}
	return m
}

func (m *mix) memset() error { return m.y.MemoryPointer().MemsetAsync(m.s, 0, mixBytes) }

func (m *mix) launch() error { return m.k.Launch(m.s, mixConfig, float32(2), m.x, m.y, int32(mixN)) }

func (m *mix) copy() error {
	return m.x.MemoryPointer().CopyFromDeviceAsync(m.s, m.y.MemoryPointer(), mixBytes)
}

// round is one round of the mix: a memset, mixLaunches launches and a
// device-to-device copy.
func (m *mix) round() error {
	if err := m.memset(); err != nil {
		return err
	}
	for range mixLaunches {
		if err := m.launch(); err != nil {
			return err
		}
	}
	return m.copy()
}

// BenchmarkMix is a stream carrying a mix of small operations, round after
// round: a memset of 4 KiB, 20 launches of a small kernel (axpy over 1024
// floats, with four arguments, two of them Arrays) and a copy of 4 KiB
// from device to device, synchronized at the end as the other throughput
// benchmarks are. Each operation alone is BenchmarkMixMemset,
// BenchmarkMixLaunch and BenchmarkMixD2D. c/mix.c does the same calls.
func BenchmarkMix(b *testing.B) {
	m := mixSetup(b)
	b.ReportAllocs()
	loop(b, m.s, m.round)
}

// BenchmarkMixMemset is the mix's memset alone.
func BenchmarkMixMemset(b *testing.B) {
	m := mixSetup(b)
	b.ReportAllocs()
	loop(b, m.s, m.memset)
}

// BenchmarkMixLaunch is the mix's launch alone.
func BenchmarkMixLaunch(b *testing.B) {
	m := mixSetup(b)
	b.ReportAllocs()
	loop(b, m.s, m.launch)
}

// BenchmarkMixD2D is the mix's copy alone.
func BenchmarkMixD2D(b *testing.B) {
	m := mixSetup(b)
	b.ReportAllocs()
	loop(b, m.s, m.copy)
}

// BenchmarkMixWait is the mix's memset and a Stream.Wait for it: on the
// stand-in driver (TestStubMix), whose events have always happened, what a
// wait costs Go beside its cgo calls.
func BenchmarkMixWait(b *testing.B) {
	m := mixSetup(b)
	b.ReportAllocs()
	ctx := context.Background()
	loop(b, m.s, func() error {
		if err := m.memset(); err != nil {
			return err
		}
		return m.s.Wait(ctx)
	})
}

// BenchmarkMixDone is BenchmarkMixWait with <-Done() and Err.
func BenchmarkMixDone(b *testing.B) {
	m := mixSetup(b)
	b.ReportAllocs()
	loop(b, m.s, func() error {
		if err := m.memset(); err != nil {
			return err
		}
		<-m.s.Done()
		return m.s.Err()
	})
}

// BenchmarkMixGraph is BenchmarkMix's round captured once into a graph,
// whose one launch a round replaces the round's 22 calls: what a program
// whose stream carries many small operations does when their submission,
// not the GPU, limits it. The table compares it with C's calls, c/mix.c.
func BenchmarkMixGraph(b *testing.B) {
	m := mixSetup(b)
	x := captured(b, m.s, m.round)
	b.ReportAllocs()
	loop(b, m.s, func() error { return x.Launch(m.s) })
}

// BenchmarkMixPaired is BenchmarkMix against its C twin's calls made in
// this process (mixTwin, one cgo call a round) on the same stream and
// memory, in blocks of mixBlock rounds that take turns (paired).
func BenchmarkMixPaired(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	initDevice(b)
	m := mixSetup(b)
	f := rawFunction(b, mixSource, "axpy")
	ptr := func(a *highlevel.Array[float32]) cudadrv.Deviceptr {
		return cudadrv.Deviceptr(uintptr(a.MemoryPointer().Ptr()))
	}
	twin, err := newMixTwin(f, cudadrv.Stream(m.s.Handle()), ptr(m.x), ptr(m.y), mixN, mixLaunches)
	if err != nil {
		b.Fatal(err)
	}
	rounds := func(round func() error) func(int) error {
		return func(n int) error {
			for range n {
				if err := round(); err != nil {
					return err
				}
			}
			return nil
		}
	}
	paired(b, m.s.Synchronize, mixBlock, rounds(m.round), rounds(twin.round))
}

// mixBlock is the rounds of a block of BenchmarkMixPaired: about 30 ms.
const mixBlock = 400
