// Package cublaslt binds cuBLASLt.
package cublaslt

//go:generate go run ../gen -headers ../headers/cuda-13.0 -use ../cudart,../cublas -out . -pkg cublaslt -include cublasLt.h -prefix cublasLt,CUBLASLT_ -error cublasStatus_t -lib GOCUDA_CUBLASLT=libcublasLt.so.13
