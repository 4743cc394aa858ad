package bench

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gocuda/cuda/highlevel"
)

// spinSource is the waiting benchmarks' kernel, which runs for ns
// nanoseconds of the GPU's global timer; c/wait.cu has the same.
const spinSource = `
extern "C" __global__ void spin(long long ns) {
	unsigned long long t0, t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
	do {
		asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	} while ((long long)(t - t0) < ns);
}
`

// spinKernel returns the kernel of spinSource, loaded on device 0.
func spinKernel(b *testing.B) *highlevel.Kernel { return kernel(b, spinSource, "spin") }

// waitKernels are the kernel times the waiting benchmarks wait for.
var waitKernels = []time.Duration{10 * time.Microsecond, 100 * time.Microsecond, time.Millisecond}

// cpuTime returns the CPU time the process has used, its threads and
// CUDA's together.
func cpuTime() time.Duration {
	var u syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &u)
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// percentile returns the p-th percentile of the sorted durations d.
func percentile(d []time.Duration, p float64) time.Duration {
	return d[int(p/100*float64(len(d)-1)+0.5)]
}

// reportLatency reports the median of lat as ns/op, beside its 99th
// percentile and the CPU time per operation.
func reportLatency(b *testing.B, lat []time.Duration, cpu time.Duration) {
	slices.Sort(lat)
	b.ReportMetric(float64(percentile(lat, 50).Nanoseconds()), "ns/op")
	b.ReportMetric(float64(percentile(lat, 99).Nanoseconds()), "p99-ns")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(len(lat)), "cpu-ns/op")
}

// The waits BenchmarkWait times: each waits for the work queued on s so
// far, e an event recorded there last.
var waits = []struct {
	name string
	wait func(s *highlevel.Stream, e *highlevel.Event) error
}{
	{"EventWait", func(s *highlevel.Stream, e *highlevel.Event) error {
		if err := e.Record(s); err != nil {
			return err
		}
		return e.Wait(context.Background())
	}},
	{"EventDone", func(s *highlevel.Stream, e *highlevel.Event) error {
		if err := e.Record(s); err != nil {
			return err
		}
		<-e.Done()
		return e.Err()
	}},
	{"StreamWait", func(s *highlevel.Stream, e *highlevel.Event) error { return s.Wait(context.Background()) }},
	{"StreamDone", func(s *highlevel.Stream, e *highlevel.Event) error {
		<-s.Done()
		return s.Err()
	}},
	{"EventSynchronize", func(s *highlevel.Stream, e *highlevel.Event) error {
		if err := e.Record(s); err != nil {
			return err
		}
		return e.Synchronize()
	}},
}

// BenchmarkWait times how long a goroutine takes to learn that a kernel of
// 10 µs, 100 µs or 1 ms has run: a launch, then one of the waits. ns/op is
// the median from the launch to the wait's return; c/wait.cu times
// cudaEventSynchronize, spinning (WaitSync) and on an event made with
// cudaEventBlockingSync (WaitSyncBlocking).
func BenchmarkWait(b *testing.B) {
	k := spinKernel(b)
	for _, w := range waits {
		for _, kt := range waitKernels {
			b.Run(fmt.Sprintf("%s/kernel=%dus", w.name, kt.Microseconds()), func(b *testing.B) {
				s, err := highlevel.NewStream(0, &highlevel.StreamOptions{NonBlocking: true})
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				e, err := highlevel.NewEvent(0, &highlevel.EventOptions{DisableTiming: true})
				if err != nil {
					b.Fatal(err)
				}
				defer e.Close()
				ns := int64(kt)
				for range 3 { // warm up: module, stream, and what the waits learn
					if err := k.Launch(s, one, ns); err != nil {
						b.Fatal(err)
					}
					if err := w.wait(s, e); err != nil {
						b.Fatal(err)
					}
				}
				lat := make([]time.Duration, 0, b.N)
				b.ResetTimer()
				c0 := cpuTime()
				for range b.N {
					t0 := time.Now()
					if err := k.Launch(s, one, ns); err != nil {
						b.Fatal(err)
					}
					if err := w.wait(s, e); err != nil {
						b.Fatal(err)
					}
					lat = append(lat, time.Since(t0))
				}
				cpu := cpuTime() - c0
				b.StopTimer()
				reportLatency(b, lat, cpu)
			})
		}
	}
}

