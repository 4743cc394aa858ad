package cudart

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/gocuda/cuda/internal/dl"
	"github.com/gocuda/cuda/internal/stubtest"
)

// standInRuntime is a libcudart whose cudaGetDeviceCount answers STATUS and
// whose cudaDriverGetVersion asks libcuda.so.1, or answers 0 (no driver)
// without DRIVER.
const standInRuntime = `
#ifdef DRIVER
extern int cuDriverGetVersion(int *);
#endif
static int last;
int cudaGetDeviceCount(int *n) { *n = STATUS == 0; last = STATUS; return STATUS; }
int cudaGetDevice(int *d) { *d = 0; last = STATUS; return STATUS; }
int cudaGetLastError(void) { int e = last; last = 0; return e; }
int cudaRuntimeGetVersion(int *v) { *v = VERSION; return 0; }
int cudaDriverGetVersion(int *v) {
	*v = 0;
#ifdef DRIVER
	if (cuDriverGetVersion(v) != 0) *v = 0;
#endif
	return 0;
}
`

// standInDriver is a libcuda.so.1 whose cuDriverGetVersion answers
// oldDriver.
const standInDriver = "int cuDriverGetVersion(int *v) { *v = OLD; return 0; }\n"

// oldDriver is the CUDA version of the stand-in driver: x.4 of the major
// before the headers' (12.4, driver 550, for CUDA 13).
const oldDriver = (VERSION/1000-1)*1000 + 40

// otherMajor is the CUDA version of a stand-in runtime of the major before
// the headers' (12.6 for CUDA 13).
const otherMajor = (VERSION/1000-1)*1000 + 60

// TestDriverVersionError runs TestDriverVersionChild with stand-in runtimes
// of the headers' version: one that finds the driver (a stand-in of
// oldDriver) too old, one that finds none, one that finds no device and one
// that works.
func TestDriverVersionError(t *testing.T) {
	driver := stubtest.Library(t, "libcuda.so.1", standInDriver, "-Wl,-soname,libcuda.so.1", "-DOLD="+strconv.Itoa(oldDriver))
	for _, tc := range []struct{ name, status string }{{"old", "35"}, {"none", "35"}, {"nodevice", "100"}, {"ok", "0"}, {"othermajor", "0"}} {
		t.Run(tc.name, func(t *testing.T) {
			v := VERSION
			if tc.name == "othermajor" {
				v = otherMajor
			}
			flags := []string{"-DSTATUS=" + tc.status, "-DVERSION=" + strconv.Itoa(v)}
			if tc.name != "none" {
				flags = append(flags, "-DDRIVER", driver, "-Wl,--disable-new-dtags,-rpath,"+filepath.Dir(driver))
			}
			rt := stubtest.Library(t, testLibrary, standInRuntime, flags...)
			stubtest.Child(t, "TestDriverVersionChild", "GOCUDA_CUDART="+rt, "GOCUDA_DRIVER_CASE="+tc.name)
		})
	}
}

// TestDriverVersionChild is TestDriverVersionError's child; it skips unless
// run by it.
func TestDriverVersionChild(t *testing.T) {
	tc := os.Getenv("GOCUDA_DRIVER_CASE")
	if tc == "" {
		t.Skip("run by TestDriverVersionError")
	}
	if tc == "nodevice" {
		// The check, run before this first call, finds no device: that
		// error is not the program's.
		if err := GetLastError(); err != nil {
			t.Errorf("GetLastError as the first call = %v, want nil", err)
		}
	}
	var d int32
	err := GetDevice(&d)
	switch tc {
	case "old", "none":
		var dv *DriverVersionError
		if !errors.As(err, &dv) {
			t.Fatalf("GetDevice error = %v, want a *DriverVersionError", err)
		}
		want := DriverVersionError{Runtime: VERSION, Needed: dl.MinDriver, Found: oldDriver}
		text := "cudaErrorInsufficientDriver: CUDA " + testCUDA + " needs NVIDIA driver " + want.Needed + " or newer; the installed driver supports CUDA " + strconv.Itoa(VERSION/1000-1) + ".4 only"
		if tc == "none" {
			want.Found = 0
			text = "cudaErrorInsufficientDriver: CUDA " + testCUDA + " needs NVIDIA driver " + want.Needed + " or newer; no NVIDIA driver was found (libcuda.so.1)"
		}
		if want.Needed == "" {
			t.Errorf("no driver release for CUDA %d (the driver line of its data file, headers/cuda*.txt)", VERSION/1000)
		}
		if *dv != want || err.Error() != text {
			t.Errorf("GetDevice error = %+v %q, want %+v %q", *dv, err, want, text)
		}
		var e Error
		if !errors.Is(err, ErrorInsufficientDriver) || !errors.As(err, &e) || e != ErrorInsufficientDriver {
			t.Errorf("errors.Is/As(%v, ErrorInsufficientDriver) fail", err)
		}
		if err := Load(); err != error(dv) {
			t.Errorf("Load() = %v, want the same error", err)
		}
		if LibraryPath() != os.Getenv("GOCUDA_CUDART") {
			t.Errorf("LibraryPath() = %q, want the stand-in: the library is open", LibraryPath())
		}
		// The versions work without a driver.
		var v int32
		if err := DriverGetVersion(&v); err != nil || v != int32(want.Found) {
			t.Errorf("DriverGetVersion = %d, %v; want %d", v, err, want.Found)
		}
		if err := RuntimeGetVersion(&v); err != nil || v != VERSION {
			t.Errorf("RuntimeGetVersion = %d, %v; want %d", v, err, VERSION)
		}
	case "nodevice":
		if err != ErrorNoDevice {
			t.Errorf("GetDevice error = %v, want ErrorNoDevice, as the runtime answered", err)
		}
		if err := GetLastError(); err != ErrorNoDevice {
			t.Errorf("GetLastError = %v, want the program's own call's error, ErrorNoDevice", err)
		}
		if err := GetLastError(); err != nil {
			t.Errorf("GetLastError again = %v, want nil: the check's error was cleared", err)
		}
	case "ok":
		if err != nil || Load() != nil {
			t.Errorf("GetDevice = %v, Load = %v; want nil", err, Load())
		}
	case "othermajor":
		// $GOCUDA_CUDART named a runtime of another major: refused, but
		// for the versions.
		var me *MajorError
		found := strconv.Itoa(VERSION/1000-1) + ".6"
		if !errors.As(err, &me) || me.Found != found || me.Want != VERSION/1000 || me.Path != os.Getenv("GOCUDA_CUDART") {
			t.Fatalf("GetDevice error = %v, want a *MajorError: CUDA %s at the stand-in, built for %d", err, found, VERSION/1000)
		}
		if err := Load(); err != error(me) {
			t.Errorf("Load() = %v, want the same error", err)
		}
		var v int32
		if err := RuntimeGetVersion(&v); err != nil || v != otherMajor {
			t.Errorf("RuntimeGetVersion = %d, %v; want %d", v, err, otherMajor)
		}
	default:
		t.Fatal(fmt.Sprintf("unknown case %q", tc))
	}
}
