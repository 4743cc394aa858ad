package gpuprobe

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// recorder is a testing.TB that records how a call ended its test.
type recorder struct {
	testing.TB
	failed  string
	skipped string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(f string, a ...any) {
	r.failed = fmt.Sprintf(f, a...)
	runtime.Goexit()
}
func (r *recorder) Skipf(f string, a ...any) {
	r.skipped = fmt.Sprintf(f, a...)
	runtime.Goexit()
}

// TestRequireLibrary checks that a library that does not load skips a test
// only where $GOCUDA_TEST_GPU does not say the machine has a GPU, and
// fails it, with the loader's error, where it does.
func TestRequireLibrary(t *testing.T) {
	loadErr := errors.New("cannot load libnccl.so.2; tried:\n\t/usr/lib/libnccl.so.2: no such file")
	for _, tc := range []struct {
		name string
		env  string
		err  error
		end  string // PASS, SKIP or FAIL
	}{
		{"loads", "", nil, "PASS"},
		{"loads, a GPU said", "1", nil, "PASS"},
		{"does not load", "", loadErr, "SKIP"},
		{"does not load, GOCUDA_TEST_GPU=0", "0", loadErr, "SKIP"},
		{"does not load, a GPU said", "1", loadErr, "FAIL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(Env, tc.env)
			r := &recorder{TB: t}
			done := make(chan struct{})
			go func() {
				defer close(done)
				RequireLibrary(r, "NCCL", tc.err)
			}()
			<-done
			end, msg := "PASS", ""
			switch {
			case r.failed != "":
				end, msg = "FAIL", r.failed
			case r.skipped != "":
				end, msg = "SKIP", r.skipped
			}
			if end != tc.end {
				t.Fatalf("ended %s (%q), want %s", end, msg, tc.end)
			}
			if tc.err != nil && (!strings.Contains(msg, "NCCL") || !strings.Contains(msg, tc.err.Error())) {
				t.Errorf("%s with %q, want the library's name and the loader's error", end, msg)
			}
			if end == "FAIL" && !strings.Contains(msg, "$GOCUDA_TEST_GPU=1") {
				t.Errorf("failed with %q, want the reason: $GOCUDA_TEST_GPU=1", msg)
			}
		})
	}
}
