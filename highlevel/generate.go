package highlevel

// The CUDA headers that shim.c and the cgo preambles include are those of
// the major the build binds: zcflags_*.go put them on the include path, and
// zversion_*_test.go names them for the tests' stand-ins (testHeaders).
//go:generate go run ../gen -pkg highlevel
