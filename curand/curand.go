// Package curand binds cuRAND.
package curand

//go:generate go run ../gen -headers ../headers/cuda-13.0 -use ../cudart -out . -pkg curand -include curand.h -prefix curand,CURAND_ -error curandStatus_t -lib GOCUDA_CURAND=libcurand.so.10
