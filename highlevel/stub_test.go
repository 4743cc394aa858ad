package highlevel

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/gocuda/cuda/cudadrv"
	"github.com/gocuda/cuda/cudart"
	"github.com/gocuda/cuda/highlevel/internal/driver"
	"github.com/gocuda/cuda/internal/dl"
	"github.com/gocuda/cuda/internal/stubtest"
	"github.com/gocuda/cuda/internal/testsrc"
)

// stubHeaders are the headers the stand-in driver is built with, and
// stubSources the directory of its sources, beside the shim whose
// functions it lists (zsymbols.h).
var (
	stubHeaders = testHeaders
	stubSources = filepath.Join("internal", "driver", "testdata")
)

// stubDriver builds the stand-in driver (stubdriver.c) as
// libcuda.so.1 with the compiler flags given, and returns its path.
func stubDriver(t *testing.T, flags ...string) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(stubSources, "stubdriver.c"))
	if err != nil {
		t.Fatal(err)
	}
	procs, err := filepath.Abs(filepath.Join(stubSources, "stubprocs.c"))
	if err != nil {
		t.Fatal(err)
	}
	flags = append(flags, "-I"+stubHeaders, "-I"+filepath.Dir(stubSources), procs)
	return stubtest.Library(t, "libcuda.so.1", string(src), flags...)
}

// A childCase is a check that runs on the stand-in driver in a child
// process of its own (runChildCases).
type childCase struct {
	name  string
	check func(t *testing.T)
}

// runChildCases runs each of cases in a child process, the test child,
// with the stand-in driver and libcudart unloadable; the child finds its
// case in $env (runChildCase).
func runChildCases(t *testing.T, child, env string, cases []childCase) {
	testsrc.Require(t, stubHeaders, stubSources)
	lib := stubDriver(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			stubtest.Child(t, child,
				"GOCUDA_CUDA="+lib,
				"GOCUDA_CUDART="+filepath.Join(dir, "no-libcudart.so"),
				env+"="+tc.name)
		})
	}
}

// runChildCase runs, in a child process of parent, the case of cases
// that $env names.
func runChildCase(t *testing.T, parent, env string, cases []childCase) {
	stubtest.SkipUnlessChild(t, parent)
	for _, tc := range cases {
		if tc.name == os.Getenv(env) {
			tc.check(t)
			return
		}
	}
	t.Fatalf("no case %q", os.Getenv(env))
}

