package highlevel

import (
	"errors"
	"fmt"
	"runtime"

	lifepkg "github.com/gocuda/cuda/highlevel/internal/life"
)

// life is the closing protocol every type of the package that owns
// something shares (package life).
type life = lifepkg.Life

// closing is the start of every Close: it refuses to close from a stream
// callback (where an operation in progress may be waiting for the callback
// itself), then closes l. It returns nil for the call that closed, and
// ErrClosed for every later one.
func closing(l *life) error {
	if inCallback() {
		return ErrInCallback
	}
	if !l.Close() {
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
