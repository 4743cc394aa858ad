// Package randomtest holds what the randomized GPU tests share
// (highlevel's TestGPURandomOps and TestGPUStagedCopyStress,
// highlevel/internal/mixed's TestGPUMixed, highlevel/collective's
// TestGPURandomPrograms):
// their knobs, read from the environment, which fail the test where they
// are malformed; and how their oracles take an error apart (Parts) and
// tell CUDA's statuses (CaptureStatus, AnyStatus).
package randomtest

import (
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gocuda/cuda/cudadrv"
)

// Int returns the positive integer in the environment variable name, or
// def when it is unset.
func Int(t testing.TB, name string, def int) int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		t.Fatalf("$%s = %q: want a positive integer", name, s)
	}
	return n
}

// Seed returns the seed in the environment variable name, and whether it
// is set.
func Seed(t testing.TB, name string) (uint64, bool) {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("$%s = %q: want a seed, a number from 0", name, s)
	}
	return n, true
}

// Skipped returns the kinds of operation, of those named, that the test
// leaves out: those the comma-separated list in the environment variable
// skip names, and, where the one in only names any, all it does not.
func Skipped(t testing.TB, skip, only string, names []string) map[string]bool {
	t.Helper()
	skipped, kept := map[string]bool{}, map[string]bool{}
	for _, v := range []string{skip, only} {
		for _, s := range strings.Split(os.Getenv(v), ",") {
			if s = strings.TrimSpace(s); s == "" {
				continue
			}
			if !slices.Contains(names, s) {
				t.Fatalf("$%s names %q: the kinds are %s", v, s, strings.Join(names, ","))
			}
			if v == skip {
				skipped[s] = true
			} else {
				kept[s] = true
			}
		}
	}
	if len(kept) > 0 {
		for _, n := range names {
			if !kept[n] {
				skipped[n] = true
			}
		}
	}
	return skipped
}

// CaptureStatus reports whether err is one of CUDA's statuses of stream
// capture.
func CaptureStatus(err error) bool {
	var r cudadrv.Result
	if !errors.As(err, &r) {
		return false
	}
	switch r {
	case cudadrv.ERROR_STREAM_CAPTURE_UNSUPPORTED, cudadrv.ERROR_STREAM_CAPTURE_INVALIDATED,
		cudadrv.ERROR_STREAM_CAPTURE_MERGE, cudadrv.ERROR_STREAM_CAPTURE_UNMATCHED,
		cudadrv.ERROR_STREAM_CAPTURE_UNJOINED, cudadrv.ERROR_STREAM_CAPTURE_ISOLATION,
		cudadrv.ERROR_STREAM_CAPTURE_IMPLICIT, cudadrv.ERROR_CAPTURED_EVENT,
		cudadrv.ERROR_STREAM_CAPTURE_WRONG_THREAD:
		return true
	}
	return false
}

// AnyStatus reports whether err is one of CUDA's statuses.
func AnyStatus(err error) bool {
	var r cudadrv.Result
	return errors.As(err, &r)
}

// Parts returns the parts of err: the errors it joins (errors.Join, also
// inside a wrapping), each whole with its wrappings; or err.
func Parts(err error) []error {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			var ps []error
			for _, c := range j.Unwrap() {
				ps = append(ps, Parts(c)...)
			}
			return ps
		}
	}
	return []error{err}
}
