package highlevel

import (
	"errors"
	"runtime"
	"testing"
	"unsafe"

	"github.com/gocuda/cuda/cudadrv"
)

// TestGPUCaptureModes begins a capture in each mode on a locked OS thread
// and calls cudaMalloc (Device.Malloc), which may synchronize the device and
// so is unsafe during a capture, from that thread and from another one:
// relaxed mode allows both, global mode refuses both, thread-local mode
// refuses only the capturing thread's.
func TestGPUCaptureModes(t *testing.T) {
	d := gpu(t)
	buf, err := d.Alloc(1 << 16)
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Memory().free()
	for _, c := range []struct {
		mode            CaptureMode
		selfOK, otherOK bool
	}{
		{CaptureRelaxed, true, true},
		{CaptureGlobal, false, false},
		{CaptureThreadLocal, false, true},
	} {
		t.Run(c.mode.String(), func(t *testing.T) {
			s, err := NewStream(d, &StreamOptions{NonBlocking: true})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var got []MemoryPointer
			defer func() {
				for _, p := range got {
					p.Memory().free()
				}
			}()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			if err := s.BeginCapture(c.mode); err != nil {
				t.Fatal(err)
			}
			if err := buf.MemsetAsync(s, 7, 1<<16); err != nil {
				t.Errorf("MemsetAsync in the capture: %v", err)
			}
			self, selfErr := d.Alloc(4096)
			type result struct {
				p   MemoryPointer
				err error
			}
			other := make(chan result)
			go func() {
				runtime.LockOSThread() // another OS thread than the capturing one
				defer runtime.UnlockOSThread()
				p, err := d.Alloc(4096)
				other <- result{p, err}
			}()
			o := <-other
			g, endErr := s.EndCapture()
			for _, p := range []MemoryPointer{self, o.p} {
				if p.Memory() != nil {
					got = append(got, p)
				}
			}
			if (selfErr == nil) != c.selfOK {
				t.Errorf("cudaMalloc on the capturing thread: %v, want success %v", selfErr, c.selfOK)
			}
			if (o.err == nil) != c.otherOK {
				t.Errorf("cudaMalloc on another thread: %v, want success %v", o.err, c.otherOK)
			}
			t.Logf("capturing thread: %v; another thread: %v; EndCapture: %v", selfErr, o.err, endErr)
			if c.mode == CaptureRelaxed && endErr != nil {
				t.Fatalf("EndCapture: %v", endErr)
			}
			if g != nil {
				g.Close()
			}
			if err := s.Synchronize(); err != nil {
				t.Errorf("the stream after the capture: %v", err)
			}
		})
	}
	// Capture locks the thread itself, as the strict modes need.
	s, _ := NewStream(d, &StreamOptions{NonBlocking: true})
	defer s.Close()
	for _, mode := range []CaptureMode{CaptureGlobal, CaptureThreadLocal} {
		g, err := Capture(s, mode, func() error {
			runtime.Gosched()
			return buf.MemsetAsync(s, byte(mode), 1<<16)
		})
		if err != nil {
			t.Fatalf("Capture in %v mode: %v", mode, err)
		}
		x, err := g.Instantiate(nil)
		g.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := x.Launch(s); err != nil {
			t.Fatal(err)
		}
		x.Close()
		s.Synchronize()
		var b [1 << 16]byte
		buf.CopyToHostPointer(unsafe.Pointer(&b[0]), len(b))
		if b[0] != byte(mode) || b[len(b)-1] != byte(mode) {
			t.Errorf("after the graph captured in %v mode: bytes %d..%d, want %d", mode, b[0], b[len(b)-1], mode)
		}
	}
}

