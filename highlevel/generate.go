package highlevel

// zversion_*_test.go names the CUDA headers of the major the build binds,
// for the tests' stand-in drivers (testHeaders).
//go:generate go run ../gen -pkg highlevel

// zstring.go holds the String methods of the package's enumerations: a
// constant's line comment, or else its name.
//go:generate go run golang.org/x/tools/cmd/stringer -type=Advice,CaptureMode,DeviceAttribute,KernelAttribute -linecomment -output=zstring.go
