// Package cufft binds cuFFT.
package cufft

//go:generate go run ../gen -headers ../headers/cuda-13.0 -use ../cudart -out . -pkg cufft -include cufft.h -prefix cufft,CUFFT_ -error cufftResult -lib GOCUDA_CUFFT=libcufft.so.12