// TestGPUInstantiateOptions checks the instantiate flags: a graph that
// allocates memory it does not free can be launched again only with
// AutoFreeOnLaunch; Upload uploads; DeviceLaunch with AutoFreeOnLaunch is
// refused.
func TestGPUInstantiateOptions(t *testing.T) {
	d := gpu(t)
	s, err := NewStream(d, &StreamOptions{NonBlocking: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// A graph with an allocation node: cuMemAllocAsync captured through
	// cudadrv, so that no Memory of the package owns the graph's memory.
	var ptr cudadrv.Deviceptr
	hs := cudadrv.Stream(s.Handle())
	g, err := Capture(s, CaptureRelaxed, func() error {
		return d.Do(func() error {
			if err := cudadrv.MemAllocAsync(&ptr, 1<<20, hs); err != nil {
				return err
			}
			return cudadrv.MemsetD8Async(ptr, 1, 1<<20, hs)
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	freeGraphMemory := func() {
		t.Helper()
		if err := d.Do(func() error { return cudadrv.MemFreeAsync(ptr, hs) }); err != nil {
			t.Errorf("freeing the graph's memory: %v", err)
		}
		if err := s.Synchronize(); err != nil {
			t.Error(err)
		}
	}
	launchTwice := func(opts *InstantiateOptions) (first, second error) {
		x, err := g.Instantiate(opts)
		if err != nil {
			t.Fatalf("Instantiate(%+v): %v", opts, err)
		}
		defer x.Close() // a graph with allocations has one instantiation at a time
		first = x.Launch(s)
		if first == nil {
			second = x.Launch(s)
		}
		if err := s.Synchronize(); err != nil {
			t.Errorf("after the launches: %v", err)
		}
		if first == nil {
			freeGraphMemory()
		}
		return first, second
	}
	first, second := launchTwice(nil)
	if first != nil || second == nil {
		t.Errorf("without AutoFreeOnLaunch: first launch %v, second %v; want the second refused", first, second)
	}
	t.Logf("second launch without AutoFreeOnLaunch: %v", second)
	first, second = launchTwice(&InstantiateOptions{AutoFreeOnLaunch: true, UseNodePriority: true})
	if first != nil || second != nil {
		t.Errorf("with AutoFreeOnLaunch: first launch %v, second %v", first, second)
	}
	if _, err := g.Instantiate(&InstantiateOptions{AutoFreeOnLaunch: true, DeviceLaunch: true}); err == nil {
		t.Error("AutoFreeOnLaunch with DeviceLaunch was accepted")
	} else {
		t.Logf("AutoFreeOnLaunch with DeviceLaunch: %v", err)
	}

	// Upload: a memset graph instantiated with an upload runs as usual.
	buf, err := d.Alloc(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Memory().free()
	g2, err := Capture(s, CaptureRelaxed, func() error { return buf.MemsetAsync(s, 9, 4096) })
	if err != nil {
		t.Fatal(err)
	}
	defer g2.Close()
	x, err := g2.Instantiate(&InstantiateOptions{Upload: s})
	if err != nil {
		t.Fatalf("Instantiate with Upload: %v", err)
	}
	defer x.Close()
	if err := x.Launch(s); err != nil {
		t.Fatal(err)
	}
	s.Synchronize()
	var b [4096]byte
	buf.CopyToHostPointer(unsafe.Pointer(&b[0]), len(b))
	if b[0] != 9 || b[4095] != 9 {
		t.Errorf("after the uploaded graph: bytes %d..%d, want 9", b[0], b[4095])
	}
	closed, _ := NewStream(d, nil)
	closed.Close()
	if _, err := g2.Instantiate(&InstantiateOptions{Upload: closed}); err == nil {
		t.Error("Instantiate uploading to a closed stream succeeded")
	}
}

// TestGPUGraphHoldsMemory frees the memory a graph's memset, copy and
// kernel use before the graph is launched, then allocates the same sizes
// from the same pool: a pool hit would hand the freed blocks out again,
// and the launch would overwrite them. The graph holds its memory until
// its last GraphExec is closed; the memory comes back after that. A
// capture refuses Go memory in its copies, which a graph would copy at
// each launch, and takes pinned memory.
func TestGPUGraphHoldsMemory(t *testing.T) {
	d := gpu(t)
	count := compiledKernel(t, countKernel, "count_not")
	pool, err := NewMemoryPool(d)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	s, err := NewStream(d, &StreamOptions{NonBlocking: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const n = 1 << 12
	var mems [3]MemoryPointer // memset, copy, the kernel's count
	for i := range mems {
		if mems[i], err = pool.Alloc(n); err != nil {
			t.Fatal(err)
		}
	}
	pinned, err := AllocPinnedUnpooled(n)
	if err != nil {
		t.Fatal(err)
	}
	defer pinned.Free()
	g, err := Capture(s, CaptureRelaxed, func() error {
		if err := CopyFromHostAsync(s, mems[0], make([]byte, n)); !errors.Is(err, ErrCapturing) {
			t.Errorf("CopyFromHostAsync from Go memory in a capture: %v, want ErrCapturing", err)
		}
		if err := mems[0].MemsetAsync(s, 7, n); err != nil {
			return err
		}
		if err := mems[1].CopyFromDeviceAsync(s, mems[0], n); err != nil {
			return err
		}
		if err := mems[1].CopyToHostPointerAsync(s, pinned.Ptr(), n); err != nil {
			return err
		}
		cfg := LaunchConfig{Grid: Dim3{X: n / 4 / 256}, Block: Dim3{X: 256}}
		return count.Launch(s, cfg, mems[1], uint32(0), int32(n/4), mems[2])
	})
	if err != nil {
		t.Fatal(err)
	}
	x, err := g.Instantiate(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	used := pool.UsedBytes()
	for _, p := range mems {
		if err := p.Memory().free(); err != nil {
			t.Fatalf("Free of memory a graph uses: %v", err)
		}
		if err := p.Memset(0, n); !errors.Is(err, ErrFreed) {
			t.Errorf("Memset after Free: %v, want ErrFreed", err)
		}
	}
	if got := pool.UsedBytes(); got != used {
		t.Errorf("the pool's bytes in use went from %d to %d at Free of the graph's memory", used, got)
	}
	var fresh [3]MemoryPointer
	for i := range fresh {
		if fresh[i], err = pool.Alloc(n); err != nil {
			t.Fatal(err)
		}
		defer fresh[i].Memory().free()
		for _, p := range mems {
			if fresh[i].Ptr() == p.Ptr() {
				t.Errorf("the pool handed out %p again while a graph uses it", p.Ptr())
			}
		}
		if err := fresh[i].Memset(0x55, n); err != nil {
			t.Fatal(err)
		}
	}
	if err := x.Launch(s); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	for i, p := range fresh {
		got := make([]byte, n)
		if err := CopyToHost(got, p); err != nil {
			t.Fatal(err)
		}
		for j, b := range got {
			if b != 0x55 {
				t.Fatalf("byte %d of fresh block %d is %#x after the graph ran, want 0x55", j, i, b)
			}
		}
	}
	for j, b := range pinned.Bytes() {
		if b != 7 {
			t.Fatalf("byte %d the graph copied to pinned memory is %d, want 7", j, b)
		}
	}
	used = pool.UsedBytes()
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	// The pool's next Malloc takes the blocks back, as those dropped
	// without Free, once the device is idle.
	p, err := pool.Alloc(1)
	if err != nil {
		t.Fatal(err)
	}
	p.Memory().free()
	if got, want := pool.UsedBytes(), used-len(mems)*n; got != want {
		t.Errorf("the pool has %d bytes in use after the GraphExec's Close, want %d", got, want)
	}
}

// TestGPUModuleClosedUnderGraph closes a module whose kernel a GraphExec
// launches: the module stays loaded until the GraphExec is closed, and the
// graph's launches after Close run the kernel. (Unloaded at once, the
// launch crashed the driver, SIGSEGV in cuGraphLaunch, seen in
// TestGPUCloseRace under compute-sanitizer.)
func TestGPUModuleClosedUnderGraph(t *testing.T) {
	d := gpu(t)
	c, err := Compile(`extern "C" __global__ void set(unsigned *p, unsigned v) { p[threadIdx.x] = v; }`, nil)
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
	buf := deviceBuffer(t, d, 4*32)
	s, err := NewStream(d, &StreamOptions{NonBlocking: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	one := LaunchConfig{Grid: Dim3{X: 1}, Block: Dim3{X: 32}}
	g, err := Capture(s, CaptureRelaxed, func() error { return k.Launch(s, one, buf, uint32(7)) })
	if err != nil {
		t.Fatal(err)
	}
	x, err := g.Instantiate(nil)
	if err != nil {
		t.Fatal(err)
	}
	g.Close()
	if err := m.Close(); err != nil {
		t.Fatalf("Close of a module a GraphExec uses: %v", err)
	}
	if err := k.Launch(s, one, buf, uint32(1)); !errors.Is(err, ErrClosed) {
		t.Errorf("Launch after Close: %v, want ErrClosed", err)
	}
	for range 3 {
		if err := x.Launch(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	got := make([]uint32, 32)
	if err := CopyToHost(got, buf); err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		if v != 7 {
			t.Fatalf("word %d is %d after the graph ran, want 7", i, v)
		}
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	if n := m.holds.n.Load(); n != 1 {
		t.Errorf("the module's holds are %d after the GraphExec's Close, want 1 (closed, none)", n)
	}
}
