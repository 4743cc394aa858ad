package highlevel

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
)

// life is the closing protocol every type of the package that owns
// something shares, as os.File and database/sql do it: each operation marks
// itself in progress (acquire, release) around the calls that use the
// handle; close refuses new operations, waits for those in progress, and
// only then lets its caller destroy the handle. So no CUDA call is ever
// made on a destroyed handle, whatever goroutines do.
//
// The zero value is open. It allocates nothing and takes no lock: an
// operation costs two atomic additions.
type life struct {
	// state is the number of operations in progress times two, plus one
	// once close began.
	state atomic.Int64
}

const lifeClosed = 1

// acquire marks an operation in progress and reports whether the object is
// still open; release must follow a true result.
func (l *life) acquire() bool {
	if l.state.Add(2)&lifeClosed != 0 {
		l.state.Add(-2)
		return false
	}
	return true
}

func (l *life) release() { l.state.Add(-2) }

// closed reports whether close began.
func (l *life) closed() bool { return l.state.Load()&lifeClosed != 0 }

// close refuses new operations and waits until those in progress have
// finished. It reports whether this call closed the object: false for every
// call after the first.
func (l *life) close() bool {
	if l.state.Or(lifeClosed)&lifeClosed != 0 {
		return false
	}
	// Operations are cgo calls, mostly microseconds long; a Synchronize in
	// progress can take as long as the GPU's work. Closing while they run
	// is rare, so the wait polls, sleeping longer each round, rather than
	// making every operation pay for a channel.
	for i := 0; l.state.Load() != lifeClosed; i++ {
		if i < 10 {
			runtime.Gosched()
		} else {
			time.Sleep(min(time.Microsecond<<min(i-10, 10), time.Millisecond))
		}
	}
	return true
}

// closing is the start of every Close: it refuses to close from a stream
// callback (where an operation in progress may be waiting for the callback
// itself), then closes l. It returns nil for the call that closed, and
// ErrClosed for every later one.
func (l *life) closing() error {
	if inCallback() {
		return ErrInCallback
	}
	if !l.close() {
		return ErrClosed
	}
	return nil
}

// ErrNil is wrapped by the error every method returns on a nil receiver,
// and on the zero value of a type that is not usable without its maker.
var ErrNil = errors.New("highlevel: nil object")

// nilError is the error of a method called on a nil *typ.
func nilError(typ string) error { return fmt.Errorf("%w: nil *%s", ErrNil, typ) }

// zeroError is the error of a method called on the zero value of typ, a
// type whose values maker makes.
func zeroError(typ, maker string) error {
	return fmt.Errorf("%w: zero %s (make one with %s)", ErrNil, typ, maker)
}

// A PanicError is a panic of a Go function the package called for the
// program (a stream callback, a host function, a Memo's function),
// recovered and turned into an error where the program can see it, or the
// function's call of runtime.Goexit (t.FailNow calls it), which ends the
// function as a panic does.
type PanicError struct {
	Op     string // what panicked: "host function", "stream callback", "memoized function"
	Value  any    // the value passed to panic; nil after runtime.Goexit
	Goexit bool   // the function called runtime.Goexit rather than panic
	Stack  []byte // the goroutine's stack where it panicked or called runtime.Goexit
}

func (e *PanicError) Error() string {
	if e.Goexit {
		return fmt.Sprintf("highlevel: %s called runtime.Goexit", e.Op)
	}
	return fmt.Sprintf("highlevel: %s panicked: %v", e.Op, e.Value)
}

// recovered returns the *PanicError of a function that did not return: v
// is what recover returned, nil when the function called runtime.Goexit.
func recovered(op string, v any) *PanicError {
	buf := make([]byte, 16<<10)
	return &PanicError{Op: op, Value: v, Goexit: v == nil, Stack: buf[:runtime.Stack(buf, false)]}
}
