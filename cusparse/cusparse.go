// Package cusparse binds cuSPARSE.
package cusparse

//go:generate go run ../gen -headers ../headers/cuda-13.0 -use ../cudart -out . -pkg cusparse -include cusparse.h -prefix cusparse,CUSPARSE_ -error cusparseStatus_t -lib GOCUDA_CUSPARSE=libcusparse.so.12
