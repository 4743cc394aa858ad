package gpuprobe

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gocuda/cuda/internal/stubtest"
)

// stubDriver is a stand-in libcuda.so.1: cuInit returns $STUB_INIT, and
// cuDeviceGetCount returns $STUB_COUNT and counts $STUB_DEVICES (1 where
// unset). Built with -DSTUB_NO_INIT it lacks cuInit, with
// -DSTUB_NO_ERROR_NAME cuGetErrorName.
const stubDriver = `#include <stdlib.h>

static int env(const char *name, int unset) {
	const char *v = getenv(name);
	return v != NULL ? atoi(v) : unset;
}
#ifndef STUB_NO_INIT
int cuInit(unsigned int flags) { return flags == 0 ? env("STUB_INIT", 0) : 1; }
#endif
int cuDeviceGetCount(int *n) {
	*n = env("STUB_DEVICES", 1);
	return env("STUB_COUNT", 0);
}
#ifndef STUB_NO_ERROR_NAME
int cuGetErrorName(int r, const char **s) {
	switch (r) {
	case 3: *s = "CUDA_ERROR_NOT_INITIALIZED"; return 0;
	case 100: *s = "CUDA_ERROR_NO_DEVICE"; return 0;
	case 999: *s = "CUDA_ERROR_UNKNOWN"; return 0;
	}
	return 1;
}
#endif
`

// childEnv marks the process that TestRequire runs TestRequireChild in.
const childEnv = "GPUPROBE_TEST_CHILD"

// TestRequire runs Require, each time in a process of its own, on each
// outcome of the driver (none installed, no device, a failure, a device),
// with $GOCUDA_TEST_GPU unset and set to 1: it skips where the machine has
// no GPU and the variable does not say it has one, fails where the driver
// fails or the variable is contradicted, and lets the test run where the
// driver has a device.
func TestRequire(t *testing.T) {
	driver := stubtest.Library(t, "libcuda.so.1", stubDriver)
	noInit := stubtest.Library(t, "libcuda.so.1", stubDriver, "-DSTUB_NO_INIT")
	noName := stubtest.Library(t, "libcuda.so.1", stubDriver, "-DSTUB_NO_ERROR_NAME")
	missing := filepath.Join(t.TempDir(), "libcuda.so.1")
	said := Env + "=1" // the machine has a GPU
	const contradicted = "$GOCUDA_TEST_GPU=1 says this machine has a GPU; no GPU: "
	for _, tc := range []struct {
		name string
		lib  string   // $GOCUDA_CUDA
		env  []string // added
		end  string   // how the child ends: PASS, SKIP or FAIL
		msg  string   // in the child's output
	}{
		{"no libcuda", missing, nil, "SKIP", "no GPU: cannot load libcuda.so.1 from $GOCUDA_CUDA: " + missing},
		{"no libcuda, a GPU said", missing, []string{said}, "FAIL", contradicted + "cannot load libcuda.so.1"},
		{"no device", driver, []string{"STUB_INIT=100"}, "SKIP", "no GPU: cuInit of " + driver + ": CUDA_ERROR_NO_DEVICE (100)"},
		{"no device, a GPU said", driver, []string{"STUB_INIT=100", said}, "FAIL", contradicted + "cuInit of " + driver},
		{"no device counted", driver, []string{"STUB_DEVICES=0"}, "SKIP", "no GPU: the CUDA driver " + driver + " counts 0 devices"},
		{"no device counted, a GPU said", driver, []string{"STUB_DEVICES=0", said}, "FAIL", contradicted + "the CUDA driver"},
		{"cuInit fails", driver, []string{"STUB_INIT=999"}, "FAIL", "the CUDA driver " + driver + " fails: cuInit: CUDA_ERROR_UNKNOWN (999)"},
		{"cuInit fails, a GPU said", driver, []string{"STUB_INIT=999", said}, "FAIL", "fails: cuInit: CUDA_ERROR_UNKNOWN (999)"},
		{"cuDeviceGetCount fails", driver, []string{"STUB_COUNT=3"}, "FAIL", "fails: cuDeviceGetCount: CUDA_ERROR_NOT_INITIALIZED (3)"},
		{"no cuInit", noInit, nil, "FAIL", "the CUDA driver fails: " + noInit + ": symbol cuInit not found"},
		{"no cuGetErrorName", noName, []string{"STUB_INIT=999"}, "FAIL", "fails: cuInit: status 999"},
		{"a device", driver, nil, "PASS", "the test ran"},
		{"two devices, a GPU said", driver, []string{"STUB_DEVICES=2", said}, "PASS", "the test ran"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := stubtest.CombinedOutput(func() *exec.Cmd {
				cmd := stubtest.Command(os.Args[0], "-test.run=^TestRequireChild$", "-test.v")
				cmd.Env = append(os.Environ(), "GOCUDA_CUDA="+tc.lib, childEnv+"=1", Env+"=")
				cmd.Env = append(cmd.Env, tc.env...)
				return cmd
			})
			if !strings.Contains(string(out), "--- "+tc.end+": TestRequireChild") || !strings.Contains(string(out), tc.msg) ||
				(err != nil) != (tc.end == "FAIL") {
				t.Errorf("with %s: %v; want %s with %q:\n%s", strings.Join(tc.env, " "), err, tc.end, tc.msg, out)
			}
		})
	}
}

func TestRequireChild(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("run by TestRequire")
	}
	Require(t)
	t.Log("the test ran")
}