// stubCases are the drivers TestStubDriver runs the package on, each in a
// child process (TestStubDriverChild) with libcudart unloadable, with what
// the child checks there.
var stubCases = []struct {
	name  string
	flags []string // to build the stand-in with
	env   []string
	check func(t *testing.T)
}{
	{"driver 12.2", nil, []string{"STUB_DRIVER_VERSION=12020"}, checkDriverOnly},
	{"CurrentDevice first", nil, nil, func(t *testing.T) {
		// cudaGetDevice initialized CUDA itself; cuCtxGetCurrent needs it
		// done. No context is current: device 0, as cudaGetDevice says.
		if d, err := CurrentDevice(); d != 0 || err != nil {
			t.Errorf("CurrentDevice = %v, %v; want device 0", d, err)
		}
	}},
	{"cuMemAlloc from CUDA 13.0 only", nil, []string{"STUB_LATE=cuMemAlloc=13000", "STUB_DRIVER_VERSION=13000"}, func(t *testing.T) {
		// A function the shim asks for at a version before the one that
		// introduced it: the driver (a CUDA 13.0 one, whatever the headers
		// the stand-in is built with) says so, and so does the error.
		var se *cudadrv.SymbolError
		_, err := DeviceCount()
		if !errors.As(err, &se) || se.Symbol != "cuMemAlloc" || se.Library != cudadrv.LibraryPath() ||
			!strings.Contains(se.Reason, "at CUDA 3.2") || !strings.Contains(se.Reason, "CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT") {
			t.Errorf("DeviceCount: %v, want a *cudadrv.SymbolError for cuMemAlloc at CUDA 3.2 in %s", err, cudadrv.LibraryPath())
		}
		checkMessage(t, "DeviceCount", err, "device count: loading CUDA: ")
	}},
	{"driver 11.8", nil, []string{"STUB_DRIVER_VERSION=11080"}, func(t *testing.T) {
		// A driver older than CUDA 12.0 lacks functions every operation
		// needs: the first is the error.
		checkDriverVersionError(t, second(DeviceCount()), "cuGraphInstantiateWithParams", 12000, 11080)
	}},
	{"no cuGetProcAddress_v2, driver 11.8", []string{"-DSTUB_NO_GET_PROC_ADDRESS"}, []string{"STUB_DRIVER_VERSION=11080"}, func(t *testing.T) {
		checkDriverVersionError(t, second(DeviceCount()), "cuGetProcAddress_v2", 12000, 11080)
	}},
	{"two devices", nil, []string{"STUB_DEVICES=2"}, func(t *testing.T) {
		// Each device's state (its context, name and limits) is made
		// where the others' are: the shim writes the context through
		// cgo, whose check of Go pointers must pass once device 0's name
		// is a Go string beside device 1's context.
		for d := range Device(2) {
			if _, err := d.Name(); err != nil {
				t.Errorf("%v.Name: %v", d, err)
			}
		}
	}},
	{"no device", nil, []string{"STUB_INIT=100"}, func(t *testing.T) {
		// A driver that reports no device (CUDA_ERROR_NO_DEVICE): no GPU,
		// as IsAvailable's documentation tells it from a failing driver.
		if _, err := DeviceCount(); IsAvailable() || !errors.Is(err, cudadrv.ERROR_NO_DEVICE) {
			t.Errorf("IsAvailable = %v, DeviceCount: %v; want false, CUDA_ERROR_NO_DEVICE", IsAvailable(), err)
		}
	}},
	{"cuInit fails", nil, []string{"STUB_INIT=999"}, func(t *testing.T) {
		// A driver that fails: neither a missing library nor no device.
		_, err := DeviceCount()
		if IsAvailable() || !errors.Is(err, cudadrv.ERROR_UNKNOWN) || errors.Is(err, cudadrv.ERROR_NO_DEVICE) || errors.As(err, new(*cudadrv.LibraryError)) {
			t.Errorf("IsAvailable = %v, DeviceCount: %v; want false, CUDA_ERROR_UNKNOWN", IsAvailable(), err)
		}
	}},
	{"devices of managed memory", nil, []string{"STUB_DEVICES=2"}, checkManagedDevices},
	{"staged copy while a capture begins", nil, []string{"STUB_COPY_US=20000"}, checkStagedCopyCapture},
	{"waits while others capture", nil, nil, checkWaitsCapture},
	{"destruction during copies on the legacy stream", nil, []string{"STUB_COPY_US=200"}, checkDestroyLegacyCopies},
	{"frees during a global capture", nil, nil, checkFreeGlobalCapture},
	{"releases in a host function", nil, nil, checkReleaseInCallback},
	{"stream-ordered memory dropped", nil, nil, checkAsyncDropped},
	{"borrows", nil, nil, checkBorrow},
	{"a graph holds freed memory", nil, nil, checkGraphHoldsFreed},
	{"stream calls in a host function", nil, nil, checkStreamInCallback},
	{"runtime.Goexit in a host function", nil, nil, checkGoexitInCallback},
	{"no cuGetProcAddress_v2", []string{"-DSTUB_NO_GET_PROC_ADDRESS"}, nil, func(t *testing.T) {
		var se *cudadrv.SymbolError
		if _, err := DeviceCount(); !errors.As(err, &se) || se.Symbol != "cuGetProcAddress_v2" || se.Library != cudadrv.LibraryPath() {
			t.Errorf("DeviceCount: %v, want a *cudadrv.SymbolError for cuGetProcAddress_v2 in %s", err, cudadrv.LibraryPath())
		}
	}},
}

// TestStubDriver runs the package on stand-in drivers, in child processes
// where libcudart cannot be loaded: on a CUDA 12.2 driver every operation
// but those that need a later one works, with entry points taken once each
// through cuGetProcAddress_v2 and none from libcudart; a function the
// driver has only from a later version than the shim asks for, a driver
// older than CUDA 12.0 and one without cuGetProcAddress_v2 are errors that
// say what was looked for, where, and which driver is needed; a driver
// without a device and one whose cuInit fails are told apart.
func TestStubDriver(t *testing.T) {
	testsrc.Require(t, stubHeaders, stubSources)
	libs := map[string]string{} // by flags
	for _, tc := range stubCases {
		if key := strings.Join(tc.flags, " "); libs[key] == "" {
			libs[key] = stubDriver(t, tc.flags...)
		}
	}
	for _, tc := range stubCases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			env := append([]string{
				"GOCUDA_CUDA=" + libs[strings.Join(tc.flags, " ")],
				"GOCUDA_CUDART=" + filepath.Join(dir, "no-libcudart.so"),
				"STUB_LOG=" + filepath.Join(dir, "requests"),
				"HL_STUB_CASE=" + tc.name,
			}, tc.env...)
			stubtest.Child(t, "TestStubDriverChild", env...)
		})
	}
}

