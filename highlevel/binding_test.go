package highlevel

import (
	"errors"
	"testing"

	lifepkg "github.com/gocuda/cuda/highlevel/internal/life"
)

// TestBindingKey checks that the subpackages' methods do nothing without
// their key: on the legacy default stream (a nil Stream), which needs no
// GPU, Enter with the key returns its handle, 0, and without it an error.
func TestBindingKey(t *testing.T) {
	var s *Stream
	for _, tt := range []struct {
		name string
		key  lifepkg.Key
		err  error
	}{
		{"the subpackages' key", lifepkg.Sub, nil},
		{"the zero key", lifepkg.Key{}, errNoKey},
	} {
		h, err := s.Enter(tt.key, 0)
		if h != 0 || !errors.Is(err, tt.err) {
			t.Errorf("Enter with %s = %v, %v; want 0, %v", tt.name, h, err, tt.err)
		}
		if err == nil {
			s.Leave(tt.key)
		}
	}
}
