package highlevel

import (
	"errors"
	"log/slog"
	"slices"
	"strings"

	"github.com/gocuda/cuda/highlevel/internal/cudalog"
	"github.com/gocuda/cuda/highlevel/internal/driver"
)

// DriverLog returns the driver's own explanation of the failed call
// behind err: from CUDA 12.9 on, the driver writes in its error log why it
// refused a call, which the package reads when the call fails, and only
// then, and attaches to the call's error. It returns nil where err carries
// none: an older driver, a call the driver does not explain, an error of
// no driver call. The lines come one per string, "function: why" where the
// driver names its function (cuMemAlloc); the error's message ends with
// them too, and the error still matches the driver's status with
// errors.Is, as the cudadrv.Result and as the cudart.Error of the same
// value.
//
// The lines are those the driver gave during the failed call, on the
// thread that made it; a line the driver gives elsewhere, or one the
// package cannot tie to the call for sure, goes to the logger SetLogger
// sets, never to another call's error. So do the lines of a call after
// which the scheduler moved the goroutine to another thread, which it
// does not do to a goroutine locked to its thread (runtime.LockOSThread).
// docs/logging.md in the repository says how.
func DriverLog(err error) []string {
	var e *driverLogError
	if !errors.As(err, &e) {
		return nil
	}
	return slices.Clone(e.log)
}

// A driverLogError is a status the driver returned, with the driver's
// lines for it (DriverLog).
type driverLogError struct {
	status driverStatus
	log    []string
}

// Error gives the status, then the driver's lines, on one line.
func (e *driverLogError) Error() string {
	return e.status.Error() + " (the driver's log: " + strings.Join(e.log, "; ") + ")"
}

// Unwrap returns the status, which matches its cudadrv.Result and the
// cudart.Error of its value with errors.Is and errors.As.
func (e *driverLogError) Unwrap() error { return e.status }

// driverError returns the error of the driver's status r, with the
// driver's lines for it where the driver gave some during the calling
// goroutine's latest call into it, on the thread it is on now: the call
// that returned r, where the error is made right after it. Its cost, on
// the failure path only: an atomic load where no goroutine has lines
// waiting, else a cgo call and a look at the goroutine's stack.
func driverError(r int32) error {
	if r <= 0 || !cudalog.Pending() {
		return driverStatus(r)
	}
	now := driver.LogNow()
	lines := cudalog.Take(cudalog.Stamp{Tid: now.Tid, Serial: now.Serial})
	if len(lines) == 0 {
		return driverStatus(r)
	}
	return &driverLogError{status: driverStatus(r), log: lines}
}

// registerDriverLog registers the shim's logger with the driver, where
// the driver has its error log (CUDA 12.9): from then on the driver hands
// it the explanation of each failure. An older driver has none, which is
// no error: errors carry no lines, and SetLogger's logger gets no driver
// records.
func registerDriverLog() {
	driver.LogsInit()
}

// SetLogger sends the CUDA driver's log to l (nil: nowhere, as before the
// first call): every line the driver logs once the package has loaded it
// (SetLogger does), whichever library's call it explains (the package's, cuBLAS's, the
// program's own), not only those of the package's failed calls, whose
// errors carry their lines too (DriverLog). The driver has the log from
// CUDA 12.9 on; an older one logs nothing. The records reach l's Handler
// on a goroutine of the package's, soon after the driver logs them,
// in order (FlushLogs waits for them), with their time, the attribute
// lib="driver" and, where the driver names it, func, its function
// (cuMemAlloc); the message is the driver's. The driver's levels map to
// slog's so:
//
//	CU_LOG_LEVEL_ERROR    slog.LevelDebug (the explanation of a failed call, handled or not)
//	CU_LOG_LEVEL_WARNING  slog.LevelWarn
//
// The driver explains every failure, including those the program expects
// and handles, and those the package handles itself (an allocation it
// retries once its pool gave memory back): a failure is the program's to
// report, with its error, so the explanations come at slog.LevelDebug.
//
// The Handler runs on no thread of CUDA's: it may block, call CUDA, or
// panic, which loses its record, not the process. linalg.SetLogger and
// collective.SetLogger do the same for cuBLAS, cuBLASLt, cuSPARSE and
// NCCL.
func SetLogger(l *slog.Logger) {
	cudalog.SetLogger(cudalog.Driver, l)
	if l != nil {
		load() // the logger is registered once the driver is loaded; an error here is the next call's
	}
}

// FlushLogs returns once the records that the driver and the libraries
// logged before it have gone to their loggers (SetLogger,
// linalg.SetLogger, collective.SetLogger): at the end of a program, or
// before a test looks at what its Handler recorded. Called by such a
// Handler, it returns at once.
func FlushLogs() { cudalog.Flush() }
