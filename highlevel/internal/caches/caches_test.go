package caches

import (
	"sync"
	"testing"
	"time"
)

// TestAddWhileClearing checks that a registered function may register
// another while Clear runs it (linalg's wait for a call in progress on a
// handle, when that call makes another handle's cache), and that the new
// one runs from the next Clear on.
func TestAddWhileClearing(t *testing.T) {
	var once sync.Once
	cleared := make(chan bool, 8)
	Add(func() bool {
		once.Do(func() { Add(func() bool { cleared <- true; return true }) })
		cleared <- true
		return true
	})
	done := make(chan struct{})
	go func() {
		Clear()
		Clear()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Clear deadlocked with a function that registers another")
	}
	if n := len(cleared); n != 3 {
		t.Errorf("%d calls, want the first function's two and the second's one", n)
	}
}

// TestForgetsGone checks that a function that returns false, its cache
// gone, is not called again.
func TestForgetsGone(t *testing.T) {
	calls := 0
	Add(func() bool { calls++; return false })
	Clear()
	Clear()
	if calls != 1 {
		t.Errorf("called %d times, want once", calls)
	}
}
