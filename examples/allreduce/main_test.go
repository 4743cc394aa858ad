package main

import (
	"os"
	"testing"
	"time"

	"github.com/gocuda/cuda/highlevel"
	"github.com/gocuda/cuda/internal/gpuprobe"
	"github.com/gocuda/cuda/nccl"
)

func TestRun(t *testing.T) {
	for _, c := range []struct{ n, iters int }{{0, 1}, {1, 0}, {-1, 1}} {
		if err := run(c.n, c.iters, time.Second, os.Stdout); err == nil {
			t.Errorf("-n %d -iters %d accepted", c.n, c.iters)
		}
	}
	gpuprobe.Require(t)
	if err := nccl.Load(); err != nil {
		t.Skipf("no NCCL: %v", err)
	}
	if n, err := highlevel.DeviceCount(); err != nil || n < 2 {
		t.Skipf("needs 2 GPUs: %d, %v", n, err)
	}
	t.Setenv("WORLD_SIZE", "") // one process, whatever the environment says
	os.Unsetenv("WORLD_SIZE")
	for _, n := range []int{1, 1003, 1 << 20} {
		if err := run(n, 3, time.Minute, os.Stdout); err != nil {
			t.Errorf("n = %d: %v", n, err)
		}
	}
}
