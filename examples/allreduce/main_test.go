package main

import (
	"testing"

	"github.com/gocuda/cuda/internal/gpuprobe"
	"github.com/gocuda/cuda/nccl"
)

func TestRun(t *testing.T) {
	for _, n := range []int{0, -1} {
		if err := run(n); err == nil {
			t.Errorf("n = %d accepted", n)
		}
	}
	gpuprobe.Require(t)
	if err := nccl.Load(); err != nil {
		t.Skipf("no NCCL: %v", err)
	}
	// Every GPU of the machine, one rank each; one GPU is a world of one.
	for _, n := range []int{1, 1003, 1 << 20} {
		if err := run(n); err != nil {
			t.Errorf("n = %d: %v", n, err)
		}
	}
}
