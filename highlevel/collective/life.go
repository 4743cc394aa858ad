package collective

import (
	"runtime"
	"sync/atomic"
	"time"
)

// life is highlevel's closing protocol (highlevel/life.go), which the
// package does not export: each operation marks itself in progress
// (acquire, release) around the calls that use the communicator; close
// refuses new operations, waits for those in progress, and only then lets
// its caller destroy the communicator. The zero value is open; an
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
// call after the first. The package's operations poll NCCL with deadlines
// and give up when the communicator is aborted, so the wait is bounded.
func (l *life) close() bool {
	if l.state.Or(lifeClosed)&lifeClosed != 0 {
		return false
	}
	for i := 0; l.state.Load() != lifeClosed; i++ {
		if i < 10 {
			runtime.Gosched()
		} else {
			time.Sleep(min(time.Microsecond<<min(i-10, 10), time.Millisecond))
		}
	}
	return true
}
