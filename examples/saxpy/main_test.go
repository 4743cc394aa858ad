package main

import (
	"testing"

	"github.com/gocuda/cuda/highlevel"
)

func TestRun(t *testing.T) {
	if err := run(0, 2); err == nil {
		t.Error("n = 0 accepted")
	}
	if !highlevel.IsAvailable() {
		t.Skip("no CUDA device")
	}
	for _, n := range []int{1, 1000, 1 << 20} {
		if err := run(n, 2); err != nil {
			t.Errorf("n = %d: %v", n, err)
		}
	}
}