func TestStubDriverChild(t *testing.T) {
	stubtest.SkipUnlessChild(t, "TestStubDriver")
	for _, tc := range stubCases {
		if tc.name == os.Getenv("HL_STUB_CASE") {
			tc.check(t)
			if cudart.LibraryPath() != "" {
				t.Errorf("libcudart was loaded, from %s", cudart.LibraryPath())
			}
			return
		}
	}
	t.Fatalf("no case %q", os.Getenv("HL_STUB_CASE"))
}

// checkDriverVersionError checks that err is a *DriverVersionError for
// function, which needs CUDA version needed, on a driver of version driver.
func checkDriverVersionError(t *testing.T, err error, function string, needed, driver int) {
	t.Helper()
	var dv *DriverVersionError
	if !errors.As(err, &dv) || *dv != (DriverVersionError{function, needed, driver}) {
		t.Errorf("%v, want a *DriverVersionError for %s, CUDA %d, driver %d", err, function, needed, driver)
	}
	if !errors.Is(err, errCallRequiresNewerDriver) || !errors.Is(err, cudart.ErrorCallRequiresNewerDriver) {
		t.Errorf("%v does not match CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER and cudaErrorCallRequiresNewerDriver", err)
	}
	want := fmt.Sprintf("%s needs a driver for CUDA %s or newer; the installed driver supports CUDA %s",
		function, cudaVersion(needed), cudaVersion(driver))
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("%v, want it to say %q", err, want)
	}
}

// checkDoRestoring checks DoRestoring on the locked thread, whose context
// is d's, ctx: it makes one cgo call there, leaves d's on a thread that had
// none, puts back another device's, and puts back d's where fn failed or
// panicked leaving another current (the stand-in takes any pointer for a
// context: one past d's, C memory as a context is).
func checkDoRestoring(t *testing.T, d Device, ctx unsafe.Pointer) {
	t.Helper()
	cgo := runtime.NumCgoCall()
	var in driver.Ctx
	d.DoRestoring(func() error { in = driver.CtxSwap(ctx); return nil })
	if n := runtime.NumCgoCall() - cgo; n != 2 || in.Ctx != ctx {
		t.Errorf("DoRestoring with d's context current made %d cgo calls (fn's included), want 2; d's current in fn: %v", n, in.Ctx == ctx)
	}
	other := unsafe.Add(ctx, 1)
	for _, tc := range []struct {
		name       string
		prev, want unsafe.Pointer
	}{
		{"a thread with no context", nil, ctx},
		{"a thread with another device's context", other, other},
	} {
		driver.CtxSet(tc.prev)
		d.DoRestoring(func() error { in = driver.CtxSwap(ctx); return nil })
		if in.Ctx != ctx {
			t.Errorf("%s: DoRestoring's fn ran with %p current, want d's, %p", tc.name, in.Ctx, ctx)
		}
		if cur := driver.CtxSwap(ctx); cur.Ctx != tc.want {
			t.Errorf("%s: context after DoRestoring %p, want %p", tc.name, cur.Ctx, tc.want)
		}
	}
	// An fn that fails or panics may not have put the device back (an NCCL
	// group whose launch failed does not): the thread's context is.
	errFn := errors.New("fn failed")
	for _, tc := range []struct {
		name string
		fn   func() error
	}{
		{"failed", func() error { driver.CtxSet(other); return errFn }},
		{"panicked", func() error { driver.CtxSet(other); panic(errFn) }},
	} {
		func() {
			defer func() {
				if r := recover(); r != nil && r != errFn {
					panic(r)
				}
			}()
			if err := d.DoRestoring(tc.fn); err != errFn {
				t.Errorf("%s: DoRestoring = %v, want fn's error", tc.name, err)
			}
		}()
		if cur := driver.CtxSwap(ctx); cur.Ctx != ctx {
			t.Errorf("DoRestoring whose fn %s leaving another context current: %p after it, want d's, %p", tc.name, cur.Ctx, ctx)
		}
	}
}

