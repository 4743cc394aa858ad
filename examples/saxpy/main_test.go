package main

import (
	"testing"

	"github.com/gocuda/cuda/highlevel"
	"github.com/gocuda/cuda/internal/gpuprobe"
)

func TestRun(t *testing.T) {
	for _, n := range []int{0, -1} {
		if err := run(0, n); err == nil {
			t.Errorf("n = %d accepted", n)
		}
	}
	gpuprobe.Require(t)
	devices, err := highlevel.DeviceCount()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []highlevel.Device{0, highlevel.Device(devices - 1)} {
		for _, n := range []int{1, 1000, 1 << 20} {
			if err := run(d, n); err != nil {
				t.Errorf("device %d, n = %d: %v", d, n, err)
			}
		}
	}
}