// BenchmarkServe is the serving workload: workers goroutines, each with a
// stream of its own, repeat a request (64 KiB from pinned memory to the
// device, a kernel of 10 µs, 100 µs or 1 ms, 64 KiB back, then a wait with
// Stream.Wait or Done), b.N requests in all. ns/op is the wall time per
// request; req/s, the 50th and 99th percentile of a request's time and the
// CPU time per request follow. c/wait.cu runs the same with C threads
// waiting in cudaEventSynchronize, spinning (ServeSpin) or on an event
// made with cudaEventBlockingSync (ServeBlocking).
func BenchmarkServe(b *testing.B) {
	k := spinKernel(b)
	servers := make([]*server, 64)
	for i := range servers {
		servers[i] = newServer(b)
	}
	for _, how := range []string{"Wait", "Done"} {
		for _, workers := range []int{1, 16, 64} {
			for _, kt := range waitKernels {
				b.Run(fmt.Sprintf("%s/workers=%d/kernel=%dus", how, workers, kt.Microseconds()), func(b *testing.B) {
					serve(b, k, servers[:workers], how == "Done", kt)
				})
			}
		}
	}
}

// A server is one worker of BenchmarkServe: its stream and buffers.
type server struct {
	s       *highlevel.Stream
	in, out []byte
	dev     highlevel.MemoryPointer
	lat     []time.Duration
}

const request = 64 << 10

func newServer(b *testing.B) *server {
	s, err := highlevel.NewStream(0, &highlevel.StreamOptions{NonBlocking: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	sv := &server{s: s}
	for _, p := range []*[]byte{&sv.in, &sv.out} {
		m, err := highlevel.AllocPinned(request)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { m.Free() })
		*p = m.Bytes()
	}
	if sv.dev, err = highlevel.Device(0).Alloc(request); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sv.dev.Free() })
	return sv
}

// request makes one request and waits for it.
func (sv *server) request(k *highlevel.Kernel, ns int64, done bool) error {
	t0 := time.Now()
	if err := highlevel.CopyFromHostAsync(sv.s, sv.dev, sv.in); err != nil {
		return err
	}
	if err := k.Launch(sv.s, one, ns); err != nil {
		return err
	}
	if err := highlevel.CopyToHostAsync(sv.s, sv.out, sv.dev); err != nil {
		return err
	}
	var err error
	if done {
		<-sv.s.Done()
		err = sv.s.Err()
	} else {
		err = sv.s.Wait(context.Background())
	}
	sv.lat = append(sv.lat, time.Since(t0))
	return err
}

