package highlevel

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gocuda/cuda/cudadrv"
)

// checkReleaseInCallback releases objects of every kind from a host
// function, on the stand-in driver, which runs it on a thread of its own: a
// release that needs CUDA returns ErrInCallback and changes nothing, so
// that the same release from a goroutine afterwards succeeds. A pool's
// Free, which needs no CUDA, is refused too: it would wait for the
// operations in progress on the memory, which may wait for the callback.
func checkReleaseInCallback(t *testing.T) {
	d := Device(0)
	s, err := NewStream(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// inCallback runs f in a host function of s, and returns once it ran.
	inCallback := func(f func()) {
		t.Helper()
		if err := s.LaunchHostFunc(f); err != nil {
			t.Fatal(err)
		}
		if err := s.Synchronize(); err != nil {
			t.Fatal(err)
		}
	}
	mem, err := d.Alloc(1 << 10)
	if err != nil {
		t.Fatal(err)
	}
	async, err := AllocAsync(s, 1<<10)
	if err != nil {
		t.Fatal(err)
	}
	arr, err := AllocArray[float32](d, 256)
	if err != nil {
		t.Fatal(err)
	}
	ctx, err := d.context()
	if err != nil {
		t.Fatal(err)
	}
	// The stand-in cannot map another process's memory: the mapping is
	// made up, over mem's address, and its release from a goroutine reaches
	// cuIpcCloseMemHandle, which the stand-in refuses (stubprocs.c).
	mapped := newMapped(mapping{base: mem.Ptr(), ctx: ctx}, 0, 1<<10, d)
	pinned, err := AllocPinnedUnpooled(1 << 10)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := RegisterHost(make([]byte, 1<<10))
	if err != nil {
		t.Fatal(err)
	}
	// Pools that hold a free block, and a block in use of pools that give
	// back their memory as soon as it is free.
	pool, err := NewMemoryPool(d)
	if err != nil {
		t.Fatal(err)
	}
	pinnedPool := NewPinnedMemoryPool()
	asyncPool, err := NewMemoryAsyncPool(d)
	if err != nil {
		t.Fatal(err)
	}
	p, err := pool.Alloc(1000)
	if err != nil {
		t.Fatal(err)
	}
	pp, err := pinnedPool.Alloc(1000)
	if err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(p.Memory().free(), pp.Free()); err != nil {
		t.Fatal(err)
	}
	unheld, err := NewMemoryPool(d)
	if err != nil {
		t.Fatal(err)
	}
	unheldPinned := NewPinnedMemoryPool()
	if err := errors.Join(unheld.StopHolding(), unheldPinned.StopHolding()); err != nil {
		t.Fatal(err)
	}
	up, err := unheld.Alloc(1000)
	if err != nil {
		t.Fatal(err)
	}
	upp, err := unheldPinned.Alloc(1000)
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewEvent(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewStream(d, nil)
	if err != nil {
		t.Fatal(err)
	}

	refused := []struct {
		name string
		f    func() error
	}{
		{"MemoryPointer.Free of Device.Alloc's", mem.Memory().free},
		{"MemoryPointer.Free of AllocAsync's", async.Memory().free},
		{"MemoryPointer.Free of OpenIPCMemory's", mapped.Memory().free},
		{"Array.Free", arr.Free},
		{"PinnedMemory.Free of AllocPinnedUnpooled's", pinned.Free},
		{"HostRegistration.Unregister", reg.Unregister},
		{"MemoryPool.FreeAllBlocks", pool.FreeAllBlocks},
		{"MemoryPool.StopHolding", pool.StopHolding},
		{"MemoryPool.Close", pool.Close},
		{"PinnedMemoryPool.FreeAllBlocks", pinnedPool.FreeAllBlocks},
		{"PinnedMemoryPool.StopHolding", pinnedPool.StopHolding},
		{"PinnedMemoryPool.Close", pinnedPool.Close},
		{"MemoryAsyncPool.Close", asyncPool.Close},
		{"MemoryPointer.Free of a MemoryPool's", up.Memory().free},
		{"PinnedMemory.Free of a PinnedMemoryPool's", upp.Free},
		{"Event.Close", e.Close},
		{"Stream.Close", other.Close},
	}
	errs := make([]error, len(refused))
	inCallback(func() {
		for i, r := range refused {
			errs[i] = r.f()
		}
	})
	for i, r := range refused {
		if !errors.Is(errs[i], ErrInCallback) {
			t.Errorf("%s in a host function: %v, want ErrInCallback", r.name, errs[i])
		}
	}
	for _, c := range []struct {
		name       string
		total, was int
	}{
		{"memory pool", pool.TotalBytes(), 1024},
		{"pinned memory pool", pinnedPool.TotalBytes(), 1024},
		{"memory pool that stopped holding", unheld.TotalBytes(), 1024},
		{"pinned memory pool that stopped holding", unheldPinned.TotalBytes(), 1024},
	} {
		if c.total != c.was {
			t.Errorf("%s after releases in a host function: TotalBytes %d, want %d", c.name, c.total, c.was)
		}
	}
	// The releases the stand-in refuses from a goroutine, with
	// CUDA_ERROR_NOT_SUPPORTED, by the driver function that refuses them.
	unmodelled := map[string]string{"MemoryPointer.Free of OpenIPCMemory's": "cuIpcCloseMemHandle"}
	for _, r := range refused {
		err := r.f()
		if fn := unmodelled[r.name]; fn != "" {
			if !errors.Is(err, cudadrv.ERROR_NOT_SUPPORTED) || !strings.Contains(err.Error(), fn) {
				t.Errorf("%s, refused in a host function, then from a goroutine: %v, want the stand-in's refusal of %s",
					r.name, err, fn)
			}
		} else if err != nil {
			t.Errorf("%s, refused in a host function, then from a goroutine: %v", r.name, err)
		}
	}
	if err := errors.Join(unheld.FreeAllBlocks(), unheldPinned.FreeAllBlocks()); err != nil {
		t.Errorf("FreeAllBlocks of the blocks freed in a host function: %v", err)
	}
	for name, total := range map[string]int{
		"memory pool": pool.TotalBytes(), "pinned memory pool": pinnedPool.TotalBytes(),
		"memory pool that stopped holding": unheld.TotalBytes(), "pinned memory pool that stopped holding": unheldPinned.TotalBytes(),
	} {
		if total != 0 {
			t.Errorf("%s: TotalBytes %d after FreeAllBlocks or Close, want 0", name, total)
		}
	}
}

// checkGoexitInCallback calls runtime.Goexit (as t.FailNow does) in a host
// function and a stream callback, on the stand-in driver's thread: the
// process lives (Go cannot end a thread it did not create: the call must
// not reach it), the stream's next Synchronize returns a *PanicError that
// says so, and the stream works on, its callbacks still refused CUDA.
func checkGoexitInCallback(t *testing.T) {
	s, err := NewStream(0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var pe *PanicError
	if err := s.LaunchHostFunc(func() { runtime.Goexit() }); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); !errors.As(err, &pe) || !pe.Goexit || pe.Op != "host function" || pe.Value != nil || len(pe.Stack) == 0 {
		t.Errorf("Synchronize after a host function called runtime.Goexit: %v, want a *PanicError with Goexit", err)
	} else if want := "highlevel: host function called runtime.Goexit"; err.Error() != want {
		t.Errorf("its message: %q, want %q", err, want)
	}
	if err := s.AddCallback(func(error) { runtime.Goexit() }); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); !errors.As(err, &pe) || !pe.Goexit || pe.Op != "stream callback" {
		t.Errorf("Synchronize after a stream callback called runtime.Goexit: %v, want a *PanicError with Goexit", err)
	}
	if err := s.LaunchHostFunc(func() { panic("host function") }); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); !errors.As(err, &pe) || pe.Goexit || pe.Value != "host function" {
		t.Errorf("Synchronize after a panicking host function: %v", err)
	}
	var ran bool
	var inCallback error
	if err := s.LaunchHostFunc(func() {
		ran = true
		_, _, inCallback = Device(0).MemInfo()
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err != nil || !ran {
		t.Errorf("a host function after them: ran %v, Synchronize: %v", ran, err)
	}
	if !errors.Is(inCallback, ErrInCallback) {
		t.Errorf("CUDA from a host function: %v, want ErrInCallback", inCallback)
	}
}

// BenchmarkGPUHostFunc times host functions that do nothing, queued one
// after another and waited for together (throughput) or one at a time
// (roundtrip). On the stand-in driver (GOCUDA_CUDA naming a libcuda.so.1
// built from internal/driver/testdata) it times the
// package's side of a callback, with the stand-in's thread's handoffs.
func BenchmarkGPUHostFunc(b *testing.B) {
	d := gpu(b)
	s, err := NewStream(d, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.Run("throughput", func(b *testing.B) {
		for range b.N {
			if err := s.LaunchHostFunc(func() {}); err != nil {
				b.Fatal(err)
			}
		}
		if err := s.Synchronize(); err != nil {
			b.Fatal(err)
		}
	})
	b.Run("roundtrip", func(b *testing.B) {
		for b.Loop() {
			if err := s.LaunchHostFunc(func() {}); err != nil {
				b.Fatal(err)
			}
			if err := s.Synchronize(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// checkStreamInCallback calls the methods of a stream from a host function
// of another, on the stand-in driver, while the stream's capture lock is
// held, as by a BeginCapture waiting for the shim behind a synchronous copy
// that waits for the host function: each returns ErrInCallback at once,
// before it takes the stream's locks. (Stream.Query took the lock first,
// and deadlocked the randomized test on the GPU.)
func checkStreamInCallback(t *testing.T) {
	d := Device(0)
	s, err := NewStream(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	v, err := NewStream(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	e, err := NewEvent(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	mem, err := d.Alloc(1 << 10)
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Memory().free()
	calls := []struct {
		name string
		f    func() error
	}{
		{"Stream.Synchronize", v.Synchronize},
		{"Stream.Query", func() error { _, err := v.Query(); return err }},
		{"Stream.Wait", func() error { return v.Wait(context.Background()) }},
		{"Event.Record", func() error { _, err := v.recordNew(nil); return err }},
		{"Stream.WaitEvent", func() error { return v.WaitEvent(e) }},
		{"Stream.WaitStream", func() error { return v.WaitStream(v) }},
		{"Stream.BeginCapture", func() error { return v.BeginCapture(CaptureRelaxed) }},
		{"Stream.EndCapture", func() error { _, err := v.EndCapture(); return err }},
		{"Stream.LaunchHostFunc", func() error { return v.LaunchHostFunc(func() {}) }},
		{"MemoryPointer.MemsetAsync", func() error { return mem.MemsetAsync(v, 0, 1<<10) }},
	}
	errs := make([]error, len(calls))
	ran := make(chan struct{})
	v.joins.Lock()
	if err := s.LaunchHostFunc(func() {
		for i, c := range calls {
			errs[i] = c.f()
		}
		close(ran)
	}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		t.Error("a stream's method called in a host function still waits, after 10 s, for the stream's capture lock")
	}
	v.joins.Unlock()
	<-ran
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	for i, c := range calls {
		if !errors.Is(errs[i], ErrInCallback) {
			t.Errorf("%s in a host function: %v, want ErrInCallback", c.name, errs[i])
		}
	}
}
