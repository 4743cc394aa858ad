package highlevel

import (
	"context"
	"errors"
	"math"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/gocuda/cuda/cudadrv"
)

// The GPU side of "safe by construction": each test provokes a way to
// crash the process or hand out memory in use, and checks that the package
// answers it with an error or waits instead.

// spinKernel holds its stream for about ms milliseconds, then writes v to
// p[0]: work that is still running when the program has moved on.
const spinKernel = `
extern "C" __global__ void spin_then_write(unsigned *p, unsigned v, long long cycles) {
	long long start = clock64();
	while (clock64() - start < cycles) {}
	p[0] = v;
}
`

// compiledKernel compiles source and returns its kernel name, in a module
// closed when the test ends.
func compiledKernel(t *testing.T, source, name string) *Kernel {
	t.Helper()
	c, err := Compile(source, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := LoadModule(c.Image)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return kernel(t, m, name)
}

// spinner compiles spinKernel and returns a function that launches it on s
// for about ms milliseconds.
func spinner(t *testing.T, d Device) func(s *Stream, p MemoryPointer, v uint32, ms int) {
	t.Helper()
	k := compiledKernel(t, spinKernel, "spin_then_write")
	khz, err := d.Attribute(DeviceClockRate)
	if err != nil {
		t.Fatal(err)
	}
	return func(s *Stream, p MemoryPointer, v uint32, ms int) {
		t.Helper()
		one := LaunchConfig{Grid: Dim3{X: 1}, Block: Dim3{X: 1}}
		if err := k.Launch(s, one, p, v, int64(khz)*int64(ms)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestGPUGraphClosedWhileRunning closes a GraphExec and its Graph right
// after Launch, while work queued before it still runs, and updates one in
// flight: the graph's Go host node must still run, once per launch, with
// nothing deleted under it (cgo's "misuse of an invalid Handle" aborts the
// process).
func TestGPUGraphClosedWhileRunning(t *testing.T) {
	d := gpu(t)
	spin := spinner(t, d)
	s, _ := NewStream(d, nil)
	defer s.Close()
	scratch, _ := d.Alloc(4)
	defer scratch.Memory().free()
	var runs atomic.Int32
	capture := func() *Graph {
		g, err := Capture(s, CaptureRelaxed, func() error { return s.LaunchHostFunc(func() { runs.Add(1) }) })
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	for i := range 10 {
		g := capture()
		x, err := g.Instantiate(nil)
		if err != nil {
			t.Fatal(err)
		}
		spin(s, scratch, 1, 20)
		if err := x.Launch(s); err != nil {
			t.Fatal(err)
		}
		if i%2 == 1 { // update in flight, to a graph closed at once
			g2 := capture()
			if err := x.Update(g2); err != nil {
				t.Fatal(err)
			}
			g2.Close()
			x.Launch(s)
		}
		x.Close()
		g.Close()
		runtime.GC()
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if got := runs.Load(); got != 15 {
		t.Errorf("host nodes ran %d times, want 15", got)
	}
}

// TestGPUGraphCrossStreamHostFunc captures a host function queued on a
// forked stream: it belongs to the graph being captured, and runs at each
// launch after both graphs were closed.
func TestGPUGraphCrossStreamHostFunc(t *testing.T) {
	d := gpu(t)
	s, _ := NewStream(d, nil)
	defer s.Close()
	fork, _ := NewStream(d, nil)
	defer fork.Close()
	var runs atomic.Int32
	g, err := Capture(s, CaptureRelaxed, func() error {
		e, err := s.recordNew(nil)
		if err != nil {
			return err
		}
		defer e.Close()
		if err := fork.WaitEvent(e); err != nil {
			return err
		}
		if err := fork.LaunchHostFunc(func() { runs.Add(1) }); err != nil {
			return err
		}
		j, err := fork.recordNew(nil)
		if err != nil {
			return err
		}
		defer j.Close()
		return s.WaitEvent(j)
	})
	if err != nil {
		t.Fatal(err)
	}
	x, err := g.Instantiate(nil)
	if err != nil {
		t.Fatal(err)
	}
	g.Close()
	for range 3 {
		x.Launch(s)
	}
	x.Close()
	runtime.GC()
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if runs.Load() != 3 {
		t.Errorf("the forked stream's host node ran %d times, want 3", runs.Load())
	}
	// A capture of the fork alone still works: its host functions were not
	// left behind on it.
	if err := fork.LaunchHostFunc(func() { runs.Add(1) }); err != nil {
		t.Fatal(err)
	}
	fork.Synchronize()
	if runs.Load() != 4 {
		t.Errorf("after a plain host function: %d runs, want 4", runs.Load())
	}
}

// TestGPUCaptureAndPackageSyncs captures graphs on one goroutine while
// another makes the package wait for every device, as its pools and lost
// memory do: the package's waits must never invalidate a capture (one that
// checked for captures before waiting did, when a capture began between the
// two), and Module.Close, which must wait for the device, refuses while a
// capture is in progress.
func TestGPUCaptureAndPackageSyncs(t *testing.T) {
	d := gpu(t)
	s, err := NewStream(d, &StreamOptions{NonBlocking: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p, err := d.Alloc(4)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Memory().free()
	// Most tries come while a capture runs and are refused at once: count
	// the waits that ran, for at most ten seconds.
	waits := int64(2000)
	if testing.Short() {
		waits = 200
	}
	deadline := time.Now().Add(10 * time.Second)
	done := make(chan struct{})
	var syncs, refused atomic.Int64
	go func() {
		defer close(done)
		for syncs.Load() < waits && time.Now().Before(deadline) {
			switch err := synchronizeAll(); {
			case err == nil:
				syncs.Add(1)
			case errors.Is(err, ErrCapturing):
				refused.Add(1)
			default:
				t.Errorf("synchronizeAll: %v", err)
				return
			}
		}
	}()
	captured := 0
	for running := true; running; captured++ {
		select {
		case <-done:
			running = false
		default:
		}
		g, err := Capture(s, CaptureRelaxed, func() error { return p.MemsetAsync(s, byte(captured), 4) })
		if err != nil {
			t.Fatalf("capture %d: %v", captured, err)
		}
		g.Close()
	}
	t.Logf("%d captures; %d device waits, %d refused during a capture", captured, syncs.Load(), refused.Load())

	m := testModule(t)
	if err := s.BeginCapture(CaptureRelaxed); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); !errors.Is(err, ErrCapturing) {
		t.Errorf("Module.Close during a capture: %v, want ErrCapturing", err)
	}
	g, err := s.EndCapture()
	if err != nil {
		t.Fatalf("EndCapture after Module.Close refused: %v", err)
	}
	g.Close()
	// In a callback, Close refuses at once: a device-wide wait in progress
	// elsewhere may be waiting for the callback itself.
	var inCallback error
	if err := s.LaunchHostFunc(func() { inCallback = m.Close() }); err != nil {
		t.Fatal(err)
	}
	go synchronizeAll()
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(inCallback, ErrInCallback) {
		t.Errorf("Module.Close in a callback: %v, want ErrInCallback", inCallback)
	}
	if err := m.Close(); err != nil {
		t.Errorf("Module.Close after the capture: %v", err)
	}
}

// TestGPUPoolOverflow asks the device pool for sizes near math.MaxInt: each
// is refused, and the pool's accounting does not move (no "block" of
// 9.2 EB is handed out).
func TestGPUPoolOverflow(t *testing.T) {
	d := gpu(t)
	p, _ := NewMemoryPool(d)
	defer p.Close()
	m, _ := p.Alloc(1000)
	before := counts(p)
	for _, n := range []int{math.MaxInt, math.MaxInt - 100, math.MaxInt - 511, 1 << 62} {
		if got, err := p.Alloc(n); err == nil {
			t.Errorf("Alloc(%d) = %p, want an error", n, got.Ptr())
		}
		if _, err := DefaultPinnedMemoryPool().Alloc(n); err == nil {
			t.Errorf("pinned Alloc(%d) succeeded", n)
		}
		if _, err := AllocAsync(nil, n); err == nil {
			t.Errorf("AllocAsync(%d) succeeded", n)
		}
	}
	if after := counts(p); after != before {
		t.Errorf("accounting moved: %+v, then %+v", before, after)
	}
	m.Memory().free()
}

// TestGPUPinnedViewOutlivesMemory drops a PinnedMemory and keeps its Bytes
// view: after GC, the pool must not hand the same bytes out again, and the
// view keeps what was written to it.
func TestGPUPinnedViewOutlivesMemory(t *testing.T) {
	gpu(t)
	pool := NewPinnedMemoryPool()
	view := func() []byte {
		m, err := pool.Alloc(4096)
		if err != nil {
			t.Fatal(err)
		}
		return m.Bytes()
	}()
	for i := range view {
		view[i] = 0xAB
	}
	for range 3 {
		runtime.GC()
	}
	for range 8 {
		m, err := pool.Alloc(4096)
		if err != nil {
			t.Fatal(err)
		}
		if &m.Bytes()[0] == &view[0] {
			t.Fatal("the pool handed out memory a view still uses")
		}
		clear(m.Bytes())
		m.Free()
	}
	for i, b := range view {
		if b != 0xAB {
			t.Fatalf("view[%d] = %#x, want 0xab", i, b)
		}
	}
	if pool.ActiveBlocks() != 1 {
		t.Errorf("ActiveBlocks = %d, want the dropped memory counted", pool.ActiveBlocks())
	}
}

// TestGPUPoolLostBlockWaitsForGPU drops pool memory without Free while a
// kernel on another stream will still write it: the pool may reuse the
// block only after that write, or the late write lands in the new
// owner's data.
func TestGPUPoolLostBlockWaitsForGPU(t *testing.T) {
	d := gpu(t)
	spin := spinner(t, d)
	p, _ := NewMemoryPool(d)
	defer p.Close()
	s1, _ := NewStream(d, &StreamOptions{NonBlocking: true})
	defer s1.Close()
	s2, _ := NewStream(d, &StreamOptions{NonBlocking: true})
	defer s2.Close()
	func() {
		m, err := p.AllocAsync(s1, 4096)
		if err != nil {
			t.Fatal(err)
		}
		spin(s2, m, 0xBAD, 200) // writes m after 200 ms
	}()
	// Use up the slab, so that its cleanup can run.
	for range slabSize {
		m, _ := p.AllocAsync(s1, 1<<20)
		m.Memory().free()
	}
	for range 3 {
		runtime.GC()
	}
	time.Sleep(10 * time.Millisecond) // let the cleanup goroutine run
	m, err := p.AllocAsync(s1, 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Memory().free()
	if err := m.MemsetAsync(s1, 0, 4096); err != nil {
		t.Fatal(err)
	}
	d.Synchronize()
	var got uint32
	m.CopyToHostPointer(unsafe.Pointer(&got), 4)
	if got != 0 {
		t.Errorf("the new owner's memory holds %#x, written by a kernel of the dropped owner", got)
	}
}

// TestGPUStreamCloseSettlesPool closes a stream whose pool blocks a kernel
// still uses: the blocks serve the legacy default stream only after the
// stream's work is done.
func TestGPUStreamCloseSettlesPool(t *testing.T) {
	d := gpu(t)
	spin := spinner(t, d)
	p, _ := NewMemoryPool(d)
	defer p.Close()
	s, _ := NewStream(d, &StreamOptions{NonBlocking: true})
	m, _ := p.AllocAsync(s, 4096)
	addr := m.Ptr()
	spin(s, m, 0xBAD, 100)
	m.Memory().free()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AllocAsync(s, 4096); !errors.Is(err, ErrClosed) {
		t.Errorf("AllocAsync on a closed stream: %v, want ErrClosed", err)
	}
	n, _ := p.Alloc(4096)
	defer n.Memory().free()
	if n.Ptr() != addr {
		t.Errorf("the legacy stream got %p, want the closed stream's block %p", n.Ptr(), addr)
	}
	n.Memset(0, 4096)
	var got uint32
	n.CopyToHostPointer(unsafe.Pointer(&got), 4)
	if got != 0 {
		t.Errorf("the closed stream's kernel wrote %#x after the block was reused", got)
	}
}

// TestGPUCallbackPanics makes a host function, a stream callback and a
// graph's host node panic: each panic comes back from the stream's next
// Synchronize or Wait as a *PanicError, and the process lives.
func TestGPUCallbackPanics(t *testing.T) {
	d := gpu(t)
	s, _ := NewStream(d, nil)
	defer s.Close()
	var pe *PanicError
	s.LaunchHostFunc(func() { panic("host function") })
	if err := s.Synchronize(); !errors.As(err, &pe) || pe.Value != "host function" || len(pe.Stack) == 0 {
		t.Errorf("Synchronize after a panicking host function: %v", err)
	}
	if err := s.Synchronize(); err != nil {
		t.Errorf("the panic was reported twice: %v", err)
	}
	s.AddCallback(func(error) { panic("callback") })
	if err := s.Wait(context.Background()); !errors.As(err, &pe) || pe.Value != "callback" {
		t.Errorf("Wait after a panicking callback: %v", err)
	}
	g, err := Capture(s, CaptureRelaxed, func() error { return s.LaunchHostFunc(func() { panic("node") }) })
	if err != nil {
		t.Fatal(err)
	}
	x, _ := g.Instantiate(nil)
	x.Launch(s)
	x.Close()
	g.Close()
	if err := s.Synchronize(); !errors.As(err, &pe) || pe.Value != "node" {
		t.Errorf("Synchronize after a panicking graph node: %v", err)
	}
}

// TestGPUHostRegistrationDropped drops a registration without Unregister:
// the program must not crash (runtime.Pinner panics if it is dropped while
// pinning), and the memory is unregistered later, so that it can be
// registered again.
func TestGPUHostRegistrationDropped(t *testing.T) {
	gpu(t)
	buf := make([]float32, 1<<16)
	if _, err := RegisterHost(buf); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		runtime.GC()
		time.Sleep(time.Millisecond)
		freeLost()
		r, err := RegisterHost(buf)
		if err == nil {
			r.Unregister()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the dropped registration was never undone: %v", err)
		}
	}
}

// TestGPUDoneSameChannel checks that Stream.Done gives one channel while
// nothing new is queued, and a new one after.
func TestGPUDoneSameChannel(t *testing.T) {
	d := gpu(t)
	s, _ := NewStream(d, nil)
	defer s.Close()
	m, _ := d.Alloc(1024)
	defer m.Memory().free()
	a, b := s.Done(), s.Done()
	if a != b {
		t.Errorf("Done gave two channels with nothing queued between")
	}
	m.MemsetAsync(s, 1, 1024)
	if c := s.Done(); c == a {
		t.Errorf("Done gave the old channel after new work")
	}
	<-s.Done()
}

// TestGPUDoneAfterOperationInProgress checks that Done's channel does not
// stand for work that an operation in progress queues after Done recorded
// its event: the next Done gives a new channel.
func TestGPUDoneAfterOperationInProgress(t *testing.T) {
	d := gpu(t)
	s, err := NewStream(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.enter(d); err != nil { // an operation begins,
		t.Fatal(err)
	}
	a := s.Done()
	s.leave() // and queues its work after Done's event
	if b := s.Done(); b == a {
		t.Errorf("Done gave the old channel after work queued behind its event")
	}
	<-s.Done()
}

// TestGPUWaitCost measures what waiting costs: the CPU time of a goroutine
// waiting one second for a stream, and the wake-up latency of one waiter
// beside cudaEventSynchronize's.
func TestGPUWaitCost(t *testing.T) {
	d := gpu(t)
	s, _ := NewStream(d, nil)
	defer s.Close()
	s.LaunchHostFunc(func() { time.Sleep(time.Second) })
	var before, after syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	start := time.Now()
	if err := s.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	wall := time.Since(start)
	syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	cpu := time.Duration(after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano())
	share := float64(cpu) / float64(wall)
	t.Logf("waiting %v cost %v of CPU, %.2f%% of a core", wall.Round(time.Millisecond), cpu, 100*share)
	if share > 0.05 {
		t.Errorf("waiting took %.1f%% of a core", 100*share)
	}

	// Latency: a round trip through an idle stream, by Wait and by
	// cudaEventSynchronize, alternating; medians.
	var wait, sync []time.Duration
	for i := range 400 {
		e, _ := NewEvent(d, &EventOptions{DisableTiming: true})
		start := time.Now()
		e.Record(s)
		if i%2 == 0 {
			e.Wait(context.Background())
			wait = append(wait, time.Since(start))
		} else {
			e.Synchronize()
			sync = append(sync, time.Since(start))
		}
		e.Close()
	}
	slices.Sort(wait)
	slices.Sort(sync)
	t.Logf("record + wait on an idle stream, median of 200: Wait %v, cudaEventSynchronize %v (%.2fx)",
		wait[100], sync[100], float64(wait[100])/float64(sync[100]))
}

// TestGPUCloseRace has 64 goroutines use shared streams, events, graphs and
// a module while others close them: every operation either works or
// returns ErrClosed, and ErrClosed only once a Close has begun, never a
// crash (a destroyed handle reaching the driver is a SIGSEGV in the shim).
// Every object is made without error, and in each round operations work
// before the first Close (the closing goroutines make nine each before
// theirs), so that a round whose operations all fail is no pass.
func TestGPUCloseRace(t *testing.T) {
	d := gpu(t)
	c, err := Compile(`extern "C" __global__ void set(unsigned *p, unsigned v) { p[threadIdx.x] = v; }`, nil)
	if err != nil {
		t.Fatal(err)
	}
	mem, err := d.Alloc(1 << 12)
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Memory().free()
	one := LaunchConfig{Grid: Dim3{X: 1}, Block: Dim3{X: 32}}
	var ok, closed atomic.Int64
	for round := range 20 {
		s, err := NewStream(d, nil)
		if err != nil {
			t.Fatal(err)
		}
		e, err := NewEvent(d, nil)
		if err != nil {
			t.Fatal(err)
		}
		m, err := LoadModule(c.Image)
		if err != nil {
			t.Fatal(err)
		}
		k, err := m.Kernel("set")
		if err != nil {
			t.Fatal(err)
		}
		g, err := Capture(s, CaptureRelaxed, func() error { return k.Launch(s, one, mem, uint32(round)) })
		if err != nil {
			t.Fatal(err)
		}
		x, err := g.Instantiate(nil)
		if err != nil {
			t.Fatal(err)
		}
		// closing is set before the round's first Close begins;
		// okBefore counts the operations that worked and began before
		// it.
		var closing atomic.Bool
		var okBefore atomic.Int64
		do := func(op func() error) {
			before := !closing.Load()
			err := op()
			switch {
			case err == nil:
				ok.Add(1)
				if before {
					okBefore.Add(1)
				}
			case errors.Is(err, ErrClosed):
				closed.Add(1)
				if !closing.Load() {
					t.Errorf("ErrClosed before any Close: %v", err)
				}
			default:
				t.Error(err)
			}
		}
		var wg sync.WaitGroup
		for i := range 64 {
			wg.Go(func() {
				for j := range 20 {
					switch (i + j) % 9 {
					case 0:
						do(func() error { return k.Launch(s, one, mem, uint32(j)) })
					case 1:
						do(func() error { return e.Record(s) })
					case 2:
						do(func() error { return s.WaitEvent(e) })
					case 3:
						do(func() error { return x.Launch(s) })
					case 4:
						do(func() error { return mem.MemsetAsync(s, 1, 128) })
					case 5:
						do(func() error { _, err := e.Query(); return err })
					case 6:
						do(func() error { return s.LaunchHostFunc(func() {}) })
					case 7:
						do(func() error {
							ctx, cancel := context.WithTimeout(context.Background(), time.Second)
							defer cancel()
							return s.Wait(ctx)
						})
					case 8:
						if j == 10 {
							closing.Store(true)
							for _, c := range []interface{ Close() error }{x, g, e, m, s} {
								if err := c.Close(); err != nil && !errors.Is(err, ErrClosed) {
									t.Error(err)
								}
							}
						}
					}
				}
			})
		}
		wg.Wait()
		if okBefore.Load() == 0 {
			t.Errorf("round %d: no operation worked before the first Close", round)
		}
	}
	if err := d.Synchronize(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d operations worked, %d found their object closed", ok.Load(), closed.Load())
}

// TestGPUOnlyDevice1 runs, in a child process, a program that uses only
// device 1, through every call that takes no object: no primary context
// may appear on device 0.
func TestGPUOnlyDevice1(t *testing.T) {
	gpu(t)
	if n, _ := DeviceCount(); n < 2 {
		t.Skip("needs two GPUs")
	}
	if os.Getenv("HL_ONLY_DEVICE1") == "1" {
		onlyDevice1(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestGPUOnlyDevice1$", "-test.v")
	cmd.Env = append(os.Environ(), "HL_ONLY_DEVICE1=1", "CUDA_DEVICE=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	t.Logf("child:\n%s", out)
}

func onlyDevice1(t *testing.T) {
	d := Device(1)
	s, err := NewStream(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m, _ := d.Alloc(8 << 20)
	host := make([]byte, 8<<20) // staged: pinned buffers, pointer queries
	if err := m.CopyFromHostPointer(unsafe.Pointer(&host[0]), len(host)); err != nil {
		t.Fatal(err)
	}
	pinned, err := AllocPinned(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	pinned.Free()
	r, err := RegisterHost(host)
	if err != nil {
		t.Fatal(err)
	}
	r.Unregister()
	if _, err := UnownedMemory(m.Ptr(), 1024, nil); err != nil {
		t.Fatal(err)
	}
	d.Do(func() error { return nil }) // leaves device 1's context where there was none, not device 0's
	p, _ := NewMemoryPool(d)
	b, _ := p.Alloc(1 << 20)
	b.Memory().free()
	m.Memory().free()
	active, err := Device(0).primaryContextActive()
	if err != nil {
		t.Fatal(err)
	}
	if active {
		t.Errorf("a program using only device 1 made a primary context on device 0")
	}
}

// TestGPULaunchDeviceOfArguments checks which device a launch goes to: a nil
// stream follows the memory arguments, and memory of a device the stream's
// device has no peer access to is refused, whether or not an earlier test
// enabled it; once EnablePeerAccess succeeded, it is taken. It skips only
// with one device, or where CUDA says device 0 cannot access device 1's
// memory (cuDeviceCanAccessPeer): where it can, EnablePeerAccess must
// work.
func TestGPULaunchDeviceOfArguments(t *testing.T) {
	gpu(t)
	if n, err := DeviceCount(); err != nil || n < 2 {
		if err != nil {
			t.Fatal(err)
		}
		t.Skip("needs two GPUs")
	}
	var canAccess int32
	if err := cudadrv.DeviceCanAccessPeer(&canAccess, driverDevice(t, 0), driverDevice(t, 1)); err != nil {
		t.Fatalf("cuDeviceCanAccessPeer(0, 1): %v", err)
	}
	setPeers(t)
	c, err := Compile(`extern "C" __global__ void set(unsigned *p, unsigned v) { p[threadIdx.x] = v; }`, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := LoadModule(c.Image)
	defer m.Close()
	k, _ := m.Kernel("set")
	one := LaunchConfig{Grid: Dim3{X: 1}, Block: Dim3{X: 1}}
	on1, _ := Device(1).Alloc(4)
	defer on1.Memory().free()
	if err := k.Launch(nil, one, on1, uint32(7)); err != nil {
		t.Fatalf("nil stream with memory of device 1: %v", err)
	}
	Device(1).Synchronize()
	var got uint32
	on1.CopyToHostPointer(unsafe.Pointer(&got), 4)
	if got != 7 {
		t.Errorf("device 1's memory holds %d, want 7", got)
	}
	s0, _ := NewStream(0, nil)
	defer s0.Close()
	if err := k.Launch(s0, one, on1, uint32(8)); !errors.Is(err, ErrArgument) {
		t.Errorf("memory of device 1 on a stream of device 0, no peer access: %v, want ErrArgument", err)
	}
	if canAccess == 0 {
		t.Skip("device 0 cannot access device 1's memory (cuDeviceCanAccessPeer)")
	}
	if err := Device(0).EnablePeerAccess(1); err != nil {
		t.Fatalf("EnablePeerAccess(0, 1), where cuDeviceCanAccessPeer says it can: %v", err)
	}
	if err := k.Launch(s0, one, on1, uint32(9)); err != nil {
		t.Errorf("with peer access: %v", err)
	}
	if err := s0.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if err := on1.CopyToHostPointer(unsafe.Pointer(&got), 4); err != nil {
		t.Fatal(err)
	}
	if got != 9 {
		t.Errorf("device 1's memory holds %d after the launch on device 0 with peer access, want 9", got)
	}
}

// TestGPUAsyncPoolDroppedMemory drops stream-ordered memory without Free:
// a slab of it comes back once all of the slab's Memory values are
// unreachable and the pool has moved on to a new slab, and the memory of
// the last slab once the pool is closed, after which the pool is destroyed
// and the device works on.
func TestGPUAsyncPoolDroppedMemory(t *testing.T) {
	d := gpu(t)
	p, err := NewMemoryAsyncPool(d)
	if err != nil {
		t.Fatal(err)
	}
	const n, rest = 1 << 20, 8
	for range slabSize + rest {
		if _, err := p.AllocAsync(nil, n); err != nil {
			t.Fatal(err)
		}
	}
	// Cleanups run on a goroutine of their own after a collection: the
	// memory is lost some time after runtime.GC returns.
	takeLost := func(done func() bool) {
		for start := time.Now(); time.Since(start) < 5*time.Second; time.Sleep(time.Millisecond) {
			runtime.GC()
			m, err := d.Alloc(1) // frees what was lost, once the device is idle
			if err != nil {
				t.Fatal(err)
			}
			m.Memory().free()
			if done() {
				return
			}
		}
	}
	// allocs counts the allocations not freed, and 1 until Close.
	takeLost(func() bool { return p.allocs.Load() <= rest+1 })
	if n := p.allocs.Load(); n != rest+1 {
		t.Errorf("the pool counts %d allocations after %d were dropped, %d of them in the slab in use; want %d", n-1, slabSize+rest, rest, rest)
	}
	t.Logf("CUDA counts %d bytes of the pool in use", p.UsedBytes())
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	takeLost(func() bool { return p.allocs.Load() == 0 }) // destroyed
	if n := p.allocs.Load(); n != 0 {
		t.Errorf("the closed pool still counts %d allocations", n)
	}
	if err := d.Synchronize(); err != nil {
		t.Fatal(err)
	}
}
