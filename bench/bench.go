// Package bench holds Go benchmarks of the bindings and, beside them, their C
// twins (c/*.c), built with nvcc on the GPU machine by scripts/gpu.sh, so that
// both run in one session and can be compared as ratios.
//
// Without a GPU, TestStubMix runs the mix benchmarks (mix_test.go) on a stub
// of libcuda, libcudart and libnvrtc that returns at once
// (testdata/stubcuda.c), so that what they measure is highlevel's side of
// each operation: its checks, its bookkeeping and the cgo call; it logs
// the C twin's times on the same stub beside them. To profile it:
//
//	go -C bench test -run TestStubMix -v -args -stub.args='-test.count=6 -test.cpuprofile=/tmp/cpu.out'
package bench

// The stub is built with the headers of the major the build binds
// (testHeaders, in zversion_*_test.go).
//go:generate go run github.com/gocuda/cuda/gen -pkg bench
