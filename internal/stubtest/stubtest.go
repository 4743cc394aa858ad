// Package stubtest helps tests run a package against a stand-in library:
// it builds one from C source, runs the test's child process against it,
// and gives C function pointers into Go for the stand-in to call (the
// loggers that the libraries' logger registries take), which record what
// they are called with.
package stubtest

/*
#include <stddef.h>

extern void gocudaStubtestBLASLogger(const char *msg);
extern void gocudaStubtestDriverLogger(void *data, int level, char *message, size_t length);
*/
import "C"

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unsafe"
)

var (
	mu       sync.Mutex
	messages []string
)

//export gocudaStubtestLog
func gocudaStubtestLog(msg *C.char, n C.size_t) {
	s := C.GoString(msg)
	if n > 0 {
		s = C.GoStringN(msg, C.int(n))
	}
	mu.Lock()
	messages = append(messages, s)
	mu.Unlock()
}

// BLASLogger returns a C function of cuBLAS's logger type
// (void (*)(const char *msg), as cublasSetLoggerCallback takes) that
// records its message.
func BLASLogger() uintptr {
	return uintptr(unsafe.Pointer(C.gocudaStubtestBLASLogger))
}

// DriverLogger returns a C function of the driver's logger type, CUlogsCallback
// (void (*)(void *data, CUlogLevel level, char *message, size_t length)), as
// cuLogsRegisterCallback takes, that records its message.
func DriverLogger() uintptr {
	return uintptr(unsafe.Pointer(C.gocudaStubtestDriverLogger))
}

// Messages returns the messages the loggers recorded, in order.
func Messages() []string {
	mu.Lock()
	defer mu.Unlock()
	return append([]string(nil), messages...)
}

// Library builds a shared library named file from the C source src in a
// temporary directory of its own, with the C compiler cgo uses and the
// compiler flags given, and returns its path. It skips the test where there
// is no C compiler.
func Library(t *testing.T, file, src string, flags ...string) string {
	t.Helper()
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	dir := t.TempDir()
	c, lib := filepath.Join(dir, "stub.c"), filepath.Join(dir, file)
	if err := os.WriteFile(c, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"-shared", "-fPIC", "-o", lib, c}, flags...)
	if out, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		t.Skipf("no C compiler to build the stand-in %s: %v\n%s", file, err, out)
	}
	return lib
}

// childEnv marks the process that Child runs.
const childEnv = "GOCUDA_STUBTEST_CHILD"

// Child runs the test binary's test named child with the environment
// variables env ("GOCUDA_CUDA=/tmp/.../libcuda.so.1", ...) added, and fails
// t unless child passes. The child test starts with SkipUnlessChild: it
// runs only this way, in its own process, because a package opens its
// library once per process.
func Child(t *testing.T, child string, env ...string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+child+"$", "-test.v")
	cmd.Env = append(append(os.Environ(), env...), childEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+child) {
		t.Errorf("%s with %s: %v\n%s", child, strings.Join(env, " "), err, out)
	}
}

// SkipUnlessChild skips the test unless Child runs it; parent names the
// test that does.
func SkipUnlessChild(t *testing.T, parent string) {
	t.Helper()
	if os.Getenv(childEnv) == "" {
		t.Skip("run by " + parent)
	}
}
