package cudatest_test

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/gocuda/cuda/highlevel"
	"github.com/gocuda/cuda/highlevel/cudatest"
	"github.com/gocuda/cuda/internal/gpuprobe"
)

// recorder is a testing.TB that records what Require does to its test.
type recorder struct {
	testing.TB
	cleanups []func()
	errors   []string
	skipped  string
}

func (r *recorder) Helper()                   {}
func (r *recorder) Cleanup(f func())          { r.cleanups = append(r.cleanups, f) }
func (r *recorder) Errorf(f string, a ...any) { r.errors = append(r.errors, fmt.Sprintf(f, a...)) }
func (r *recorder) Skip(a ...any)             { r.skipped = fmt.Sprint(a...); runtime.Goexit() }
func (r *recorder) Skipf(f string, a ...any) {
	r.skipped = fmt.Sprintf(f, a...)
	runtime.Goexit()
}
func (r *recorder) Fatal(a ...any) {
	r.errors = append(r.errors, fmt.Sprint(a...))
	runtime.Goexit()
}
func (r *recorder) Fatalf(f string, a ...any) {
	r.Errorf(f, a...)
	runtime.Goexit()
}

// run runs fn on a recorder in its own goroutine, as the testing package
// runs a test, so that Skip and Fatal end it.
func run(t *testing.T, fn func(testing.TB)) *recorder {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(r)
	}()
	<-done
	return r
}

func (r *recorder) cleanup() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

func TestRequire(t *testing.T) {
	var d highlevel.Device = -1
	r := run(t, func(tb testing.TB) { d = cudatest.Require(tb) })
	if err := gpuprobe.Probe(); err != nil {
		// No GPU, or a driver that fails: Require ends its test as
		// gpuprobe.Require ends this one.
		want := run(t, gpuprobe.Require)
		if d >= 0 || r.skipped != want.skipped || !slices.Equal(r.errors, want.errors) || want.skipped == "" && len(want.errors) == 0 {
			t.Errorf("Require: device %d, skipped %q, errors %q; want skipped %q, errors %q", d, r.skipped, r.errors, want.skipped, want.errors)
		}
		gpuprobe.Require(t)
	}
	if r.skipped != "" || len(r.errors) != 0 || d < 0 {
		t.Fatalf("Require on a GPU: device %d, skipped %q, errors %v", d, r.skipped, r.errors)
	}
	// Memory freed before cleanup: no failure.
	p, err := highlevel.Alloc(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	p.Free()
	r.cleanup()
	if len(r.errors) != 0 {
		t.Errorf("freed memory reported: %v", r.errors)
	}
	// Memory kept past cleanup: a failure naming the pool.
	r = run(t, func(tb testing.TB) { cudatest.Require(tb) })
	p, err = highlevel.Alloc(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	r.cleanup()
	p.Free()
	if len(r.errors) != 1 || !strings.Contains(r.errors[0], "default memory pool has 1048576 bytes in use, 0 at the start") {
		t.Errorf("kept memory gave %q", r.errors)
	}
}
