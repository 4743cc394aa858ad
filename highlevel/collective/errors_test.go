package collective

import (
	"errors"
	"strings"
	"testing"
)

// TestErrorsWithoutErr: the package's error types, zero or without an Err,
// say so rather than panic, and unwrap to nothing.
func TestErrorsWithoutErr(t *testing.T) {
	for _, c := range []struct {
		name string
		err  interface {
			error
			Unwrap() error
		}
		want string // the message, whole
	}{
		{"zero Error", &Error{}, "collective: operation on rank 0 of 0 (device 0): unknown error"},
		{"Error with no Err", &Error{Op: "all-reduce", Rank: 1, Size: 2, Dev: 1}, "collective: all-reduce on rank 1 of 2 (device 1): unknown error"},
		{"Error with no rank and no Err", &Error{Op: "new communicator", Rank: -1, Dev: 3}, "collective: new communicator on device 3: unknown error"},
		{"nil *Error", (*Error)(nil), "<nil>"},
		{"zero RendezvousError", &RendezvousError{}, "collective: rendezvous of rank 0 of 0: unknown error"},
		{"RendezvousError with no Err", &RendezvousError{Rank: 1, WorldSize: 2, Addr: "10.0.0.1:29500"}, "collective: rendezvous of rank 1 of 2 at 10.0.0.1:29500: unknown error"},
		{"nil *RendezvousError", (*RendezvousError)(nil), "<nil>"},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				if p := recover(); p != nil {
					t.Fatalf("panic: %v", p)
				}
			}()
			if got := c.err.Error(); got != c.want {
				t.Errorf("Error() = %q, want %q", got, c.want)
			}
			if u := c.err.Unwrap(); u != nil {
				t.Errorf("Unwrap() = %v, want nil", u)
			}
			if errors.Is(c.err, ErrConfig) {
				t.Error("matches ErrConfig")
			}
		})
	}
	// With an Err, the message is as before.
	e := &Error{Op: "close", Rank: 0, Size: 1, Err: ErrTimeout}
	if got := e.Error(); !strings.HasSuffix(got, ": timed out") || !errors.Is(e, ErrTimeout) {
		t.Errorf("Error() = %q, errors.Is(ErrTimeout) = %v", got, errors.Is(e, ErrTimeout))
	}
}
