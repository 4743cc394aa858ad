package highlevel

import (
	"fmt"

	"github.com/gocuda/cuda/cudadrv"

	"github.com/gocuda/cuda/highlevel/internal/driver"
)

// baseVersion is the CUDA version of the driver API the shim calls: every
// function it needs has the form it calls from CUDA 12.0 on, except those
// of later versions that a few operations need (missing).
const baseVersion = driver.BaseVersion

// load takes the shim's entry points from the driver, once, through
// cuGetProcAddress_v2 of the libcuda.so.1 that cudadrv opened, and
// registers the shim's logger where the driver has its error log.
func load() error {
	loadOnce.Do(func() {
		if loadErr = opErr("loading CUDA", resolve()); loadErr == nil {
			registerDriverLog()
		}
	})
	return loadErr
}

// resolve asks cuGetProcAddress_v2 for each of the shim's functions at the
// version the shim calls it at. A function of baseVersion or before that
// the driver lacks is the error; one of a later version is noted in
// missing, for the operations that need it.
func resolve() error {
	gpa, err := cudadrv.ProcAddress("cuGetProcAddress_v2")
	if err != nil {
		var v int32
		if cudadrv.DriverGetVersion(&v) == nil && v < baseVersion {
			return &DriverVersionError{Function: "cuGetProcAddress_v2", Needed: baseVersion, Driver: int(v)}
		}
		return err
	}
	syms := shimSymbols()
	missing = make([]error, len(syms))
	var version int32 // the driver's CUDA version, once known
	for i, sym := range syms {
		var status int32
		r := driver.Resolve(gpa, int32(i), &status)
		if r == 0 && cudadrv.DriverProcAddressQueryResult(status) == cudadrv.GET_PROC_ADDRESS_SUCCESS {
			if i == 0 && driver.DriverVersion(&version) != 0 { // symbol 0 is cuDriverGetVersion
				version = 0
			}
			continue
		}
		var err error
		if version > 0 && int(version) < sym.version {
			err = &DriverVersionError{Function: sym.name, Needed: sym.version, Driver: int(version)}
		} else {
			err = &cudadrv.SymbolError{Symbol: sym.name, Library: cudadrv.LibraryPath(), Reason: fmt.Sprintf(
				"cuGetProcAddress_v2 at CUDA %s: %v (%v)", cudaVersion(sym.version),
				cudadrv.Result(r), cudadrv.DriverProcAddressQueryResult(status))}
		}
		if sym.version <= baseVersion {
			return err
		}
		missing[i] = err
	}
	return nil
}

// A shimSymbol is a driver function the shim calls, and the CUDA version
// it is requested at.
type shimSymbol struct {
	name    string
	version int
}

// shimSymbols returns the shim's functions, in its order (zsymbols.h).
func shimSymbols() []shimSymbol {
	syms := make([]shimSymbol, int(driver.Nsymbols()))
	for i := range syms {
		syms[i] = shimSymbol{driver.Symbol(int32(i)), int(driver.SymbolVersion(int32(i)))}
	}
	return syms
}

// cudaVersion formats a CUDA version number, 12040, as "12.4".
func cudaVersion(v int) string { return fmt.Sprintf("%d.%d", v/1000, v%1000/10) }

// check turns a status of the shim into an error naming the operation.
// It stays small enough to be inlined into every call of the driver:
// checkFailed, the rest, is not.
func check(op string, r int32) error {
	if r == 0 {
		return nil
	}
	return checkFailed(op, r)
}

// checkFailed is check of a status that is not 0.
//
//go:noinline
func checkFailed(op string, r int32) error { return opErr(op, statusError(r)) }

// ready turns the status of a query (cuEventQuery, cuStreamQuery) into
// whether the work is done: CUDA_ERROR_NOT_READY is not an error.
func ready(op string, r int32) (bool, error) {
	if cudadrv.Result(r) == cudadrv.ERROR_NOT_READY {
		return false, nil
	}
	return r == 0, check(op, r)
}

// statusError returns the error of the shim's status r, which is not 0:
// a driver's status with the driver's log lines for it where it has some
// (driverError).
func statusError(r int32) error {
	switch {
	case r == driver.InCallback:
		return ErrInCallback
	case r == driver.Capturing:
		return ErrCapturing
	case r <= driver.MissingBase:
		if err := missing[driver.MissingBase-r]; err != nil {
			return err
		}
	}
	return driverError(r)
}
