package highlevel

import (
	"context"
)

// The handles of other CUDA libraries that a program caches per device
// (linalg's cuBLAS, cuSOLVER and cuSPARSE handles) are destroyed through
// DestroyOutsideCaptures: cublasDestroy synchronizes the device,
// which a stream capture in progress forbids (llama.cpp's "synchronize
// graph capture and cublas handle destruction" met it as failed captures),
// so such a destroy waits as the package's device-wide waits do.

// DestroyOutsideCaptures calls destroy, which destroys a handle of another
// CUDA library on device d (cublasDestroy, ...), with d current on the
// calling OS thread, at a time when no stream capture the package began is
// in progress. While destroy runs, no
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
func (d Device) DestroyOutsideCaptures(destroy func() error, later func()) (bool, error) {
	if destroy == nil {
		return false, invalid("nil destroy function")
	}
	if err := lockDevices(); err != nil { // ErrCapturing or ErrInCallback
		if later != nil {
			go func() {
				afterCaptures(context.Background())
				later()
			}()
		}
		return false, nil
	}
	err := d.Do(destroy)
	unlockDevices()
	return true, err
}
