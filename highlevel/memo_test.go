package highlevel

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestMemo(t *testing.T) {
	var calls atomic.Int32
	release := make(chan struct{})
	fail := errors.New("fail")
	m := NewMemo(func(d Device, key string) (string, error) {
		calls.Add(1)
		if key == "bad" {
			return "", fail
		}
		<-release
		return d.String() + ":" + key, nil
	})
	// Concurrent Gets of one key call fn once and all get its result.
	var wg sync.WaitGroup
	got := make([]string, 8)
	for i := range got {
		wg.Go(func() { got[i], _ = m.Get(0, "k") })
	}
	close(release)
	wg.Wait()
	for _, g := range got {
		if g != "device 0:k" {
			t.Errorf("Get = %q", g)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("fn called %d times for one key", n)
	}
	// Devices are separate keys.
	if v, _ := m.Get(1, "k"); v != "device 1:k" || calls.Load() != 2 {
		t.Errorf("device 1: %q after %d calls", v, calls.Load())
	}
	// Errors are not cached.
	for range 2 {
		if _, err := m.Get(0, "bad"); err != fail {
			t.Errorf("Get(bad) = %v", err)
		}
	}
	if n := calls.Load(); n != 4 {
		t.Errorf("%d calls after two failing Gets, want 4", n)
	}
	// ClearCaches forgets results.
	ClearCaches()
	m.Get(0, "k")
	if n := calls.Load(); n != 5 {
		t.Errorf("%d calls after ClearCaches, want 5", n)
	}
}

// TestMemoPanic checks that a panicking function becomes an error for
// every Get waiting on it, caches nothing, and leaves ClearCaches working
// (its entry's channel closes: a later Get does not hang).
func TestMemoPanic(t *testing.T) {
	calls := 0
	m := NewMemo(func(d Device, k int) (int, error) {
		calls++
		if calls == 1 {
			panic("first call")
		}
		return k * 2, nil
	})
	var pe *PanicError
	if _, err := m.Get(0, 21); !errors.As(err, &pe) || pe.Value != "first call" {
		t.Fatalf("Get of a panicking function: %v, want a *PanicError", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if v, err := m.Get(0, 21); v != 42 || err != nil {
			t.Errorf("Get after the panic = %d, %v; want 42", v, err)
		}
		ClearCaches()
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Get or ClearCaches hung after a panic")
	}
}

// TestMemoGoexit checks that a function that calls runtime.Goexit (as
// t.FailNow does) ends the goroutine that called Get, gives the Gets
// waiting on it a *PanicError that says so, and caches nothing (not its
// zero result and nil error).
func TestMemoGoexit(t *testing.T) {
	// A Get started during the call may reach the Memo only after it: then
	// it calls the function itself, and the round is tried again.
	for round := 1; ; round++ {
		var calls atomic.Int32
		started, release := make(chan struct{}), make(chan struct{})
		m := NewMemo(func(d Device, k int) (int, error) {
			if calls.Add(1) == 1 {
				close(started)
				<-release
				runtime.Goexit()
			}
			return k * 2, nil
		})
		returned := make(chan bool, 1)
		go func() {
			defer close(returned)
			m.Get(0, 21)
			returned <- true
		}()
		<-started
		waited := make(chan error, 1)
		go func() {
			_, err := m.Get(0, 21)
			waited <- err
		}()
		time.Sleep(time.Duration(round) * time.Millisecond)
		close(release)
		if <-returned {
			t.Fatal("Get returned in a goroutine that its function ended with runtime.Goexit")
		}
		err := <-waited
		if err == nil && calls.Load() == 2 && round < 100 {
			continue // the second Get came after the call
		}
		var pe *PanicError
		if !errors.As(err, &pe) || !pe.Goexit || pe.Op != "memoized function" {
			t.Errorf("a Get waiting on a function that called runtime.Goexit: %v, want a *PanicError with Goexit", err)
		}
		if v, err := m.Get(0, 21); v != 42 || err != nil {
			t.Errorf("Get after runtime.Goexit = %d, %v; want 42 from a new call", v, err)
		}
		return
	}
}
