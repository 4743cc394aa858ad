package main

import (
	"testing"
	"time"

	"github.com/gocuda/cuda/highlevel"
	"github.com/gocuda/cuda/internal/gpuprobe"
)

func TestRun(t *testing.T) {
	if err := run(-1, 0, 2, time.Second); err == nil {
		t.Error("n = 0 accepted")
	}
	gpuprobe.Require(t)
	devices, err := highlevel.DeviceCount()
	if err != nil {
		t.Fatal(err)
	}
	for _, dev := range []int{-1, devices - 1} {
		for _, n := range []int{1, 1000, 1 << 20} {
			if err := run(dev, n, 2, time.Minute); err != nil {
				t.Errorf("device %d, n = %d: %v", dev, n, err)
			}
		}
	}
}
