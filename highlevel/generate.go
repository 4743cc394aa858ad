package highlevel

// zversion_*_test.go names the CUDA headers of the major the build binds,
// for the tests' stand-in drivers (testHeaders).
//go:generate go run ../gen -pkg highlevel
