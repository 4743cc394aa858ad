package highlevel

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// readFlag reads p's first uint32 with a plain copy, which waits for no
// non-blocking stream: what a kernel on one has written there so far.
func readFlag(t *testing.T, p MemoryPointer) uint32 {
	t.Helper()
	v := make([]uint32, 1)
	if err := CopyToHost(v, p); err != nil {
		t.Error(err)
	}
	return v[0]
}

// awaitWaiters returns once n goroutines wait for e.
func awaitWaiters(t *testing.T, e *Event, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		e.mu.Lock()
		w := e.waits
		e.mu.Unlock()
		if w >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d goroutines wait for the event after 5 s", w, n)
		}
	}
}

// TestGPUWaitRecordedAgain records an event behind a kernel of 300 ms,
// starts goroutines waiting for it (Wait and Done), then records it again
// on an idle stream, which reaches it at once, or on one capturing in
// global mode: the waits are for the Record before they began, so each
// must see the kernel's write. A waiter that only queried the event would
// return with the second Record, or fail on its capture.
func TestGPUWaitRecordedAgain(t *testing.T) {
	d := gpu(t)
	spin := spinner(t, d)
	for _, capturing := range []bool{false, true} {
		busy, _ := NewStream(d, &StreamOptions{NonBlocking: true})
		defer busy.Close()
		other, _ := NewStream(d, &StreamOptions{NonBlocking: true})
		defer other.Close()
		flag := deviceBuffer(t, d, 4)
		if err := flag.Memset(0, 4); err != nil {
			t.Fatal(err)
		}
		e, err := NewEvent(d, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		spin(busy, flag, 7, 300)
		if err := e.Record(busy); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		got := make([]uint32, 9)
		for i := range got {
			wg.Go(func() {
				if i == len(got)-1 {
					<-e.Done()
					if err := e.Err(); err != nil {
						t.Errorf("Done: Err = %v", err)
					}
				} else if err := e.Wait(context.Background()); err != nil {
					t.Errorf("Wait: %v", err)
				}
				got[i] = readFlag(t, flag)
			})
		}
		awaitWaiters(t, e, len(got))
		if capturing {
			if err := other.BeginCapture(CaptureGlobal); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.Record(other); err != nil {
			t.Fatal(err)
		}
		if capturing {
			g, err := other.EndCapture()
			if err != nil {
				t.Fatal(err)
			}
			g.Close()
		} else if err := e.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		if v := readFlag(t, flag); v != 0 {
			t.Fatalf("capturing %v: the kernel wrote %d before the second Record: it ran for too short a time", capturing, v)
		}
		wg.Wait()
		for i, v := range got {
			if v != 7 {
				t.Errorf("capturing %v: waiter %d returned before the kernel had written (read %d, want 7)", capturing, i, v)
			}
		}
	}
}

// TestGPUEventClosedWhileWaited closes an event while goroutines wait for
// it: they are woken when it happens, as if it were still open, and a
// later Done is closed at once, with Err reporting ErrClosed.
func TestGPUEventClosedWhileWaited(t *testing.T) {
	d := gpu(t)
	spin := spinner(t, d)
	s, _ := NewStream(d, &StreamOptions{NonBlocking: true})
	defer s.Close()
	flag := deviceBuffer(t, d, 4)
	if err := flag.Memset(0, 4); err != nil {
		t.Fatal(err)
	}
	e, err := NewEvent(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	spin(s, flag, 9, 100)
	if err := e.Record(s); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if err := e.Wait(context.Background()); err != nil {
				t.Errorf("Wait: %v", err)
			}
			if v := readFlag(t, flag); v != 9 {
				t.Errorf("Wait returned before the kernel had written (read %d, want 9)", v)
			}
		})
	}
	done := e.Done()
	awaitWaiters(t, e, 5)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	<-done
	if err := e.Err(); err != nil {
		t.Errorf("Err after Done's channel closed on the event happening: %v", err)
	}
	wg.Wait()
	<-e.Done()
	if err := e.Err(); !errors.Is(err, ErrClosed) {
		t.Errorf("Err after Done of a closed event = %v, want ErrClosed", err)
	}
	if err := e.Wait(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("Wait of a closed event = %v, want ErrClosed", err)
	}
}

// TestGPUDoneErr checks what Err reports after Stream.Done: nil while the
// channel is open and once the work is done; ErrCapturing for a capturing
// stream; ErrClosed for a closed one.
func TestGPUDoneErr(t *testing.T) {
	d := gpu(t)
	spin := spinner(t, d)
	s, _ := NewStream(d, &StreamOptions{NonBlocking: true})
	flag := deviceBuffer(t, d, 4)
	spin(s, flag, 1, 50)
	done := s.Done()
	select {
	case <-done:
		t.Errorf("Done's channel closed while a kernel of 50 ms runs")
	default:
		if err := s.Err(); err != nil {
			t.Errorf("Err while Done's channel is open = %v, want nil", err)
		}
	}
	<-done
	if err := s.Err(); err != nil {
		t.Errorf("Err once the work is done = %v, want nil", err)
	}

	if err := s.BeginCapture(CaptureThreadLocal); err != nil {
		t.Fatal(err)
	}
	<-s.Done()
	if err := s.Err(); !errors.Is(err, ErrCapturing) {
		t.Errorf("Err after Done of a capturing stream = %v, want ErrCapturing", err)
	}
	g, err := s.EndCapture()
	if err != nil {
		t.Fatal(err)
	}
	g.Close()

	s.Close()
	<-s.Done()
	if err := s.Err(); !errors.Is(err, ErrClosed) {
		t.Errorf("Err after Done of a closed stream = %v, want ErrClosed", err)
	}
	var zero Stream
	if err := zero.Err(); !errors.Is(err, ErrNil) {
		t.Errorf("Err of a zero Stream = %v, want ErrNil", err)
	}
}

// TestGPUStreamWaitsManyStreams has a goroutine per stream wait, again and
// again, for kernels that write what each round expects: every Wait and
// Done returns after its work.
func TestGPUStreamWaitsManyStreams(t *testing.T) {
	d := gpu(t)
	spin := spinner(t, d)
	const streams, rounds = 200, 5
	var wg sync.WaitGroup
	for i := range streams {
		s, err := NewStream(d, &StreamOptions{NonBlocking: true})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		flag := deviceBuffer(t, d, 4)
		wg.Go(func() {
			for r := range uint32(rounds) {
				spin(s, flag, r+1, 1+i%3)
				var err error
				if (i+int(r))%2 == 0 {
					err = s.Wait(context.Background())
				} else {
					<-s.Done()
					err = s.Err()
				}
				if err != nil {
					t.Error(err)
					return
				}
				if v := readFlag(t, flag); v != r+1 {
					t.Errorf("stream %d round %d: read %d after the wait, want %d", i, r, v, r+1)
				}
			}
		})
	}
	wg.Wait()
}
