package collective

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gocuda/cuda/highlevel/internal/refusal"
)

// The package's errors name their operation once, after the package's
// prefix: "collective: all-reduce on rank 1 of 2 (device 1): ...". The
// sentinel errors below stay errors.Is-able through every layer, as do
// highlevel's (highlevel.ErrClosed, highlevel.ErrFreed, highlevel.ErrNil),
// NCCL's statuses (nccl.Result) and the context's errors.

var (
	// ErrWorldSize is wrapped by the error of a rendezvous in which two
	// processes disagree on the number of ranks.
	ErrWorldSize = errors.New("collective: world sizes differ")
	// ErrDuplicateRank is wrapped by the error of a rendezvous in which two
	// processes claim the same rank.
	ErrDuplicateRank = errors.New("collective: rank claimed twice")
	// ErrAddrInUse is wrapped by the error of a root rank that cannot
	// listen because another program holds its address and port.
	ErrAddrInUse = errors.New("collective: address in use")
	// ErrMissingRanks is wrapped by the error of a root rank whose peers did
	// not all come before its deadline; the *RendezvousError lists them.
	ErrMissingRanks = errors.New("collective: ranks did not join")
	// ErrRootUnreachable is wrapped by the error of a rank that could not
	// reach the root rank before its deadline.
	ErrRootUnreachable = errors.New("collective: root rank unreachable")
	// ErrPeerClosed is wrapped by the error of a rendezvous in which a
	// process closed its connection (or died) before the rendezvous was
	// complete.
	ErrPeerClosed = errors.New("collective: peer closed the connection early")
	// ErrProtocol is wrapped by the error of a rendezvous that met
	// something other than this package's rendezvous at the other end.
	ErrProtocol = errors.New("collective: rendezvous protocol error")
	// ErrConfig is wrapped by the errors of a configuration that cannot
	// work: a rank outside the world, a missing or malformed variable. It
	// is a refusal of bad input, as all the package's refusals are: they
	// match highlevel.ErrInvalid.
	ErrConfig = refusal.Errorf("collective: bad configuration")
	// ErrAborted is wrapped by the error of an operation on a communicator
	// that was aborted: by Abort, by a wait that timed out or found an
	// error of NCCL's, or by RunEach after another rank failed.
	ErrAborted = errors.New("collective: communicator aborted")
	// ErrTimeout is wrapped by the error of a wait, an initialization or a
	// Close that did not finish within the communicator's Timeout; the
	// communicator is aborted.
	ErrTimeout = errors.New("collective: timed out")
)

const prefix = "collective: "

// bare is err's message without a package's prefix; "unknown error" for
// a nil err (an Error or RendezvousError made without one).
func bare(err error) string {
	if err == nil {
		return "unknown error"
	}
	s := err.Error()
	for _, p := range []string{prefix, "highlevel: "} {
		s = strings.TrimPrefix(s, p)
	}
	return s
}

// A RendezvousError is the error of Rendezvous (and of Join's rendezvous):
// which rank failed, at which address, and why. Err wraps one of the
// package's sentinel errors (ErrWorldSize, ErrDuplicateRank, ErrAddrInUse,
// ErrMissingRanks, ErrRootUnreachable, ErrPeerClosed, ErrProtocol,
// ErrConfig) and, where the context ended it, the context's error. One
// made without an Err says "unknown error" and unwraps to nil.
type RendezvousError struct {
	Rank      int    // the rank that reports the error
	WorldSize int    // its world size
	Addr      string // the root's address, host:port
	Missing   []int  // with ErrMissingRanks: the ranks that did not join, the lowest 1<<20 of them
	Err       error
}

func (e *RendezvousError) Error() string {
	if e == nil {
		return "<nil>"
	}
	at := ""
	if e.Addr != "" {
		at = " at " + e.Addr
	}
	return fmt.Sprintf("%srendezvous of rank %d of %d%s: %s", prefix, e.Rank, e.WorldSize, at, bare(e.Err))
}

func (e *RendezvousError) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.Err
}

// An Error is the error of an operation on a communicator: which
// operation, which rank and device, and why. One made without an Err says
// "unknown error" and unwraps to nil.
type Error struct {
	Op   string // "all-reduce", "new communicator", "close", ...
	Rank int    // the communicator's rank; -1 where it has none yet
	Size int    // its number of ranks
	Dev  int    // its device
	Err  error
}

func (e *Error) Error() string {
	if e == nil {
		return "<nil>"
	}
	op := e.Op
	if op == "" {
		op = "operation"
	}
	if e.Rank < 0 {
		return fmt.Sprintf("%s%s on device %d: %s", prefix, op, e.Dev, bare(e.Err))
	}
	return fmt.Sprintf("%s%s on rank %d of %d (device %d): %s", prefix, op, e.Rank, e.Size, e.Dev, bare(e.Err))
}

func (e *Error) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.Err
}

// wrapped is the error of a sentinel of ours wrapping another error, both
// errors.Is-able: "rank claimed twice: rank 2 (from 10.0.0.2:4711)".
type wrapped struct {
	sentinel error
	detail   string
	err      error // may be nil
}

func (w *wrapped) Error() string {
	s := bare(w.sentinel)
	if w.detail != "" {
		s += ": " + w.detail
	}
	if w.err != nil {
		s += ": " + bare(w.err)
	}
	return s
}

func (w *wrapped) Unwrap() []error {
	if w.err == nil {
		return []error{w.sentinel}
	}
	return []error{w.sentinel, w.err}
}

// wrapf returns an error that is sentinel, with a detail formatted as
// fmt.Sprintf does, and, if err is not nil, err too.
func wrapf(sentinel, err error, format string, args ...any) error {
	return &wrapped{sentinel: sentinel, detail: fmt.Sprintf(format, args...), err: err}
}
