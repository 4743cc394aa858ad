package highlevel

import (
	"sync"
	"time"

	lifepkg "github.com/gocuda/cuda/highlevel/internal/life"
)

// The handles of other CUDA libraries that highlevel's subpackages cache
// per device (linalg's cuBLAS, cuSOLVER and cuSPARSE handles) are destroyed
// through DestroyOutsideCaptures: cublasDestroy synchronizes the device,
// which a stream capture in progress forbids (llama.cpp's "synchronize
// graph capture and cublas handle destruction" met it as failed captures),
// so such a destroy waits as the package's device-wide waits do.

// libDestroys are the calls DestroyOutsideCaptures could not make yet (a
// capture was in progress, or it was called from a stream callback), for
// one goroutine, the poller, to make once no capture is in progress. It
// lives here rather than in state.go, beside the function it serves.
var libDestroys struct {
	sync.Mutex
	later   []func()
	polling bool          // the poller runs: it takes what is added
	kick    chan struct{} // a capture ended: the poller looks again now
}

func init() { libDestroys.kick = make(chan struct{}, 1) }

// DestroyOutsideCaptures calls destroy, which destroys a handle of another
// CUDA library on device d (cublasDestroy, ...), with d current on the
// calling OS thread, at a time when no stream capture the package began is
// in progress; it is for highlevel's subpackages. While destroy runs, no
// capture begins (BeginCapture waits) and the package's device-wide waits
// (Device.Synchronize, ...) wait, as they wait for each other. It reports
// whether destroy ran, and returns its error. Where it cannot run now (a
// capture is in progress, or this is a stream callback, which a device's
// synchronization would wait for) it returns false at once without
// calling destroy, and calls later, if not nil, on a goroutine of the
// package's once no capture is in progress: later tries again, usually by
// calling DestroyOutsideCaptures. So a destroy is put off, never dropped.
//
// destroy must not block on locks held by calls that may wait for a
// capture's end or for a device-wide wait; a caller that holds its
// library's lock while calling DestroyOutsideCaptures must not be inside
// such a call.
func (d Device) DestroyOutsideCaptures(k lifepkg.Key, destroy func() error, later func()) (bool, error) {
	switch {
	case !k.OK():
		return false, errNoKey
	case destroy == nil:
		return false, invalid("nil destroy function")
	}
	if err := lockDevices(); err != nil { // ErrCapturing or ErrInCallback
		destroyLater(later)
		return false, nil
	}
	err := d.Do(destroy)
	unlockDevices()
	kickDestroys() // no capture was in progress: those put off may run too
	return true, err
}

// destroyLater leaves later to the poller, starting it where it is not
// running.
func destroyLater(later func()) {
	if later == nil {
		return
	}
	libDestroys.Lock()
	libDestroys.later = append(libDestroys.later, later)
	if !libDestroys.polling {
		libDestroys.polling = true
		go pollDestroys()
	}
	libDestroys.Unlock()
}

// kickDestroys makes the poller, if it runs, look again now: captureEnded
// calls it as each capture ends. It costs a channel send only while
// destroys wait.
func kickDestroys() {
	select {
	case libDestroys.kick <- struct{}{}:
	default:
	}
}

// pollDestroys calls the functions destroyLater left once no capture is in
// progress, until none is left. A capture ends by uncounting itself and
// releasing captureMu, not at once: so the poller looks as each capture
// ends (kickDestroys) and a little later, polling every 50 µs at first,
// up to every 50 ms, which also catches a count that fell without an end
// (a BeginCapture that failed).
func pollDestroys() {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for i := 0; ; i++ {
		libDestroys.Lock()
		later := libDestroys.later
		libDestroys.later = nil
		if len(later) == 0 {
			libDestroys.polling = false
			libDestroys.Unlock()
			return
		}
		libDestroys.Unlock()
		if captures.Load() == 0 {
			for _, f := range later {
				f() // adds itself again where it still cannot run
			}
		} else {
			libDestroys.Lock()
			libDestroys.later = append(later, libDestroys.later...)
			libDestroys.Unlock()
		}
		// Since Go 1.23 Reset leaves no stale tick to drain.
		timer.Reset(min(50*time.Microsecond<<min(i, 10), 50*time.Millisecond))
		select {
		case <-libDestroys.kick:
			i = -1
		case <-timer.C:
		}
	}
}