// checkDriverOnly uses the package on a CUDA 12.2 driver without libcudart:
// what needs the driver works, Module.Kernel needs CUDA 12.4 and says so,
// and what needs libcudart says that; every function of the shim was asked
// for once, at its version, and nothing else.
func checkDriverOnly(t *testing.T) {
	if v, err := DriverVersion(); v != 12020 || err != nil {
		t.Errorf("DriverVersion = %d, %v; want 12020", v, err)
	}
	d := Device(0)
	if name, err := d.Name(); name != "stub" || err != nil {
		t.Errorf("Name = %q, %v", name, err)
	}
	if cc, err := d.ComputeCapability(); cc != "90" || err != nil {
		t.Errorf("ComputeCapability = %q, %v", cc, err)
	}
	if w, err := d.Attribute(DeviceWarpSize); w != 32 || err != nil {
		t.Errorf("warp size = %d, %v", w, err)
	}
	if _, err := Device(1).Name(); !errors.Is(err, cudart.ErrorInvalidDevice) || !errors.Is(err, cudadrv.ERROR_INVALID_DEVICE) {
		t.Errorf("Device(1).Name: %v, want CUDA_ERROR_INVALID_DEVICE, which is cudaErrorInvalidDevice", err)
	}
	if err := d.Do(func() error {
		if cur, err := CurrentDevice(); cur != d || err != nil {
			t.Errorf("CurrentDevice in Do = %v, %v", cur, err)
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
	// A thread with no context is left with d's after Do, also when fn
	// unset it; the next Do there makes two cgo calls, which switch
	// nothing.
	runtime.LockOSThread()
	ctx, err := d.context()
	if err != nil {
		t.Fatal(err)
	}
	driver.CtxSet(nil)
	d.Do(func() error { return nil })
	if cur := driver.CtxSwap(ctx); cur.Ctx != ctx {
		t.Errorf("context after Do on a thread with none: %p, want d's, %p", cur.Ctx, ctx)
	}
	d.Do(func() error { driver.CtxSet(nil); return nil })
	if cur := driver.CtxSwap(ctx); cur.Ctx != ctx {
		t.Errorf("context after a Do whose fn unset it: %p, want d's, %p", cur.Ctx, ctx)
	}
	cgo := runtime.NumCgoCall()
	d.Do(func() error { return nil })
	if n := runtime.NumCgoCall() - cgo; n != 2 {
		t.Errorf("Do with its context current made %d cgo calls, want 2", n)
	}
	checkDoRestoring(t, d, ctx)
	runtime.UnlockOSThread()
	s, err := NewStream(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := d.Alloc(1 << 10)
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewEvent(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range []struct {
		name string
		err  error
	}{
		{"MemsetAsync", m.MemsetAsync(s, 0, 1<<10)},
		{"CopyFromDeviceAsync", m.CopyFromDeviceAsync(s, m, 1<<10)},
		{"Record", e.Record(s)},
		{"Stream.Synchronize", s.Synchronize()},
		{"Event.Close", e.Close()},
		{"Free", m.Memory().free()},
		{"Stream.Close", s.Close()},
	} {
		if op.err != nil {
			t.Errorf("%s: %v", op.name, op.err)
		}
	}

	mod, err := LoadModule([]byte("stub image"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = mod.Kernel("axpy")
	checkDriverVersionError(t, err, "cuKernelGetParamInfo", 12040, 12020)
	checkMessage(t, "Kernel", err, "kernel \"axpy\": cuKernelGetParamInfo needs")
	if err := mod.Close(); err != nil {
		t.Error(err)
	}

	var le *dl.LibraryError
	if _, err := d.Properties(); !errors.As(err, &le) || !strings.Contains(err.Error(), "cudaGetDeviceProperties needs the CUDA runtime, libcudart: ") {
		t.Errorf("Properties: %v, want a *LibraryError that says libcudart is needed", err)
	}
	if _, err := RuntimeVersion(); !errors.As(err, &le) {
		t.Errorf("RuntimeVersion: %v, want a *LibraryError", err)
	}

	// Each of the shim's functions was asked for once, at its version,
	// with the legacy default stream (CU_GET_PROC_ADDRESS_LEGACY_STREAM),
	// and nothing else was.
	want := map[string]bool{}
	for _, sym := range shimSymbols() {
		want[fmt.Sprintf("%s %d %d", sym.name, sym.version, cudadrv.GET_PROC_ADDRESS_LEGACY_STREAM)] = true
	}
	f, err := os.Open(os.Getenv("STUB_LOG"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seen := map[string]bool{}
	for sc := bufio.NewScanner(f); sc.Scan(); {
		req := sc.Text()
		if !want[req] || seen[req] {
			t.Errorf("cuGetProcAddress_v2 asked for %q: not one of the shim's functions, or again", req)
		}
		seen[req] = true
	}
	if len(seen) != len(want) {
		t.Errorf("%d of the shim's %d functions asked for", len(seen), len(want))
	}
}
