package highlevel

import (
	"errors"

	"github.com/gocuda/cuda/highlevel/internal/driver"
)

// ProfilerStart starts the profiler attached to the process (Nsight
// Systems, Nsight Compute with --profile-from-start off) collecting
// (cuProfilerStart). Without a profiler it does nothing.
func ProfilerStart() error { return profiler(true) }

// ProfilerStop stops the collection that ProfilerStart started.
func ProfilerStop() error { return profiler(false) }

func profiler(start bool) error {
	d, err := DefaultDevice()
	if err != nil {
		return err
	}
	ctx, err := d.context()
	if err != nil {
		return err
	}
	op := "cuProfilerStop"
	if start {
		op = "cuProfilerStart"
	}
	return check(op, driver.Profiler(ctx, cbool(start)))
}

// Profile runs fn with the profiler collecting, and stops it also when fn
// panics: CuPy's cupyx.profiler.profile. It returns fn's error joined with
// the profiler's. It is a convenience over ProfilerStart and ProfilerStop.
func Profile(fn func() error) (err error) {
	if err := ProfilerStart(); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, ProfilerStop()) }()
	return fn()
}
