package cudart

import (
	"bytes"
	"crypto/rand"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/gocuda/cuda/internal/gpuprobe"
)

// requireGPU ends the test as gpuprobe.Require does where the driver has no
// device or fails, skips it where libcudart does not load, and fails it
// where the runtime finds no device on a driver that has one.
func requireGPU(t testing.TB) {
	t.Helper()
	gpuprobe.Require(t)
	if err := Load(); err != nil {
		t.Skipf("no CUDA runtime: %v", err)
	}
	var n int32
	if err := GetDeviceCount(&n); err != nil || n == 0 {
		t.Fatalf("GetDeviceCount = %d, %v, where the driver has a device", n, err)
	}
}

func check(t testing.TB, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func TestGPUDeviceCount(t *testing.T) {
	requireGPU(t)
	var n int32
	check(t, "GetDeviceCount", GetDeviceCount(&n))
	out, err := exec.Command("nvidia-smi", "--query-gpu=name", "--format=csv,noheader").Output()
	if err != nil {
		t.Skipf("nvidia-smi: %v", err)
	}
	if want := len(strings.Split(strings.TrimSpace(string(out)), "\n")); int(n) != want {
		t.Errorf("GetDeviceCount = %d, nvidia-smi lists %d", n, want)
	}
}

func TestGPUDeviceProperties(t *testing.T) {
	requireGPU(t)
	var p DeviceProp
	check(t, "GetDeviceProperties", GetDeviceProperties(&p, 0))
	name := string(p.Name[:bytes.IndexByte(p.Name[:], 0)])
	t.Logf("device 0: %s, %d MiB, compute capability %d.%d", name, p.TotalGlobalMem>>20, p.Major, p.Minor)
	out, err := exec.Command("nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader,nounits", "-i", "0").Output()
	if err != nil {
		t.Skipf("nvidia-smi: %v", err)
	}
	fields := strings.Split(strings.TrimSpace(string(out)), ", ")
	if len(fields) != 2 {
		t.Fatalf("nvidia-smi printed %q", out)
	}
	if name != fields[0] {
		t.Errorf("name %q, nvidia-smi %q", name, fields[0])
	}
	mib, err := strconv.ParseUint(fields[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	// nvidia-smi counts memory the driver reserves; CUDA reports what it can use.
	if got := p.TotalGlobalMem >> 20; got > mib || got < mib*95/100 {
		t.Errorf("total memory %d MiB, nvidia-smi %d MiB", got, mib)
	}
	if p.Major < 1 || p.MultiProcessorCount < 1 || p.WarpSize != 32 {
		t.Errorf("implausible properties: cc %d.%d, %d SMs, warp %d", p.Major, p.Minor, p.MultiProcessorCount, p.WarpSize)
	}
}

func TestGPUMemoryRoundTrip(t *testing.T) {
	requireGPU(t)
	const n = 64 << 20
	src := make([]byte, n)
	if _, err := rand.Read(src); err != nil {
		t.Fatal(err)
	}
	var d unsafe.Pointer
	check(t, "Malloc", Malloc(&d, n))
	defer func() { check(t, "Free", Free(d)) }()
	check(t, "Memcpy to device", Memcpy(d, unsafe.Pointer(&src[0]), n, MemcpyHostToDevice))
	dst := make([]byte, n)
	check(t, "Memcpy to host", Memcpy(unsafe.Pointer(&dst[0]), d, n, MemcpyDeviceToHost))
	if !bytes.Equal(src, dst) {
		t.Fatal("bytes read back differ from those written")
	}
	// Memset the middle half and read all of it back.
	check(t, "Memset", Memset(unsafe.Add(d, n/4), 0xab, n/2))
	check(t, "Memcpy to host", Memcpy(unsafe.Pointer(&dst[0]), d, n, MemcpyDeviceToHost))
	want := append([]byte(nil), src...)
	for i := n / 4; i < 3*n/4; i++ {
		want[i] = 0xab
	}
	if !bytes.Equal(want, dst) {
		t.Fatal("memset region or its surroundings read back wrong")
	}
}

func TestGPUStreamEventTiming(t *testing.T) {
	requireGPU(t)
	var s Stream
	check(t, "StreamCreate", StreamCreate(&s))
	defer func() { check(t, "StreamDestroy", StreamDestroy(s)) }()
	var start, stop Event
	check(t, "EventCreate", EventCreate(&start))
	defer EventDestroy(start)
	check(t, "EventCreate", EventCreate(&stop))
	defer EventDestroy(stop)
	const n = 256 << 20
	var d unsafe.Pointer
	check(t, "Malloc", Malloc(&d, n))
	defer Free(d)
	check(t, "EventRecord", EventRecord(start, s))
	for i := range 10 {
		check(t, "MemsetAsync", MemsetAsync(d, int32(i), n, s))
	}
	check(t, "EventRecord", EventRecord(stop, s))
	check(t, "EventSynchronize", EventSynchronize(stop))
	if err := EventQuery(stop); err != nil {
		t.Errorf("EventQuery after EventSynchronize: %v", err)
	}
	var ms float32
	check(t, "EventElapsedTime", EventElapsedTime(&ms, start, stop))
	// 2.5 GiB of memset takes well over a microsecond and under a second.
	if ms <= 0.001 || ms > 1000 {
		t.Errorf("10 memsets of 256 MiB took %v ms", ms)
	}
	t.Logf("10 x 256 MiB memset: %.3f ms (%.0f GB/s)", ms, 10*n/float64(ms)/1e6)
	var b [4]byte
	check(t, "Memcpy", Memcpy(unsafe.Pointer(&b[0]), d, 4, MemcpyDeviceToHost))
	if b != [4]byte{9, 9, 9, 9} {
		t.Errorf("last memset left %v, want 9s", b)
	}
}

func TestGPUMallocTooMuch(t *testing.T) {
	requireGPU(t)
	var d unsafe.Pointer
	err := Malloc(&d, 1<<50)
	if !errors.Is(err, ErrorMemoryAllocation) {
		t.Fatalf("Malloc(1 PiB) = %v, want ErrorMemoryAllocation", err)
	}
	if got := GetLastError(); !errors.Is(got, ErrorMemoryAllocation) {
		t.Errorf("GetLastError = %v, want ErrorMemoryAllocation", got)
	}
	if got := GetLastError(); got != nil {
		t.Errorf("second GetLastError = %v, want nil", got)
	}
	s, err := GetErrorString(ErrorMemoryAllocation)
	check(t, "GetErrorString", err)
	if s != "out of memory" {
		t.Errorf("GetErrorString(ErrorMemoryAllocation) = %q", s)
	}
}

func TestGPUVersions(t *testing.T) {
	requireGPU(t)
	var drv, rt int32
	check(t, "DriverGetVersion", DriverGetVersion(&drv))
	check(t, "RuntimeGetVersion", RuntimeGetVersion(&rt))
	if rt/1000 != VERSION/1000 || drv < rt {
		t.Errorf("driver %d, runtime %d, headers %d", drv, rt, VERSION)
	}
}
