package linalg

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/gocuda/cuda/cublas"
	"github.com/gocuda/cuda/cublaslt"
	"github.com/gocuda/cuda/cusparse"
	"github.com/gocuda/cuda/highlevel/internal/cudalog"
	"github.com/gocuda/cuda/highlevel/internal/driver"
)

// loggerMu serializes SetLogger: each library's logger is process-wide.
var loggerMu sync.Mutex

// discard is where cuBLASLt and cuSPARSE write their log besides the
// callback (stdout, unless they are given a file).
const discard = "/dev/null"

// SetLogger sends the logs of cuBLAS, cuBLASLt (which cuBLAS calls for its
// matrix products) and cuSPARSE to l, from any goroutine's calls, linalg's
// or the program's own through the generated packages; nil turns them off.
// Each library logs what l enables, and no more: its logging costs time
// in every call it traces, so a library is asked for a level of messages
// only where l's Handler enables it when SetLogger is called (a Handler
// whose level changes later needs SetLogger again). The libraries' levels
// map to slog's so:
//
//	cuBLAS (an API trace, a message a call)     slog.LevelDebug-4
//	cuBLASLt, cuSPARSE 1, errors                slog.LevelError
//	cuBLASLt 2, performance trace;
//	  cuSPARSE 2, trace of kernel launches      slog.LevelDebug
//	3, hints of performance                     slog.LevelInfo
//	cuBLASLt 4, heuristics trace                slog.LevelDebug
//	cuSPARSE 4, information                     slog.LevelInfo
//	5, API trace                                slog.LevelDebug-4
//
// The records reach l's Handler as highlevel.SetLogger's do: on a
// goroutine of highlevel's, in order (highlevel.FlushLogs waits for
// them), with the attribute lib (cuBLAS, cuBLASLt or cuSPARSE) and, where
// the library names it, func; the Handler may block, call CUDA, or panic,
// which loses its record. Besides the callback, cuBLASLt and cuSPARSE
// would print their logs on stdout: SetLogger points them at /dev/null.
//
// The error joins those of the libraries that could not be set (one that
// is not installed: its *LibraryError); the others are set all the same.
// cuSOLVER's logger (cusolverDnLoggerSetCallback) is not routed.
func SetLogger(l *slog.Logger) error {
	loggerMu.Lock()
	defer loggerMu.Unlock()
	enabled := func(level slog.Level) bool { return l != nil && l.Enabled(context.Background(), level) }
	var errs []error
	fail := func(lib string, err error) {
		if err != nil {
			errs = append(errs, opError("set the logger of "+lib, err))
		}
	}

	cudalog.SetLogger(cudalog.CUBLAS, l)
	if enabled(cudalog.LevelTrace) {
		fail("cuBLAS", cublas.SetLoggerCallback(cublas.LogCallback(driver.LibraryLogger(driver.LogBlas))))
	} else {
		fail("cuBLAS", cublas.LoggerConfigure(0, 0, 0, ""))
	}

	// cuBLASLt and cuSPARSE: the file and the callback first, then the
	// levels, so that nothing reaches stdout meanwhile.
	cudalog.SetLogger(cudalog.CUBLASLt, l)
	mask := cudalog.LibraryMask(cudalog.CUBLASLt, l)
	var err error
	if mask != 0 {
		if err = cublaslt.LoggerOpenFile(discard); err == nil {
			err = cublaslt.LoggerSetCallback(cublaslt.LoggerCallback(driver.LibraryLogger(driver.LogBlasLt)))
		}
	}
	if err == nil {
		err = cublaslt.LoggerSetMask(int32(mask))
	}
	fail("cuBLASLt", err)

	cudalog.SetLogger(cudalog.CUSPARSE, l)
	mask = cudalog.LibraryMask(cudalog.CUSPARSE, l)
	err = nil
	if mask != 0 {
		if err = cusparse.LoggerOpenFile(discard); err == nil {
			err = cusparse.LoggerSetCallback(cusparse.LoggerCallback(driver.LibraryLogger(driver.LogSparse)))
		}
	}
	if err == nil {
		err = cusparse.LoggerSetMask(int32(mask))
	}
	fail("cuSPARSE", err)
	return errors.Join(errs...)
}
