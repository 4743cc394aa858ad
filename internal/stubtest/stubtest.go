// Package stubtest helps tests run a package against a stand-in library:
// it builds one from C source, runs the test's child process against it,
// and gives C function pointers into Go for the stand-in to call (the
// loggers that the libraries' logger registries take), which record what
// they are called with.
//
// A test cross-built for another architecture and run under an emulator
// (make test-arm64 runs linux/arm64's under qemu-user) builds its
// stand-ins with $CC, the compiler cgo used, and runs what it builds for the
// target, itself included, with Command, under the emulator that
// $GOCUDA_TEST_EXEC names.
package stubtest

/*
#include <stddef.h>

extern void gocudaStubtestBLASLogger(const char *msg);
extern void gocudaStubtestDriverLogger(void *data, int level, char *message, size_t length);
*/
import "C"

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
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
// temporary directory of its own, with the C compiler cgo uses ($CC, else
// cc) and the compiler flags given, and returns its path. It skips the test
// where there is no C compiler, and fails it where the compiler builds for
// another architecture than the test's.
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
	if out, err := CombinedOutput(func() *exec.Cmd { return exec.Command(cc, args...) }); err != nil {
		t.Skipf("no C compiler to build the stand-in %s: %v\n%s", file, err, out)
	}
	f, err := elf.Open(lib)
	if err != nil {
		t.Fatalf("the stand-in %s: %v", file, err)
	}
	defer f.Close()
	if want := machines[runtime.GOARCH]; f.Machine != want {
		t.Fatalf("%s built the stand-in %s for %v, and the test runs on %s (%v): set CC to a C compiler for %[4]s, the one that built the test",
			cc, file, f.Machine, runtime.GOARCH, want)
	}
	return lib
}

// machines are the ELF machines of the architectures the packages build for.
var machines = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

// ExecEnv names the emulator, with its arguments, that runs the programs
// built for the test's architecture, as go test -exec runs the test:
// qemu-aarch64 for tests cross-built for linux/arm64 (make test-arm64).
const ExecEnv = "GOCUDA_TEST_EXEC"

// Command returns a command that runs name, a program built for the test's
// architecture (the test binary, os.Args[0], or one built with $CC), with
// args: under the emulator $GOCUDA_TEST_EXEC names where it is set,
// directly otherwise.
func Command(name string, args ...string) *exec.Cmd {
	if x := strings.Fields(os.Getenv(ExecEnv)); len(x) > 0 {
		return exec.Command(x[0], append(append(x[1:], name), args...)...)
	}
	return exec.Command(name, args...)
}

// Run runs the command newCmd makes, as exec.Cmd's Run does. Under an
// emulator ($GOCUDA_TEST_EXEC), whose fork can leave the child hung before
// it runs its program (qemu-user's child waits for a lock that another of
// qemu's threads held at the fork: seen once, a child of curand's test), a
// child still running after hungAfter is killed and the command made and
// run again, three times at most: newCmd gives each try its own output.
func Run(newCmd func() *exec.Cmd) error {
	if os.Getenv(ExecEnv) == "" {
		return newCmd().Run()
	}
	for try := 1; ; try++ {
		cmd := newCmd()
		cmd.WaitDelay = time.Second // for the pipes, once it is killed
		if err := cmd.Start(); err != nil {
			return err
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		timer := time.NewTimer(hungAfter)
		select {
		case err := <-done:
			timer.Stop()
			return err
		case <-timer.C:
		}
		cmd.Process.Kill()
		err := <-done
		if try == 3 {
			return fmt.Errorf("%s: still running after %v, three times: %w", cmd.Path, hungAfter, err)
		}
	}
}

// CombinedOutput runs the command newCmd makes as Run does and returns its
// standard output and error, as exec.Cmd's CombinedOutput does: the last
// try's.
func CombinedOutput(newCmd func() *exec.Cmd) ([]byte, error) {
	var out bytes.Buffer
	err := Run(func() *exec.Cmd {
		cmd := newCmd()
		out.Reset()
		cmd.Stdout, cmd.Stderr = &out, &out
		return cmd
	})
	return out.Bytes(), err
}

// hungAfter is how long Run lets a child of an emulated test
// run: the children take seconds.
var hungAfter = 2 * time.Minute

// childEnv marks the process that Child runs.
const childEnv = "GOCUDA_STUBTEST_CHILD"

// Child runs the test binary's test named child with the environment
// variables env ("GOCUDA_CUDA=/tmp/.../libcuda.so.1", ...) added, and fails
// t unless child passes. The child test starts with SkipUnlessChild: it
// runs only this way, in its own process, because a package opens its
// library once per process.
func Child(t *testing.T, child string, env ...string) {
	t.Helper()
	out, err := CombinedOutput(func() *exec.Cmd {
		cmd := Command(os.Args[0], "-test.run=^"+child+"$", "-test.v")
		cmd.Env = append(append(os.Environ(), env...), childEnv+"=1")
		return cmd
	})
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
