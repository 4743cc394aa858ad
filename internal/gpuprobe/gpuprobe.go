// Package gpuprobe tells a GPU test whether it can run. It asks the CUDA
// driver itself, libcuda.so.1 found as cudadrv finds it ($GOCUDA_CUDA, else
// the system loader's search, then WSL's directory), rather than the
// package under test, whose own failure to load or to initialize must fail
// its tests, not skip them.
//
// Require, which a GPU test calls first, skips the test where the machine
// has no GPU: libcuda.so.1 cannot be loaded (no driver is installed), or
// the driver reports no device (cuInit returns CUDA_ERROR_NO_DEVICE, or
// cuDeviceGetCount counts none). A driver that loads but fails otherwise
// (too old for the library, a broken installation) fails the test, with
// the driver's error: a skip would report a broken GPU machine as green.
// Where $GOCUDA_TEST_GPU is 1, a machine without a GPU fails the test as
// well: a machine that has one sets it (the GPU suite, scripts/gpu.sh,
// does where nvidia-smi or /dev/nvidia0 shows a GPU), so that no test
// there skips for want of one.
package gpuprobe

/*
typedef int (*gpuprobe_init_fn)(unsigned int);
typedef int (*gpuprobe_count_fn)(int *);
typedef int (*gpuprobe_error_name_fn)(int, const char **);

static int gpuprobe_init(void *f) { return ((gpuprobe_init_fn)f)(0); }
static int gpuprobe_count(void *f, int *n) { return ((gpuprobe_count_fn)f)(n); }

// gpuprobe_error_name returns the name that f, cuGetErrorName, gives the
// status r, or NULL where it has none.
static const char *gpuprobe_error_name(void *f, int r) {
	const char *s = 0;
	return ((gpuprobe_error_name_fn)f)(r, &s) == 0 ? s : 0;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/gocuda/cuda/internal/dl"
)

// Env is the environment variable that says the machine has a GPU: where
// it is 1, Require fails a test that finds none.
const Env = "GOCUDA_TEST_GPU"

// ErrNoGPU is matched by Probe's error where the machine has no GPU.
var ErrNoGPU = errors.New("no GPU")

// noDevice is CUDA_ERROR_NO_DEVICE, cuInit's status where the driver finds
// no device.
const noDevice = 100

var (
	probeOnce sync.Once
	probeErr  error
)

// Probe asks the driver, once per process, whether it has a device. It
// returns nil where it has, an error that matches ErrNoGPU where the
// machine has no GPU, and otherwise the driver's failure.
func Probe() error {
	probeOnce.Do(func() { probeErr = probe(dl.New("GOCUDA_CUDA", "libcuda.so.1")) })
	return probeErr
}

// probe asks the driver lib whether it has a device, as Probe does.
func probe(lib *dl.Library) error {
	if err := lib.Load(); err != nil {
		return fmt.Errorf("%w: %w", ErrNoGPU, err)
	}
	initFn, err := lib.Lookup("cuInit")
	if err != nil {
		return fmt.Errorf("the CUDA driver fails: %w", err)
	}
	countFn, err := lib.Lookup("cuDeviceGetCount")
	if err != nil {
		return fmt.Errorf("the CUDA driver fails: %w", err)
	}
	status := func(r C.int) string {
		if f, err := lib.Lookup("cuGetErrorName"); err == nil {
			if s := C.gpuprobe_error_name(f, r); s != nil {
				return fmt.Sprintf("%s (%d)", C.GoString(s), r)
			}
		}
		return fmt.Sprintf("status %d", r)
	}
	switch r := C.gpuprobe_init(initFn); r {
	case 0:
	case noDevice:
		return fmt.Errorf("%w: cuInit of %s: %s", ErrNoGPU, lib.Path(), status(r))
	default:
		return fmt.Errorf("the CUDA driver %s fails: cuInit: %s", lib.Path(), status(r))
	}
	var n C.int
	if r := C.gpuprobe_count(countFn, &n); r != 0 {
		return fmt.Errorf("the CUDA driver %s fails: cuDeviceGetCount: %s", lib.Path(), status(r))
	}
	if n <= 0 {
		return fmt.Errorf("%w: the CUDA driver %s counts %d devices", ErrNoGPU, lib.Path(), n)
	}
	return nil
}

// Require ends t unless the driver has a device: it skips t where the
// machine has no GPU, unless $GOCUDA_TEST_GPU is 1, and fails it otherwise.
func Require(t testing.TB) {
	t.Helper()
	err := Probe()
	switch {
	case err == nil:
	case !errors.Is(err, ErrNoGPU):
		t.Fatal(err)
	case os.Getenv(Env) == "1":
		t.Fatalf("$%s=1 says this machine has a GPU; %v", Env, err)
	default:
		t.Skip(err)
	}
}
