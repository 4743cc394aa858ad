//go:build !cuda12

package linalg

// stubHeaders are the headers the stand-in libraries are built with: those
// of the CUDA major the packages bind.
const stubHeaders = "../../headers/cuda-13.0"
