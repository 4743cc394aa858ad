package randomtest

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/gocuda/cuda/cudadrv"
)

func TestSkipped(t *testing.T) {
	names := []string{"alloc", "write", "read", "graph"}
	for _, tc := range []struct {
		skip, only string
		want       []string
	}{
		{"", "", nil},
		{"write, graph", "", []string{"graph", "write"}},
		{"", "read", []string{"alloc", "graph", "write"}},
		{"alloc", "alloc,read", []string{"alloc", "graph", "write"}},
	} {
		t.Setenv("RT_SKIP", tc.skip)
		t.Setenv("RT_ONLY", tc.only)
		got := slices.Sorted(maps.Keys(Skipped(t, "RT_SKIP", "RT_ONLY", names)))
		if !slices.Equal(got, tc.want) {
			t.Errorf("skip %q, only %q: %v skipped, want %v", tc.skip, tc.only, got, tc.want)
		}
	}
}

func TestIntAndSeed(t *testing.T) {
	t.Setenv("RT_N", "")
	t.Setenv("RT_SEED", "")
	if n := Int(t, "RT_N", 7); n != 7 {
		t.Errorf("Int of an unset variable: %d, want the default 7", n)
	}
	if _, ok := Seed(t, "RT_SEED"); ok {
		t.Error("Seed of an unset variable reports it set")
	}
	t.Setenv("RT_N", "42")
	t.Setenv("RT_SEED", "0")
	if n := Int(t, "RT_N", 7); n != 42 {
		t.Errorf("Int: %d, want 42", n)
	}
	if s, ok := Seed(t, "RT_SEED"); s != 0 || !ok {
		t.Errorf("Seed: %d, %v; want 0, true", s, ok)
	}
}

func TestParts(t *testing.T) {
	a, b, c := errors.New("a"), errors.New("b"), errors.New("c")
	joined := fmt.Errorf("op: %w", errors.Join(a, errors.Join(b, c)))
	if got := Parts(joined); len(got) != 3 || got[0] != a || got[1] != b || got[2] != c {
		t.Errorf("Parts of a wrapped join of a and a join of b and c: %v", got)
	}
	if got := Parts(a); len(got) != 1 || got[0] != a {
		t.Errorf("Parts of one error: %v", got)
	}
}

func TestStatuses(t *testing.T) {
	for _, c := range []struct {
		err          error
		capture, any bool
	}{
		{fmt.Errorf("op: %w", cudadrv.ERROR_STREAM_CAPTURE_INVALIDATED), true, true},
		{cudadrv.ERROR_CAPTURED_EVENT, true, true},
		{cudadrv.ERROR_INVALID_VALUE, false, true},
		{errors.New("not CUDA's"), false, false},
	} {
		if got := CaptureStatus(c.err); got != c.capture {
			t.Errorf("CaptureStatus(%v) = %v", c.err, got)
		}
		if got := AnyStatus(c.err); got != c.any {
			t.Errorf("AnyStatus(%v) = %v", c.err, got)
		}
	}
}
