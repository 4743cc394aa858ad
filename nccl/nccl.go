// Package nccl binds NCCL.
package nccl

//go:generate go run ../gen -headers ../headers/nccl-2.28.3 -I ../headers/cuda-13.0 -use ../cudart -out . -pkg nccl -include nccl.h -prefix nccl,NCCL_ -omit pnccl -error ncclResult_t -lib GOCUDA_NCCL=libnccl.so.2
