package highlevel

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gocuda/cuda/cudadrv"
	"github.com/gocuda/cuda/cudart"
	"github.com/gocuda/cuda/highlevel/internal/refusal"
)

// The package's errors name their operation once, after the package's
// prefix: "highlevel: new stream on device 1: cuStreamCreate:
// CUDA_ERROR_INVALID_VALUE ...". An exported function wraps what went wrong
// in its operation (opError); the functions it calls, the package's own
// included, add their detail after it without the prefix again. The
// sentinel errors (ErrClosed, ErrFreed, ErrNil, ...) carry the prefix, as
// they may be returned alone, and lose it inside an operation's error; they
// stay errors.Is-able through every layer.

// prefix begins every error message of the package.
const prefix = "highlevel: "

var (
	// ErrClosed is returned by operations on a closed Stream, Event, Graph,
	// GraphExec or pool.
	ErrClosed = errors.New("highlevel: use of closed object")
	// ErrFreed is returned by operations on memory that was freed, and by a
	// second Free.
	ErrFreed = errors.New("highlevel: use of freed memory")
	// ErrInCallback is returned by every operation of the package called
	// from a stream callback or host function (Stream.AddCallback,
	// Stream.LaunchHostFunc), where CUDA forbids calls into CUDA. Close,
	// Free and Unregister, and the pools' FreeAllBlocks and StopHolding,
	// return it before they change anything: the object stays as it was,
	// and the same call from a goroutine releases it later. Operations
	// refuse there before they take a lock of the package's, which a call
	// that CUDA makes wait for the callback may hold.
	ErrInCallback = errors.New("highlevel: CUDA called from a stream callback")
	// ErrPartialCopy is matched by the error of a copy that failed after
	// it had changed part of its destination: a copy staged through pinned
	// buffers (see MemoryPointer.CopyFromHostPointer) that CUDA refused
	// after its first chunks. Its message says how many bytes, from the
	// start, may have been written; they were, if at all, before the copy
	// returned. Every other copy that returns an error has changed nothing
	// of its destination that the error does not name.
	ErrPartialCopy = errors.New("highlevel: part of the copy was done")
)

// ErrInvalid is matched by every refusal of bad input, whatever its
// operation: a size or length out of range, a range past the end of
// memory, an element type device memory cannot hold, a malformed handle, a
// launch configuration outside the device's limits, a kernel argument of
// the wrong kind (ErrArgument), the Free of a view; linalg's and
// collective's refusals too. Sizes, offsets and counts are checked for sign
// and overflow before anything else but a nil or zero receiver (before
// closed pools and streams, and before the driver loads), and a refused
// call leaves the pools' accounting unchanged. As os.ErrInvalid, it tells
// a call that was wrong from CUDA failing:
//
//	if _, err := highlevel.Alloc(n); errors.Is(err, highlevel.ErrInvalid) {
//		// n was not a size
//	}
var ErrInvalid = refusal.ErrInvalid

// invalid returns the refusal of bad input that format and a describe, as
// fmt.Errorf does: it matches ErrInvalid.
func invalid(format string, a ...any) error { return refusal.Errorf(format, a...) }

// A driverStatus is a status the driver API returned, a CUresult. Its
// message is the driver's; errors.Is and errors.As match it as that
// cudadrv.Result and, where the runtime has a status of the same value, as
// that cudart.Error: CUDA gives the two APIs' statuses the same values for
// the same meanings (CUDA_ERROR_OUT_OF_MEMORY and cudaErrorMemoryAllocation
// are 2, CUDA_ERROR_ILLEGAL_ADDRESS and cudaErrorIllegalAddress 700), so
// that code written when the package called the runtime keeps working.
type driverStatus cudadrv.Result

func (s driverStatus) Error() string { return cudadrv.Result(s).Error() }

// Is reports whether target is s as a cudadrv.Result or a cudart.Error.
func (s driverStatus) Is(target error) bool {
	switch t := target.(type) {
	case cudadrv.Result:
		return t == cudadrv.Result(s)
	case cudart.Error:
		e, ok := s.runtime()
		return ok && t == e
	}
	return false
}

