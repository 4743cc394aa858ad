// Package cublas binds cuBLAS.
package cublas

//go:generate go run ../gen -headers ../headers/cuda-13.0 -use ../cudart -out . -pkg cublas -include cublas_v2.h,cublas_api.h -prefix cublas,CUBLAS_ -error cublasStatus_t -lib GOCUDA_CUBLAS=libcublas.so.13
