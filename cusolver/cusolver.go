// Package cusolver binds cuSOLVER.
package cusolver

//go:generate go run ../gen -headers ../headers/cuda-13.0 -use ../cudart,../cublas -out . -pkg cusolver -include cusolverDn.h,cusolver_common.h -prefix cusolverDn,cusolver,CUSOLVERDN_,CUSOLVER_ -error cusolverStatus_t -lib GOCUDA_CUSOLVER=libcusolver.so.12
