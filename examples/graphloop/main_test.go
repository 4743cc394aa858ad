package main

import (
	"testing"

	"github.com/gocuda/cuda/internal/gpuprobe"
)

func TestRun(t *testing.T) {
	gpuprobe.Require(t)
	for _, n := range []int{1, 1000, 1 << 20} {
		if err := run(n); err != nil {
			t.Errorf("n = %d: %v", n, err)
		}
	}
}
