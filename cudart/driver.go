package cudart

/*
#include <stdint.h>

// gocuda_call_int calls fp, a runtime function cudaError_t (int *).
static int gocuda_call_int(uintptr_t fp, int *v) { return ((int (*)(int *))fp)(v); }

// gocuda_call_void calls fp, a runtime function cudaError_t (void).
static int gocuda_call_void(uintptr_t fp) { return ((int (*)(void))fp)(); }
*/
import "C"

import (
	"fmt"

	"github.com/gocuda/cuda/internal/dl"
)

// The versions and the error texts work without a driver, and with a
// runtime of another major: they are left out of the check.
func init() {
	lib.SetCheck(checkLibrary, "cudaDriverGetVersion", "cudaRuntimeGetVersion", "cudaGetErrorName", "cudaGetErrorString")
}

// MajorError reports that the runtime loaded is of another CUDA major than
// the package is built for ($GOCUDA_CUDART naming CUDA 12's libcudart in a
// CUDA 13 build): every function but the versions and the error texts
// returns it.
type MajorError = dl.MajorError

// checkLibrary is the library's check: the runtime's major, then the driver.
func checkLibrary() error {
	var v C.int
	if r, ok := call("cudaRuntimeGetVersion", &v); ok && r == Success && int(v)/1000 != VERSION/1000 {
		return &MajorError{Name: lib.Name(), Path: lib.Path(), Found: version(int(v)), Want: VERSION / 1000}
	}
	return checkDriver()
}

// DriverVersionError reports that the NVIDIA driver is older than the
// runtime needs, or missing: the runtime answered
// cudaErrorInsufficientDriver. The package's functions that need the driver
// return it; errors.Is(err, ErrorInsufficientDriver) holds.
type DriverVersionError struct {
	Runtime int    // the runtime's CUDA version (CUDART_VERSION): 13000 for 13.0
	Needed  string // the oldest driver release that runs it: "580"
	Found   int    // the CUDA version the installed driver supports (cudaDriverGetVersion): 12040 for 12.4; 0 if no driver was found
}

func (e *DriverVersionError) Error() string {
	found := "no NVIDIA driver was found (libcuda.so.1)"
	if e.Found > 0 {
		found = fmt.Sprintf("the installed driver supports CUDA %s only", version(e.Found))
	}
	return fmt.Sprintf("%s: CUDA %s needs NVIDIA driver %s or newer; %s", ErrorInsufficientDriver.String(), version(e.Runtime), e.Needed, found)
}

// Unwrap returns ErrorInsufficientDriver.
func (e *DriverVersionError) Unwrap() error { return ErrorInsufficientDriver }

// version formats a CUDA version number, 12040, as "12.4".
func version(v int) string { return fmt.Sprintf("%d.%d", v/1000, v%1000/10) }

// checkDriver asks the runtime for the device count, which needs the driver,
// before the first function that does. If the runtime finds the driver too
// old or missing, the error says which driver it needs and which it found.
func checkDriver() error {
	var n C.int
	r, ok := call("cudaGetDeviceCount", &n)
	if !ok || r != ErrorInsufficientDriver {
		if ok && r != Success {
			call("cudaGetLastError", nil) // the check's error is not the program's
		}
		return nil
	}
	e := &DriverVersionError{Runtime: VERSION, Needed: dl.MinDriver}
	var v C.int
	if r, ok := call("cudaDriverGetVersion", &v); ok && r == Success {
		e.Found = int(v)
	}
	return e
}

// call calls the runtime's function symbol with v, or without an argument
// if v is nil, and reports whether the library has it.
func call(symbol string, v *C.int) (Error, bool) {
	fp, err := lib.Lookup(symbol)
	if err != nil {
		return 0, false
	}
	if v == nil {
		return Error(C.gocuda_call_void(C.uintptr_t(uintptr(fp)))), true
	}
	return Error(C.gocuda_call_int(C.uintptr_t(uintptr(fp)), v)), true
}