// serve runs b.N requests over servers, one goroutine each.
func serve(b *testing.B, k *highlevel.Kernel, servers []*server, done bool, kt time.Duration) {
	workers := len(servers)
	for i := range servers {
		for range 3 { // warm up
			if err := servers[i].request(k, int64(kt), done); err != nil {
				b.Fatal(err)
			}
		}
		servers[i].lat = make([]time.Duration, 0, b.N/workers+1)
	}
	var wg sync.WaitGroup
	errs := make([]error, workers)
	b.ResetTimer()
	t0, c0 := time.Now(), cpuTime()
	for i, sv := range servers {
		n := b.N / workers
		if i < b.N%workers {
			n++
		}
		wg.Go(func() {
			for range n {
				if err := sv.request(k, int64(kt), done); err != nil {
					errs[i] = err
					return
				}
			}
		})
	}
	wg.Wait()
	wall, cpu := time.Since(t0), cpuTime()-c0
	b.StopTimer()
	var lat []time.Duration
	for i, sv := range servers {
		if errs[i] != nil {
			b.Fatal(errs[i])
		}
		lat = append(lat, sv.lat...)
	}
	slices.Sort(lat)
	n := float64(len(lat))
	b.ReportMetric(float64(wall.Nanoseconds())/n, "ns/op")
	b.ReportMetric(n/wall.Seconds(), "req/s")
	b.ReportMetric(float64(percentile(lat, 50).Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(percentile(lat, 99).Nanoseconds()), "p99-ns")
	b.ReportMetric(float64(cpu.Nanoseconds())/n, "cpu-ns/op")
}

// BenchmarkWaitMany has 1,000 goroutines, each with a stream of its own,
// launch a kernel of 1 ms and wait for it with Stream.Wait or Done, b.N
// times each at once: ns/op is the wall time of a round, p50-ns and p99-ns
// the percentiles of a wait's time from its launch, cpu-ns/op the CPU time
// per wait, and threads the most OS threads the process had meanwhile
// (sampled every millisecond), which stays bounded however many wait.
func BenchmarkWaitMany(b *testing.B) {
	const waiters = 1000
	k := spinKernel(b)
	streams := make([]*highlevel.Stream, waiters)
	for i := range streams {
		s, err := highlevel.NewStream(0, &highlevel.StreamOptions{NonBlocking: true})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		streams[i] = s
	}
	for _, how := range []string{"Wait", "Done"} {
		b.Run(how, func(b *testing.B) {
			wait := func(s *highlevel.Stream) error { return s.Wait(context.Background()) }
			if how == "Done" {
				wait = func(s *highlevel.Stream) error { <-s.Done(); return s.Err() }
			}
			lat := make([][]time.Duration, waiters)
			errs := make([]error, waiters)
			stop, peak := make(chan struct{}), make(chan int)
			go func() { peak <- sampleThreads(stop) }()
			b.ResetTimer()
			c0 := cpuTime()
			for range b.N {
				var wg sync.WaitGroup
				for i, s := range streams {
					wg.Go(func() {
						t0 := time.Now()
						if err := k.Launch(s, one, int64(time.Millisecond)); err != nil {
							errs[i] = err
							return
						}
						if err := wait(s); err != nil {
							errs[i] = err
							return
						}
						lat[i] = append(lat[i], time.Since(t0))
					})
				}
				wg.Wait()
			}
			cpu := cpuTime() - c0
			b.StopTimer()
			close(stop)
			threads := <-peak
			for _, err := range errs {
				if err != nil {
					b.Fatal(err)
				}
			}
			all := slices.Concat(lat...)
			reportLatency(b, all, cpu)
			// reportLatency's ns/op, the median wait, becomes p50-ns: ns/op
			// is a round's.
			b.ReportMetric(float64(percentile(all, 50).Nanoseconds()), "p50-ns")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/op")
			b.ReportMetric(float64(threads), "threads")
		})
	}
}

// sampleThreads returns the most OS threads the process had, sampled every
// millisecond until stop is closed (0 where /proc cannot say).
func sampleThreads(stop <-chan struct{}) int {
	most := 0
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for {
		most = max(most, threads())
		select {
		case <-stop:
			return most
		case <-t.C:
		}
	}
}

// threads returns the process's OS threads, from /proc/self/status.
func threads() int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

// BenchmarkWaitLong waits with Stream.Wait for kernels of one second, the
// first with nothing learned: ns/op is a wait's time from the launch, and
// cpu-% the CPU time the process spent meanwhile, in percent of a core.
func BenchmarkWaitLong(b *testing.B) {
	k := spinKernel(b)
	s, err := highlevel.NewStream(0, &highlevel.StreamOptions{NonBlocking: true})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.ResetTimer()
	t0, c0 := time.Now(), cpuTime()
	for range b.N {
		if err := k.Launch(s, one, int64(time.Second)); err != nil {
			b.Fatal(err)
		}
		if err := s.Wait(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	wall, cpu := time.Since(t0), cpuTime()-c0
	b.ReportMetric(100*cpu.Seconds()/wall.Seconds(), "cpu-%")
}
