// Package bench holds Go benchmarks of the bindings and, beside them, their C
// twins (c/*.c), built with nvcc on the GPU machine by scripts/gpu.sh, so that
// both run in one session and can be compared as ratios.
package bench
