// Package hook gives highlevel's subpackages (highlevel/linalg) the few
// internals of highlevel they need to follow its rules, without making them
// part of highlevel's API: beginning and ending work on a Stream and on an
// Array's memory as highlevel's own operations do, and being cleared by
// highlevel.ClearCaches.
//
// highlevel sets the functions when it is initialized. A subpackage imports
// highlevel, so they are set before the subpackage's code runs. The values
// typed any are highlevel's own pointers: a *highlevel.Stream (nil for the
// legacy default stream) and a *highlevel.Array[T] of any T.
package hook

import "unsafe"

var (
	// EnterStream begins an operation that queues work on stream s for
	// device dev: it returns the stream's handle (0, the legacy default
	// stream, for a nil Stream), or an error for a closed stream or one of
	// another device. LeaveStream(s) must follow a nil error; until then,
	// Close of the stream waits.
	EnterStream func(s any, dev int) (uintptr, error)
	LeaveStream func(s any)

	// HoldArray begins an operation on the memory of array a, which must
	// not be nil: it returns the address of its first element and its
	// device (-1 where every device may use it: managed memory, or an empty
	// array, which holds nothing and whose address is nil), or ErrFreed.
	// ReleaseArray(a) must follow a nil error; until then, Free of the
	// memory waits.
	HoldArray    func(a any) (p unsafe.Pointer, dev int, err error)
	ReleaseArray func(a any)
	// KeepArray makes the capture that stream s takes part in, if any,
	// hold the memory of array a for its graph, as highlevel's own
	// operations on a capturing stream do; s is entered (EnterStream).
	KeepArray func(s any, a any)

	// OnClearCaches adds f to what highlevel.ClearCaches calls.
	OnClearCaches func(f func())
)
