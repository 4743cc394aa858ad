package highlevel

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
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
