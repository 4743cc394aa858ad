package main

import (
	"slices"
	"testing"

	"github.com/gocuda/cuda/highlevel"
	"github.com/gocuda/cuda/internal/gpuprobe"
)

func TestMatMul(t *testing.T) {
	// [1 2; 3 4]·[5 6; 7 8]
	got := matMul([]float32{1, 2, 3, 4}, []float32{5, 6, 7, 8}, 2)
	if want := []float32{19, 22, 43, 50}; !slices.Equal(got, want) {
		t.Errorf("matMul = %v, want %v", got, want)
	}
}

func TestRun(t *testing.T) {
	for _, size := range []int{0, -1, maxSize + 1} {
		if err := run(0, size); err == nil {
			t.Errorf("size %d accepted", size)
		}
	}
	gpuprobe.Require(t)
	devices, err := highlevel.DeviceCount()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []highlevel.Device{0, highlevel.Device(devices - 1)} {
		for _, size := range []int{1, 33, 512} {
			if err := run(d, size); err != nil {
				t.Errorf("device %d, size %d: %v", d, size, err)
			}
		}
	}
}
