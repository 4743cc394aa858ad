// Package base stands for an already generated package, such as cudart,
// whose types the import case references. Only its //go:generate line is
// read.
package base

//go:generate go run ../../gen -headers .. -out . -pkg base -include base.h -prefix cuda,CUDA_ -error cudaError_t -lib GOCUDA_BASE=libbase.so.1
