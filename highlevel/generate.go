package highlevel

// The CUDA headers that shim.c and the cgo preambles include are those of
// the major the build binds: zcflags_*.go put them on the include path.
//go:generate go run ../gen -pkg highlevel -cflags
