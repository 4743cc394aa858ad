package highlevel

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// The checks below run in TestStubDriver's children, on the stand-in
// driver: each shows a fault of work of several kinds at once that a GPU
// under contention showed, by an order of calls the stand-in makes
// certain.

// checkStagedCopyCapture checks that a capture begun while a staged copy
// on the legacy default stream runs waits for it: before, the capture
// refused the copy's later chunks, and the copy returned ErrCapturing
// after it had written its first ones (STUB_COPY_US makes the stand-in
// copy, slowly).
func checkStagedCopyCapture(t *testing.T) {
	d := Device(0)
	started := make(chan struct{})
	var once sync.Once
	if err := SetPinnedMemoryAllocator(func(n int) (*PinnedMemory, error) {
		once.Do(func() { close(started) })
		return AllocPinnedUnpooled(n)
	}); err != nil {
		t.Fatal(err)
	}
	const n = 4 << 20 // four chunks
	mem, err := d.Alloc(n)
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Memory().free()
	if err := mem.Memset(0, n); err != nil {
		t.Fatal(err)
	}
	src := make([]byte, n)
	for i := range src {
		src[i] = byte(i*7 + i>>12)
	}
	s, err := NewStream(d, &StreamOptions{NonBlocking: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	copied := make(chan error, 1)
	go func() { copied <- CopyFromHost(mem, src) }()
	<-started // the copy stages: its buffers are allocated
	if err := s.BeginCapture(CaptureRelaxed); err != nil {
		t.Fatal(err)
	}
	if err := <-copied; err != nil {
		t.Errorf("staged copy on the legacy default stream, a capture begun meanwhile: %v", err)
	}
	g, err := s.EndCapture()
	if err != nil {
		t.Fatal(err)
	}
	g.Close()
	got := make([]byte, n)
	if err := CopyToHost(got, mem); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, src) {
		t.Errorf("the device memory differs from what the copy wrote")
	}
}

// checkWaitsCapture checks that waits end when the work waited for has
// run, whatever captures other goroutines begin: on a stream during a
// capture in CaptureGlobal mode elsewhere, and on the legacy default
// stream during any capture, which holds it off until the capture ends.
// Before, Done's channel closed at once, with ErrCapturing, and Wait and
// Synchronize returned it.
func checkWaitsCapture(t *testing.T) {
	d := Device(0)
	newStream := func() *Stream {
		s, err := NewStream(d, &StreamOptions{NonBlocking: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	capturing, waiting := newStream(), newStream()

	t.Run("global capture elsewhere", func(t *testing.T) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := capturing.BeginCapture(CaptureGlobal); err != nil {
			t.Fatal(err)
		}
		release := make(chan struct{})
		var ran atomic.Bool
		if err := waiting.LaunchHostFunc(func() { <-release; ran.Store(true) }); err != nil {
			t.Fatal(err)
		}
		done := waiting.Done()
		select {
		case <-done:
			t.Errorf("Done's channel closed before the host function ran: %v", waiting.Err())
		default:
		}
		e, err := waiting.recordNew(nil)
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		close(release)
		<-done
		if err := waiting.Err(); err != nil || !ran.Load() {
			t.Errorf("Done: Err %v, host function ran %v; want nil, true", err, ran.Load())
		}
		if err := waiting.Synchronize(); err != nil {
			t.Errorf("Stream.Synchronize: %v", err)
		}
		if err := e.Synchronize(); err != nil {
			t.Errorf("Event.Synchronize: %v", err)
		}
		if err := waiting.Wait(context.Background()); err != nil {
			t.Errorf("Stream.Wait: %v", err)
		}
		g, err := capturing.EndCapture()
		if err != nil {
			t.Fatal(err)
		}
		g.Close()
	})

	t.Run("legacy default stream", func(t *testing.T) {
		legacy, err := LegacyDefaultStream(d)
		if err != nil {
			t.Fatal(err)
		}
		if err := capturing.BeginCapture(CaptureRelaxed); err != nil {
			t.Fatal(err)
		}
		done := legacy.Done()
		select {
		case <-done:
			t.Errorf("Done's channel closed during a capture elsewhere: %v", legacy.Err())
		default:
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := legacy.Wait(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("Wait with a cancelled context during a capture elsewhere: %v, want context.Canceled", err)
		}
		// Synchronize cannot be cancelled, and its goroutine may be the
		// one that captures: it refuses.
		if err := legacy.Synchronize(); !errors.Is(err, ErrCapturing) {
			t.Errorf("Synchronize during a capture: %v, want ErrCapturing", err)
		}
		g, err := capturing.EndCapture()
		if err != nil {
			t.Fatal(err)
		}
		g.Close()
		<-done
		if err := legacy.Err(); err != nil {
			t.Errorf("Done after the capture ended: Err %v", err)
		}
		if err := legacy.Synchronize(); err != nil {
			t.Errorf("Synchronize after the capture: %v", err)
		}
	})
}

// checkDestroyLegacyCopies checks that streams and pools are destroyed
// only between copies on the legacy default stream, which wait for every
// blocking stream: the stand-in refuses a destruction during one, where
// driver 580 crashed in the copy.
func checkDestroyLegacyCopies(t *testing.T) {
	d := Device(0)
	mem, err := d.Alloc(4 << 10)
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Memory().free()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			buf := make([]byte, 4<<10)
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := CopyToHost(buf, mem); err != nil {
					t.Errorf("copy: %v", err)
					return
				}
			}
		})
	}
	for range 200 {
		s, err := NewStream(d, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Errorf("Stream.Close during copies on the legacy default stream: %v", err)
			break
		}
		p, err := NewMemoryAsyncPool(d)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Close(); err != nil {
			t.Errorf("MemoryAsyncPool.Close during copies on the legacy default stream: %v", err)
			break
		}
	}
	close(stop)
	wg.Wait()
}

// checkFreeGlobalCapture checks that memory freed and a pool closed during
// another goroutine's capture in CaptureGlobal mode, which refuses
// cuMemFree and cuMemPoolDestroy, are freed and destroyed once it ends:
// before, Free marked the memory freed and returned ErrCapturing, so the
// memory was lost, and Close failed likewise.
func checkFreeGlobalCapture(t *testing.T) {
	d := Device(0)
	s, err := NewStream(d, &StreamOptions{NonBlocking: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mem, err := d.Alloc(1 << 10)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := NewMemoryAsyncPool(d)
	if err != nil {
		t.Fatal(err)
	}
	freed := make(chan error, 2)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := s.BeginCapture(CaptureGlobal); err != nil {
		t.Fatal(err)
	}
	go func() { freed <- mem.Memory().free() }()
	go func() { freed <- pool.Close() }()
	for range 2 {
		if err := <-freed; err != nil {
			t.Errorf("during a global capture elsewhere: %v", err)
		}
	}
	if err := mem.Memory().free(); !errors.Is(err, ErrFreed) {
		t.Errorf("second Free: %v, want ErrFreed", err)
	}
	g, err := s.EndCapture()
	if err != nil {
		t.Fatal(err)
	}
	g.Close()
	globalDestroys.Lock()
	n := len(globalDestroys.later)
	globalDestroys.Unlock()
	if n != 0 {
		t.Errorf("%d destroys still wait after the capture ended", n)
	}
}
