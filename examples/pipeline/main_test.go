package main

import (
	"testing"

	"github.com/gocuda/cuda/highlevel"
	"github.com/gocuda/cuda/internal/gpuprobe"
)

func TestRun(t *testing.T) {
	gpuprobe.Require(t)
	devices, err := highlevel.DeviceCount()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []highlevel.Device{0, highlevel.Device(devices - 1)} {
		for _, c := range []struct{ chunks, n int }{{1, 1}, {3, 1000}, {16, 1 << 20}} {
			if err := run(d, c.chunks, c.n); err != nil {
				t.Errorf("device %d, %d chunks of %d: %v", d, c.chunks, c.n, err)
			}
		}
	}
}
