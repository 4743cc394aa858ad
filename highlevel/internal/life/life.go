// Package life is the closing protocol that every type of highlevel and its
// subpackages that owns something shares, as os.File and database/sql do
// it: each operation marks itself in progress (Acquire, Release) around the
// calls that use the handle; Close refuses new operations, waits for those
// in progress, and only then lets its caller destroy the handle. So no
// call is ever made on a destroyed handle, whatever goroutines do.
package life

import (
	"runtime"
	"sync/atomic"
	"time"
)

// A Life is an object's state: open, or closed, and the operations in
// progress. The zero value is open. It allocates nothing and takes no
// lock: an operation costs two atomic additions.
type Life struct {
	// state is the number of operations in progress times two, plus one
	// once Close began.
	state atomic.Int64
}

const closed = 1

// Acquire marks an operation in progress and reports whether the object
// is still open; Release must follow a true result.
func (l *Life) Acquire() bool {
	if l.state.Add(2)&closed != 0 {
		l.state.Add(-2)
		return false
	}
	return true
}

// Release ends an operation Acquire began.
func (l *Life) Release() { l.state.Add(-2) }

// Closed reports whether Close began.
func (l *Life) Closed() bool { return l.state.Load()&closed != 0 }

// Close refuses new operations and waits until those in progress have
// finished. It reports whether this call closed the object: false for
// every call after the first.
func (l *Life) Close() bool {
	if l.state.Or(closed)&closed != 0 {
		return false
	}
	// Operations are cgo calls, mostly microseconds long; a Synchronize in
	// progress can take as long as the GPU's work. Closing while they run
	// is rare, so the wait polls, sleeping longer each round, rather than
	// making every operation pay for a channel.
	for i := 0; l.state.Load() != closed; i++ {
		if i < 10 {
			runtime.Gosched()
		} else {
			time.Sleep(min(time.Microsecond<<min(i-10, 10), time.Millisecond))
		}
	}
	return true
}