// As sets a *cudadrv.Result, or a *cudart.Error where the runtime has s,
// to s.
func (s driverStatus) As(target any) bool {
	switch t := target.(type) {
	case *cudadrv.Result:
		*t = cudadrv.Result(s)
		return true
	case *cudart.Error:
		if e, ok := s.runtime(); ok {
			*t = e
			return true
		}
	}
	return false
}

// runtime returns the runtime's status of s's value, and whether the
// runtime has one (it lacks a few of the driver's, such as
// CUDA_ERROR_CONTEXT_ALREADY_CURRENT).
func (s driverStatus) runtime() (cudart.Error, bool) {
	e := cudart.Error(s)
	return e, strings.HasPrefix(e.String(), "cuda")
}

// A DriverVersionError reports that the NVIDIA driver is older than an
// operation needs: it lacks Function, a function of the driver API in the
// form CUDA Needed gave it. The package works on every driver from CUDA
// 12.0 on; a few operations need a later one (Module.Kernel needs CUDA
// 12.4's cuKernelGetParamInfo). It matches
// cudadrv.ERROR_CALL_REQUIRES_NEWER_DRIVER and
// cudart.ErrorCallRequiresNewerDriver with errors.Is.
type DriverVersionError struct {
	Function string // the driver's function, such as "cuKernelGetParamInfo"
	Needed   int    // the CUDA version it needs, 1000*major + 10*minor: 12040 for 12.4
	Driver   int    // the CUDA version the installed driver supports (DriverVersion)
}

func (e *DriverVersionError) Error() string {
	return fmt.Sprintf("%s%s needs a driver for CUDA %s or newer; the installed driver supports CUDA %s",
		prefix, e.Function, cudaVersion(e.Needed), cudaVersion(e.Driver))
}

// Unwrap returns CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER.
func (e *DriverVersionError) Unwrap() error {
	return driverStatus(errCallRequiresNewerDriver)
}

// runtimeAPI loads libcudart for fn, a function of the runtime API that
// has no driver form, or returns why it cannot: the rest of the package
// needs only the driver.
func runtimeAPI(fn string) error {
	if err := cudart.Load(); err != nil {
		return fmt.Errorf("%s needs the CUDA runtime, libcudart: %w", fn, err)
	}
	return nil
}

// An opError is the error of an operation of the package.
type opError struct {
	op  string // what was done: "new stream on device 1"
	err error
}

// opErr returns err as the error of operation op: nil for nil.
func opErr(op string, err error) error {
	if err == nil {
		return nil
	}
	return &opError{op: op, err: err}
}

// wrap makes *err the error of operation op, if it is not nil; the words
// of op and the values after it are joined with spaces ("new stream on
// device 1"). Exported functions defer it, with values only behind a nil
// check, so that their success allocates nothing:
//
//	defer func() {
//		if err != nil {
//			wrap(&err, "new stream on", d)
//		}
//	}()
//
// The hot paths (pool hits, copies, memsets, launches) call it from a thin
// wrapper instead: one more defer can make a function's other defers
// slower ones, as the compiler open-codes only a few defers times returns.
func wrap(err *error, op string, args ...any) {
	if *err == nil {
		return
	}
	if len(args) > 0 {
		op = strings.TrimSuffix(fmt.Sprintln(append([]any{op}, args...)...), "\n")
	}
	*err = &opError{op: op, err: *err}
}

func (e *opError) Error() string { return prefix + e.op + ": " + bare(e.err) }

func (e *opError) Unwrap() error { return e.err }

// bare is err's message without the package's prefix.
func bare(err error) string {
	if e, ok := err.(*opError); ok {
		return e.op + ": " + bare(e.err)
	}
	return strings.TrimPrefix(err.Error(), prefix)
}

