package refusal

import (
	"errors"
	"io"
	"testing"
)

func TestErrorf(t *testing.T) {
	err := Errorf("size %d: %w", -1, io.EOF)
	if err.Error() != "size -1: EOF" {
		t.Errorf("message %q", err)
	}
	if !errors.Is(err, ErrInvalid) || !errors.Is(err, io.EOF) {
		t.Errorf("%v matches ErrInvalid: %v, what it wraps: %v", err, errors.Is(err, ErrInvalid), errors.Is(err, io.EOF))
	}
	if errors.Is(errors.New("size -1"), ErrInvalid) {
		t.Error("a plain error matches ErrInvalid")
	}
}
