package highlevel

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/gocuda/cuda/cudadrv"
)

// The GPU side of how captures, closing and waiting meet, and of the
// operations that must finish before they return.

// countKernel counts in *bad the words of p[:n] that differ from v.
const countKernel = `
extern "C" __global__ void count_not(const unsigned *p, unsigned v, int n, int *bad) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n && p[i] != v) atomicAdd(bad, 1);
}
`

// deviceBuffer allocates n bytes of d, freed when the test ends.
func deviceBuffer(t *testing.T, d Device, n int) MemoryPointer {
	t.Helper()
	p, err := d.Alloc(n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Memory().free() })
	return p
}

// wordCounter returns a function that counts, on a non-blocking stream of
// its own (ordered with no other stream), the words of the n bytes at p
// that differ from v.
func wordCounter(t *testing.T, d Device) func(p MemoryPointer, v uint32, n int) int {
	t.Helper()
	k := compiledKernel(t, countKernel, "count_not")
	s, err := NewStream(d, &StreamOptions{NonBlocking: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	bad, err := AllocArray[int32](d, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bad.Free() })
	return func(p MemoryPointer, v uint32, n int) int {
		t.Helper()
		words := n / 4
		if err := bad.MemoryPointer().MemsetAsync(s, 0, 4); err != nil {
			t.Fatal(err)
		}
		cfg := LaunchConfig{Grid: Dim3{X: (words + 255) / 256}, Block: Dim3{X: 256}}
		if err := k.Launch(s, cfg, p, v, int32(words), bad); err != nil {
			t.Fatal(err)
		}
		got := make([]int32, 1)
		if err := CopyToHostAsync(s, got, bad.MemoryPointer()); err != nil {
			t.Fatal(err)
		}
		if err := s.Synchronize(); err != nil {
			t.Fatal(err)
		}
		return int(got[0])
	}
}

// TestGPUStreamCloseDuringCapture closes a stream while it captures, as the
// stream that began the capture and as one that joined it (WaitEvent of an
// event recorded in the capture), in each capture mode, from another
// goroutine. Close returns at once and the stream is destroyed when the
// capture ends: EndCapture on a closed stream ends its capture and returns
// ErrClosed, and the process goes on working. (A stream destroyed inside a
// capture left the driver a dangling stream: the process crashed later,
// in calls of every kind.)
func TestGPUStreamCloseDuringCapture(t *testing.T) {
	d := gpu(t)
	count := wordCounter(t, d)
	buf := deviceBuffer(t, d, 1<<12)
	for _, mode := range []CaptureMode{CaptureRelaxed, CaptureGlobal, CaptureThreadLocal} {
		for _, joined := range []bool{false, true} {
			name := mode.String() + "/origin"
			if joined {
				name = mode.String() + "/joined"
			}
			t.Run(name, func(t *testing.T) {
				a, err := NewStream(d, &StreamOptions{NonBlocking: true})
				if err != nil {
					t.Fatal(err)
				}
				defer a.Close()
				b, err := NewStream(d, &StreamOptions{NonBlocking: true})
				if err != nil {
					t.Fatal(err)
				}
				defer b.Close()
				e, err := NewEvent(d, &EventOptions{DisableTiming: true})
				if err != nil {
					t.Fatal(err)
				}
				defer e.Close()
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				if err := a.BeginCapture(mode); err != nil {
					t.Fatal(err)
				}
				victim := a
				if joined {
					victim = b
					if err := e.Record(a); err != nil {
						t.Fatal(err)
					}
					if err := b.WaitEvent(e); err != nil {
						t.Fatal(err)
					}
				}
				if err := buf.MemsetAsync(victim, 1, 1<<12); err != nil {
					t.Fatal(err)
				}
				closed := make(chan error)
				go func() { closed <- victim.Close() }()
				if err := <-closed; err != nil {
					t.Errorf("Close during the capture: %v", err)
				}
				g, err := a.EndCapture()
				switch {
				case !joined && !errors.Is(err, ErrClosed):
					t.Errorf("EndCapture of a stream closed during its capture: %v, want ErrClosed", err)
				case joined:
					t.Logf("EndCapture with a joined stream closed: %v", err)
				}
				if g != nil {
					g.Close()
				}
				closedCaptures.Lock()
				left := len(closedCaptures.streams)
				closedCaptures.Unlock()
				if left != 0 {
					t.Errorf("%d closed streams still wait for their captures to end", left)
				}
				// The process goes on: allocation, a plain memset, a
				// kernel.
				p, err := d.Alloc(1 << 20)
				if err != nil {
					t.Fatal(err)
				}
				defer p.Memory().free()
				if err := p.Memset(3, 1<<20); err != nil {
					t.Fatal(err)
				}
				if n := count(p, 0x03030303, 1<<20); n != 0 {
					t.Errorf("%d words not set after the capture", n)
				}
			})
		}
	}
}

// TestGPUWaitDuringCapture waits for a stream while it captures, and for an
// event recorded in a capture: the work runs only when the graph is
// launched, so the waits return ErrCapturing at once rather than an error
// of CUDA's (cuEventQuery: CUDA_ERROR_INVALID_VALUE) or never.
func TestGPUWaitDuringCapture(t *testing.T) {
	d := gpu(t)
	s, err := NewStream(d, &StreamOptions{NonBlocking: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e, err := NewEvent(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	buf := deviceBuffer(t, d, 1<<12)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.BeginCapture(CaptureRelaxed); err != nil {
		t.Fatal(err)
	}
	if err := buf.MemsetAsync(s, 1, 1<<12); err != nil {
		t.Fatal(err)
	}
	if err := s.Wait(ctx); !errors.Is(err, ErrCapturing) {
		t.Errorf("Stream.Wait during its capture: %v, want ErrCapturing", err)
	}
	select {
	case <-s.Done():
	case <-ctx.Done():
		t.Error("Stream.Done during its capture: not closed")
	}
	if err := e.Record(s); err != nil {
		t.Fatalf("Record in a capture: %v", err)
	}
	if err := e.Wait(ctx); !errors.Is(err, ErrCapturing) {
		t.Errorf("Event.Wait for a Record in a capture: %v, want ErrCapturing", err)
	}
	if _, err := e.Query(); !errors.Is(err, ErrCapturing) {
		t.Errorf("Event.Query for a Record in a capture: %v, want ErrCapturing", err)
	}
	if err := e.Synchronize(); !errors.Is(err, ErrCapturing) {
		t.Errorf("Event.Synchronize for a Record in a capture: %v, want ErrCapturing", err)
	}
	g, err := s.EndCapture()
	if err != nil {
		t.Fatal(err)
	}
	g.Close()
	if err := e.Record(s); err != nil {
		t.Fatal(err)
	}
	if err := e.Wait(ctx); err != nil {
		t.Errorf("Event.Wait for a Record after the capture: %v", err)
	}
	if err := s.Wait(ctx); err != nil {
		t.Errorf("Stream.Wait after the capture: %v", err)
	}
}

// TestGPUAsyncPoolClosedWithWorkQueued closes stream-ordered pools while
// kernels that use their memory, and the frees behind them, are still
// queued on two streams, and frees memory of a stream that another
// goroutine closes meanwhile: the pool is destroyed only after the frees
// have run, and nothing is freed under a kernel (it killed the context
// with CUDA_ERROR_ILLEGAL_ADDRESS, or crashed in cuMemPoolDestroy).
func TestGPUAsyncPoolClosedWithWorkQueued(t *testing.T) {
	d := gpu(t)
	spin := spinner(t, d)
	count := wordCounter(t, d)
	var streams [3]*Stream
	for i := range streams {
		s, err := NewStream(d, &StreamOptions{NonBlocking: true})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		streams[i] = s
	}
	for round := range 3 {
		p, err := NewMemoryAsyncPool(d)
		if err != nil {
			t.Fatal(err)
		}
		var mem []MemoryPointer
		for i, s := range streams[:2] {
			m, err := p.AllocAsync(s, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			spin(s, m, uint32(i+1), 30)
			mem = append(mem, m)
		}
		switch round {
		case 0: // the frees first
			for _, m := range mem {
				if err := m.Memory().free(); err != nil {
					t.Fatal(err)
				}
			}
			if err := p.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
		case 1: // Close first: the last Free destroys the pool
			if err := p.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			for _, m := range mem {
				if err := m.Memory().free(); err != nil {
					t.Fatal(err)
				}
			}
		case 2: // the stream closed while its memory is freed
			closed := make(chan error)
			go func() { closed <- streams[0].Close() }()
			for _, m := range mem {
				if err := m.Memory().free(); err != nil {
					t.Fatal(err)
				}
			}
			if err := <-closed; err != nil {
				t.Fatal(err)
			}
			// A new allocation may take the block the kernel on the
			// closed stream writes at its end: it must not see that.
			m, err := p.AllocAsync(streams[2], 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			if err := m.MemsetAsync(streams[2], 9, 1<<20); err != nil {
				t.Fatal(err)
			}
			if err := d.Synchronize(); err != nil {
				t.Fatal(err)
			}
			if n := count(m, 0x09090909, 1<<20); n != 0 {
				t.Errorf("%d words of a new allocation changed by a kernel of the memory freed before", n)
			}
			m.Memory().free()
			if err := p.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
		}
		if err := d.Synchronize(); err != nil {
			t.Fatalf("round %d: the device after the pool's close: %v", round, err)
		}
	}
}

// TestGPUPlainOperationsComplete checks that a memset or copy without
// Async has been done when it returns: a kernel queued right after on a
// non-blocking stream, which is ordered with nothing else, sees its bytes.
// (cuMemsetD8 and cuMemcpy from pageable memory may return before.)
func TestGPUPlainOperationsComplete(t *testing.T) {
	d := gpu(t)
	count := wordCounter(t, d)
	const n = 64 << 20
	p, err := d.Alloc(n)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Memory().free()
	q, err := d.Alloc(n)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Memory().free()
	host := make([]uint32, 256<<10) // 1 MiB: below the staging threshold
	for round := range 4 {
		v := byte(round + 1)
		word := uint32(v) * 0x01010101
		if err := p.Memset(v, n); err != nil {
			t.Fatal(err)
		}
		if bad := count(p, word, n); bad != 0 {
			t.Errorf("round %d: Memset: %d words not set on its return", round, bad)
		}
		if err := q.CopyFromDevice(p, n); err != nil {
			t.Fatal(err)
		}
		if bad := count(q, word, n); bad != 0 {
			t.Errorf("round %d: CopyFromDevice: %d words not copied on its return", round, bad)
		}
		for i := range host {
			host[i] = word + 1
		}
		if err := CopyFromHost(p, host); err != nil {
			t.Fatal(err)
		}
		if bad := count(p, word+1, len(host)*4); bad != 0 {
			t.Errorf("round %d: CopyFromHost from pageable memory: %d words not copied on its return", round, bad)
		}
	}
}

// TestGPUDoneLegacyStream checks that Done of a Stream of the legacy
// default stream covers the work queued on that stream through nil (or
// another Stream of it), which the Stream does not see: its channel does
// not close before that work has run, as an earlier Done's might.
func TestGPUDoneLegacyStream(t *testing.T) {
	d := gpu(t)
	spin := spinner(t, d)
	l, err := LegacyDefaultStream(d)
	if err != nil {
		t.Fatal(err)
	}
	p, err := d.Alloc(4)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Memory().free()
	<-l.Done()
	spin(nil, p, 1, 100)
	select {
	case <-l.Done():
		t.Error("Done closed while a kernel queued on the legacy default stream through nil still ran")
	case <-time.After(20 * time.Millisecond):
	}
	if err := l.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestGPUGraphExecConcurrent launches, uploads and updates one GraphExec,
// and instantiates, launches and closes GraphExecs of the same Graphs, from
// several goroutines at once: CUDA's graph objects are not safe for
// concurrent use, so the package takes turns. Without them the driver
// crashed in cuGraphLaunch, cuGraphInstantiateWithParams and, within
// 240,000 steps in each of 15 processes, cuGraphExecDestroy.
func TestGPUGraphExecConcurrent(t *testing.T) {
	d := gpu(t)
	buf := deviceBuffer(t, d, 1<<12)
	capture := func(s *Stream, v byte) *Graph {
		t.Helper()
		g, err := Capture(s, CaptureRelaxed, func() error { return buf.MemsetAsync(s, v, 1<<12) })
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	s, err := NewStream(d, &StreamOptions{NonBlocking: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	graphs := []*Graph{capture(s, 1), capture(s, 2)}
	defer graphs[0].Close()
	defer graphs[1].Close()
	x, err := graphs[0].Instantiate(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	steps := 20000
	if testing.Short() {
		steps = 200
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			s, err := NewStream(d, &StreamOptions{NonBlocking: true})
			if err != nil {
				t.Error(err)
				return
			}
			defer s.Close()
			for i := range steps {
				var err error
				switch (g + i) % 4 {
				case 0, 1:
					err = x.Launch(s)
				case 2:
					err = x.Update(graphs[i%2])
				case 3:
					var y *GraphExec
					if y, err = graphs[i%2].Instantiate(&InstantiateOptions{Upload: s}); err == nil {
						err = errors.Join(y.Launch(s), y.Close())
					}
				}
				if err != nil {
					t.Errorf("goroutine %d, step %d: %v", g, i, err)
					return
				}
			}
			if err := s.Synchronize(); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
}

// TestGPUGlobalCaptureBesideOtherWork captures in CaptureGlobal mode, over
// and over for two seconds, while other goroutines allocate and free
// stream-ordered and plain memory, query their streams and wait for their
// events, each on objects of its own. The package refuses what the global
// mode forbids with ErrCapturing; the rest runs, and the process lives.
// (Handed to driver 580 in global mode, such captures crashed the process
// within seconds, in calls of every kind, as they crash a C program too:
// the package captures in the driver's thread-local mode and refuses the
// calls from other threads itself.)
func TestGPUGlobalCaptureBesideOtherWork(t *testing.T) {
	d := gpu(t)
	buf := deviceBuffer(t, d, 1<<12)
	refused := func(err error) error {
		if errors.Is(err, ErrCapturing) {
			return nil
		}
		return err
	}
	workers := []struct {
		name string
		f    func(s *Stream) error
	}{
		{"AllocAsync and Free", func(s *Stream) error {
			p, err := AllocAsync(s, 1<<12)
			if err != nil {
				return err
			}
			return refused(p.Memory().free())
		}},
		{"MemsetAsync and Stream.Query", func(s *Stream) error {
			if err := buf.MemsetAsync(s, 1, 1<<12); err != nil {
				return err
			}
			for {
				done, err := s.Query()
				if err != nil || done {
					return refused(err)
				}
			}
		}},
		{"Event.Record and Event.Wait", func(s *Stream) error {
			if err := buf.MemsetAsync(s, 1, 1<<12); err != nil {
				return err
			}
			e, err := s.recordNew(nil)
			if err != nil {
				return err
			}
			defer e.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			return e.Wait(ctx)
		}},
		{"Device.Alloc and Free", func(*Stream) error {
			p, err := d.Alloc(1 << 12)
			if err != nil {
				return refused(err)
			}
			return refused(p.Memory().free())
		}},
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	ops := make([]atomic.Int64, len(workers))
	for i, w := range workers {
		for range 2 {
			wg.Go(func() {
				s, err := NewStream(d, &StreamOptions{NonBlocking: true})
				if err != nil {
					t.Error(err)
					return
				}
				defer s.Close()
				for !stop.Load() {
					if err := w.f(s); err != nil {
						t.Errorf("%s beside a capture in global mode: %v", w.name, err)
						return
					}
					ops[i].Add(1)
				}
			})
		}
	}
	cs, err := NewStream(d, &StreamOptions{NonBlocking: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	captures := 0
	for start := time.Now(); time.Since(start) < 2*time.Second; captures++ {
		g, err := Capture(cs, CaptureGlobal, func() error { return buf.MemsetAsync(cs, 2, 1<<12) })
		if err != nil {
			t.Errorf("Capture in global mode: %v", err)
			break
		}
		x, err := g.Instantiate(nil)
		g.Close()
		if err != nil {
			t.Errorf("Instantiate: %v", err)
			break
		}
		err = errors.Join(x.Launch(cs), cs.Synchronize(), x.Close())
		if err != nil {
			t.Errorf("Launch of a graph captured in global mode: %v", err)
			break
		}
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("%d captures", captures)
	for i, w := range workers {
		t.Logf("%s: %d", w.name, ops[i].Load())
		if ops[i].Load() == 0 {
			t.Errorf("%s never ran beside the captures", w.name)
		}
	}
}

// TestGPUOtherGoroutinesOnACapturingStream captures on a stream, over and
// over for two seconds, while other goroutines record events on it, make
// it wait for events of their own, join its capture by waiting for an
// event recorded in it, and launch on it. CUDA refuses some of that and
// invalidates the capture, and takes the rest into the graph. An error,
// the captures' or the other goroutines', is allowed only where it is one
// of CUDA's statuses of stream capture (captureRefusal), or the package's
// ErrCapturing; any other fails the test, and so does a run in which no
// capture ended well or no call of the other goroutines worked. The
// process must stay alive and the device work at the end. (Made from two
// threads at once, such calls on a capturing stream crashed driver 580
// within seconds, in C too: the package now makes them one at a time.)
func TestGPUOtherGoroutinesOnACapturingStream(t *testing.T) {
	d := gpu(t)
	buf := deviceBuffer(t, d, 1<<12)
	cs, err := NewStream(d, &StreamOptions{NonBlocking: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	// closed returns err with the Close of e, where e was made.
	closed := func(e *Event, err error) error {
		if e == nil {
			return err
		}
		return errors.Join(err, e.Close())
	}
	others := []struct {
		name string
		f    func(s *Stream) error
	}{
		{"a record on the capturing stream", func(*Stream) error {
			e, err := cs.recordNew(nil)
			return closed(e, err)
		}},
		{"a wait for an event of another stream", func(s *Stream) error {
			e, err := s.recordNew(nil)
			if err != nil {
				return closed(e, err)
			}
			return closed(e, cs.WaitEvent(e))
		}},
		{"a join of the capture", func(s *Stream) error {
			e, err := cs.recordNew(nil)
			if err != nil {
				return closed(e, err)
			}
			if err := s.WaitEvent(e); err != nil {
				return closed(e, err)
			}
			return closed(e, buf.MemsetAsync(s, 3, 1<<12))
		}},
		{"work on the capturing stream", func(*Stream) error { return buf.MemsetAsync(cs, 4, 1<<12) }},
	}
	// refused counts the errors allowed, by call and status; check fails
	// the test on any other.
	var mu sync.Mutex
	refused := map[string]int{}
	check := func(what string, err error) {
		for _, e := range captureErrorParts(err) {
			if !captureRefusal(e) {
				t.Errorf("%s: %v, want only CUDA's statuses of stream capture or ErrCapturing", what, e)
				continue
			}
			status := "ErrCapturing"
			if r := cudadrv.Result(0); errors.As(e, &r) {
				status = r.Error()
			}
			mu.Lock()
			refused[what+": "+status]++
			mu.Unlock()
		}
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	tried := make([]atomic.Int64, len(others))
	worked := make([]atomic.Int64, len(others))
	for i, o := range others {
		wg.Go(func() {
			for !stop.Load() {
				// A stream of its own each time: one that joined a
				// capture may stay in it.
				s, err := NewStream(d, &StreamOptions{NonBlocking: true})
				if err != nil {
					t.Error(err)
					return
				}
				tried[i].Add(1)
				if err := o.f(s); err != nil {
					check(o.name, err)
				} else {
					worked[i].Add(1)
				}
				// Close of a stream in a capture leaves it to the
				// capture's end, without an error.
				if err := s.Close(); err != nil {
					t.Errorf("Close of %s's stream: %v", o.name, err)
				}
			}
		})
	}
	captures, ok := 0, 0
	for start := time.Now(); time.Since(start) < 2*time.Second; captures++ {
		g, err := Capture(cs, CaptureRelaxed, func() error {
			for range 4 {
				if err := buf.MemsetAsync(cs, 2, 1<<12); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			check("capture", err)
			continue
		}
		ok++
		if err := g.Close(); err != nil {
			t.Errorf("Close of a captured graph: %v", err)
		}
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("%d captures, %d ended well", captures, ok)
	othersWorked := int64(0)
	for i, o := range others {
		t.Logf("%s: %d calls, %d worked", o.name, tried[i].Load(), worked[i].Load())
		othersWorked += worked[i].Load()
	}
	for what, n := range refused {
		t.Logf("%d times %s", n, what)
	}
	if ok == 0 {
		t.Errorf("none of %d captures ended well", captures)
	}
	if othersWorked == 0 {
		t.Errorf("no call of the other goroutines worked")
	}
	// The device still works. The joins' memsets on streams of their own
	// may still be queued: the device is waited for first.
	if err := d.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if err := buf.MemsetAsync(cs, 5, 1<<12); err != nil {
		t.Fatal(err)
	}
	if err := cs.Synchronize(); err != nil {
		t.Fatal(err)
	}
	var b [1 << 12]byte
	if err := buf.CopyToHostPointer(unsafe.Pointer(&b[0]), len(b)); err != nil {
		t.Fatal(err)
	}
	if b[0] != 5 || b[len(b)-1] != 5 {
		t.Errorf("after the captures: bytes %d..%d, want 5", b[0], b[len(b)-1])
	}
}

// captureRefusal reports whether err is how a call meets a capture that
// another goroutine's calls spoilt or joined: one of CUDA's statuses of
// stream capture (CUDA_ERROR_STREAM_CAPTURE_ISOLATION, which WaitEvent
// returns for a capturing stream's wait for an event outside its capture;
// _INVALIDATED, for every call on a capture CUDA invalidated; _UNJOINED,
// EndCapture's, where a stream joined the capture and left it unjoined;
// _UNSUPPORTED, _MERGE, _UNMATCHED, _IMPLICIT, _WRONG_THREAD and
// CUDA_ERROR_CAPTURED_EVENT, CUDA's other refusals of calls that meet a
// capture), or the package's ErrCapturing.
func captureRefusal(err error) bool {
	if errors.Is(err, ErrCapturing) {
		return true
	}
	var r cudadrv.Result
	if !errors.As(err, &r) {
		return false
	}
	switch r {
	case cudadrv.ERROR_STREAM_CAPTURE_UNSUPPORTED, cudadrv.ERROR_STREAM_CAPTURE_INVALIDATED,
		cudadrv.ERROR_STREAM_CAPTURE_MERGE, cudadrv.ERROR_STREAM_CAPTURE_UNMATCHED,
		cudadrv.ERROR_STREAM_CAPTURE_UNJOINED, cudadrv.ERROR_STREAM_CAPTURE_ISOLATION,
		cudadrv.ERROR_STREAM_CAPTURE_IMPLICIT, cudadrv.ERROR_CAPTURED_EVENT,
		cudadrv.ERROR_STREAM_CAPTURE_WRONG_THREAD:
		return true
	}
	return false
}

// captureErrorParts returns the errors err joins (errors.Join, also inside
// a wrapping), each whole with its wrappings; or err.
func captureErrorParts(err error) []error {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			var parts []error
			for _, c := range j.Unwrap() {
				parts = append(parts, captureErrorParts(c)...)
			}
			return parts
		}
	}
	return []error{err}
}

// TestGPULegacyStreamDuringCapture queues work on the legacy default
// stream, through nil and through LegacyDefaultStream, while another
// stream captures: every operation returns ErrCapturing without reaching
// CUDA, and works once the capture ended. (MemsetAsync on nil reached the
// driver, which crashed where it raced a BeginCapture.)
func TestGPULegacyStreamDuringCapture(t *testing.T) {
	d := gpu(t)
	buf := deviceBuffer(t, d, 1<<12)
	legacy, err := LegacyDefaultStream(d)
	if err != nil {
		t.Fatal(err)
	}
	var word [4]byte
	ops := []struct {
		name string
		f    func() error
	}{
		{"MemsetAsync on nil", func() error { return buf.MemsetAsync(nil, 1, 1<<12) }},
		{"MemsetAsync on LegacyDefaultStream", func() error { return buf.MemsetAsync(legacy, 1, 1<<12) }},
		{"Memset", func() error { return buf.Memset(1, 1<<12) }},
		{"CopyFromHostAsync on nil", func() error { return buf.CopyFromHostPointerAsync(nil, unsafe.Pointer(&word[0]), 4) }},
		{"CopyToHost", func() error { return buf.CopyToHostPointer(unsafe.Pointer(&word[0]), 4) }},
		{"Event.Record on LegacyDefaultStream", func() error {
			e, err := legacy.recordNew(nil)
			if e != nil {
				e.Close()
			}
			return err
		}},
		{"LegacyDefaultStream.Synchronize", legacy.Synchronize},
	}
	s, err := NewStream(d, &StreamOptions{NonBlocking: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.BeginCapture(CaptureRelaxed); err != nil {
		t.Fatal(err)
	}
	for _, op := range ops {
		if err := op.f(); !errors.Is(err, ErrCapturing) {
			t.Errorf("%s during a capture: %v, want ErrCapturing", op.name, err)
		}
	}
	g, err := s.EndCapture()
	if err != nil {
		t.Fatal(err)
	}
	g.Close()
	for _, op := range ops {
		if err := op.f(); err != nil {
			t.Errorf("%s after the capture: %v", op.name, err)
		}
	}
}

// TestGPUEventClosedDuringCapture records events on a stream while another
// goroutine captures it, in each mode, and closes them before the capture
// ends: each is destroyed once the capture has ended. (Destroyed at once,
// inside the capture, one crashed driver 580 with SIGSEGV in
// cuEventDestroy in the randomized test.)
func TestGPUEventClosedDuringCapture(t *testing.T) {
	d := gpu(t)
	buf := deviceBuffer(t, d, 1<<12)
	s, err := NewStream(d, &StreamOptions{NonBlocking: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, mode := range []CaptureMode{CaptureRelaxed, CaptureThreadLocal, CaptureGlobal} {
		for range 200 {
			recorded := make(chan error)
			g, err := Capture(s, mode, func() error {
				if err := buf.MemsetAsync(s, 1, 1<<12); err != nil {
					return err
				}
				go func() {
					e, err := s.recordNew(nil)
					if err == nil {
						ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
						werr := e.Wait(ctx)
						cancel()
						if !errors.Is(werr, ErrCapturing) {
							t.Errorf("Wait for an event recorded in a capture: %v, want ErrCapturing", werr)
						}
						err = e.Close()
					}
					recorded <- err
				}()
				return <-recorded
			})
			if err != nil {
				t.Fatalf("%v capture: %v", mode, err)
			}
			g.Close()
		}
	}
	if err := d.Synchronize(); err != nil {
		t.Fatal(err)
	}
}