// An OutOfMemoryError is an allocation the device (or, for pinned memory,
// the host) could not satisfy, or that a pool's limit refused; CuPy's
// OutOfMemoryError. Every allocation of the package returns one: Alloc of
// a Device and of the pools, AllocAsync, pinned memory and Arrays, and so
// does a size beyond 2⁵⁶ bytes, which no device has.
//
// It matches cudart.ErrorMemoryAllocation and cudadrv.ERROR_OUT_OF_MEMORY
// with errors.Is, whichever API reported it. Memory held by the program's
// pools counts as used: FreeAllBlocks of a MemoryPool (and of
// DefaultMemoryPool) gives their unused blocks back to the device, and
// freeing Arrays and Memory no longer needed gives their blocks back to
// their pool; then the allocation may be tried again.
//
// The error reports what held the memory when the allocation failed: the
// statistics of every pool the package made (Pools), what the driver said
// of the device's memory (DeviceFree, DeviceTotal) and, while the
// allocation recorder is on (StartMemoryProfile), the largest holders by
// stack (Holders). Error sums them up in its one paragraph, Report gives
// them in full, and SetOutOfMemoryHook sees each such error as it is
// returned.
type OutOfMemoryError struct {
	Size   int    // the bytes asked for (math.MaxInt: more than an int counts)
	Device Device // the device, or CPUDevice for pinned host memory
	// Limit is the limit of the pool that refused the allocation, and Held
	// what the pool held (or had in use) then; both are 0 where the device
	// (or the host) had no more memory.
	Limit, Held int
	Err         error // what CUDA returned, or nil where the package refused

	// Pools are the statistics of the pools the package made (and the
	// program still reaches) that held memory or had a limit when the
	// allocation failed, of every device: the memory each holds in use,
	// and free for reuse, which FreeAllBlocks gives back.
	Pools []PoolStats
	// DeviceFree and DeviceTotal are Device's free and total memory as
	// cuMemGetInfo said after the failure; 0 where the driver was not
	// asked (pinned memory, a size no device has, a device the program
	// had not used) or failed.
	DeviceFree, DeviceTotal int
	// Holders are, while the allocation recorder is on
	// (StartMemoryProfile), the stacks that allocated the most memory in
	// use on Device, the largest first, at most five; nil while it is
	// off.
	Holders []MemoryHolder

	reported bool // the report above is filled in, and the hook called
}

// Error says "out of memory", and why; the operation's error around it
// names the size and the device. Once the report is filled in (as it is
// in every error an allocation of the package returns), a sentence each
// adds the device's free memory, what its pools hold, and the stack that
// holds the most.
func (e *OutOfMemoryError) Error() string {
	msg := prefix + "out of memory"
	if e.Limit > 0 {
		msg += fmt.Sprintf(": the pool's limit is %d bytes, %d held", e.Limit, e.Held)
	}
	if e.Err != nil {
		msg += ": " + bare(e.Err)
	}
	return msg + e.summary()
}

func (e *OutOfMemoryError) Unwrap() error { return e.Err }

// Is reports whether target is cudart.ErrorMemoryAllocation or
// cudadrv.ERROR_OUT_OF_MEMORY.
func (e *OutOfMemoryError) Is(target error) bool {
	return target == cudart.ErrorMemoryAllocation || target == cudadrv.ERROR_OUT_OF_MEMORY
}

// outOfMemory returns err as an *OutOfMemoryError of size bytes on d if it
// says that CUDA is out of memory, and err otherwise.
func outOfMemory(size int, d Device, err error) error {
	var oom *OutOfMemoryError
	if err == nil || errors.As(err, &oom) {
		return err
	}
	if errors.Is(err, cudart.ErrorMemoryAllocation) || errors.Is(err, cudadrv.ERROR_OUT_OF_MEMORY) {
		return &OutOfMemoryError{Size: size, Device: d, Err: err}
	}
	return err
}

// An errorList is several errors, each on a line of its own, the
// package's prefix said once.
type errorList []error

// join returns the errors that are not nil: nil for none, the error for
// one, an errorList for several.
func join(errs ...error) error {
	var l errorList
	for _, err := range errs {
		if err != nil {
			l = append(l, err)
		}
	}
	switch len(l) {
	case 0:
		return nil
	case 1:
		return l[0]
	}
	return l
}

func (l errorList) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s%d errors:", prefix, len(l))
	for _, err := range l {
		b.WriteString("\n\t")
		b.WriteString(strings.ReplaceAll(bare(err), "\n", "\n\t"))
	}
	return b.String()
}

func (l errorList) Unwrap() []error { return l }

// inner is err without its operation, for a function that names the
// operation of another of the package's that it called.
func inner(err error) error {
	if e, ok := err.(*opError); ok {
		return e.err
	}
	return err
}
