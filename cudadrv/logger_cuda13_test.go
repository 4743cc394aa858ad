//go:build !cuda12

package cudadrv

import (
	"slices"
	"testing"

	"github.com/gocuda/cuda/internal/stubtest"
)

// stubLoggingDriver is a libcuda whose cuInit fails and logs why to the
// logger registered with cuLogsRegisterCallback before it returns, as the
// driver does with every failing call.
const stubLoggingDriver = `
#include <stddef.h>
#include <string.h>
typedef void (*logger)(void *data, int level, char *message, size_t length);
static logger registered;
static void *registeredData;
int cuLogsRegisterCallback(logger l, void *data, void **handle) {
	registered = l;
	registeredData = data;
	if (handle) *handle = (void *)1;
	return 0;
}
int cuInit(unsigned int flags) {
	static char msg[] = "cuInit: no device";
	if (registered) registered(registeredData, 0, msg, strlen(msg));
	return 100; /* CUDA_ERROR_NO_DEVICE */
}
`

// TestStubLogger runs TestStubLoggerChild against stubLoggingDriver: a Go
// logger called back from inside another driver call must be allowed to run
// (the call must not be marked #cgo nocallback). CUDA 12.6's headers have no
// cuLogsRegisterCallback, so the file builds for CUDA 13 only; gen's facts
// keep the cuda12 build's calls unmarked all the same.
func TestStubLogger(t *testing.T) {
	lib := stubtest.Library(t, "libcuda.so.1", stubLoggingDriver)
	stubtest.Child(t, "TestStubLoggerChild", "GOCUDA_CUDA="+lib)
}

// TestStubLoggerChild is TestStubLogger's child; it skips unless run by it.
func TestStubLoggerChild(t *testing.T) {
	stubtest.SkipUnlessChild(t, "TestStubLogger")
	var h LogsCallbackHandle
	if err := LogsRegisterCallback(LogsCallback(stubtest.DriverLogger()), nil, &h); err != nil || h == 0 {
		t.Fatalf("LogsRegisterCallback: handle %#x, %v", h, err)
	}
	if err := Init(0); err != ERROR_NO_DEVICE {
		t.Errorf("Init = %v, want ERROR_NO_DEVICE", err)
	}
	if got, want := stubtest.Messages(), []string{"cuInit: no device"}; !slices.Equal(got, want) {
		t.Errorf("the logger got %q, want %q", got, want)
	}
}
