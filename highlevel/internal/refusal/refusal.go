// Package refusal is the refusal of bad input that highlevel and its
// subpackages share, so that one sentinel matches it in all of them:
// highlevel.ErrInvalid is ErrInvalid, as os.ErrInvalid is fs.ErrInvalid.
package refusal

import (
	"errors"
	"fmt"
)

// ErrInvalid is matched by every refusal of bad input.
var ErrInvalid = errors.New("highlevel: invalid argument")

// An invalidError is a refusal of bad input: its message says what was
// wrong, and it matches ErrInvalid.
type invalidError struct{ err error }

func (e invalidError) Error() string        { return e.err.Error() }
func (e invalidError) Unwrap() error        { return e.err }
func (e invalidError) Is(target error) bool { return target == ErrInvalid }

// Errorf returns the refusal of bad input that format and a describe, as
// fmt.Errorf does; it matches ErrInvalid, and what a %w verb wraps.
func Errorf(format string, a ...any) error { return invalidError{fmt.Errorf(format, a...)} }
