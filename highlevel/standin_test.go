package highlevel

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/gocuda/cuda/cudadrv"
	"github.com/gocuda/cuda/highlevel/internal/driver"
)

// standInCases are what TestStandIn checks of the stand-in driver itself
// (internal/driver/testdata/stubdriver.c), each in a child process
// (TestStandInChild): the tests that run on it (TestStubDriver, linalg's
// and collective's) are worth what it does with what it is given.
var standInCases = []childCase{
	{"copies and memsets move bytes", checkStandInBytes},
	{"kernels compute", checkStandInKernels},
	{"a capture takes the work a graph launch does", checkStandInCapture},
	{"a capture ends unjoined", checkStandInUnjoined},
	{"a graph launch needs its memory", checkStandInGraphMemory},
	{"ranges are checked", checkStandInRanges},
	{"what is not implemented is refused", checkStandInRefuses},
}

// TestStandIn runs standInCases on the stand-in driver, in child processes
// where libcudart cannot be loaded, as TestStubDriver does: copies,
// memsets and kernels change the bytes they are asked to, and only those;
// a capture takes the work queued on its streams instead of doing it, and
// the graph's launches do it; the memory a call names is checked against
// the allocations; and a call the stand-in does not implement is an error,
// never a success with nothing done.
func TestStandIn(t *testing.T) { runChildCases(t, "TestStandInChild", "HL_STANDIN_CASE", standInCases) }

func TestStandInChild(t *testing.T) { runChildCase(t, "TestStandIn", "HL_STANDIN_CASE", standInCases) }

// standInStream returns a new stream of device 0, closed when t ends.
func standInStream(t *testing.T) *Stream {
	t.Helper()
	s, err := NewStream(0, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// standInAlloc returns n bytes of device 0's memory, freed when t ends.
func standInAlloc(t *testing.T, n int) MemoryPointer {
	t.Helper()
	m, err := Device(0).Alloc(n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Free() })
	return m
}

// deviceBytes returns a copy of the n bytes at p.
func deviceBytes(t *testing.T, p MemoryPointer, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if err := CopyToHost(b, p); err != nil {
		t.Fatal(err)
	}
	return b
}

// checkStandInBytes copies bytes to the device, between allocations and
// back, plainly and on a stream, and sets ranges of them: each read back
// is what was written, and a memset changes its range alone.
func checkStandInBytes(t *testing.T) {
	const n = 4 << 10
	s := standInStream(t)
	a, b := standInAlloc(t, n), standInAlloc(t, n)
	src := make([]byte, n)
	for i := range src {
		src[i] = byte(i*7 + 1)
	}
	if err := CopyFromHost(a, src); err != nil {
		t.Fatal(err)
	}
	if got := deviceBytes(t, a, n); !bytes.Equal(got, src) {
		t.Errorf("host to device and back: got % x..., want % x...", got[:8], src[:8])
	}
	if err := b.CopyFromDeviceAsync(s, a, n); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, n)
	if err := CopyToHostAsync(s, got, b); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, src) {
		t.Errorf("device to device on a stream, then to the host: got % x..., want % x...", got[:8], src[:8])
	}

	// A pinned buffer both ways, on the stream.
	pinned, err := AllocPinnedUnpooled(n)
	if err != nil {
		t.Fatal(err)
	}
	defer pinned.Free()
	ph := unsafe.Slice((*byte)(pinned.Ptr()), n)
	copy(ph, src)
	slices.Reverse(ph)
	if err := b.CopyFromHostPointerAsync(s, pinned.Ptr(), n); err != nil {
		t.Fatal(err)
	}
	clear(ph)
	if err := b.CopyToHostPointerAsync(s, pinned.Ptr(), n); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(src)
	slices.Reverse(want)
	if !bytes.Equal(ph, want) {
		t.Errorf("pinned memory to the device and back on a stream: got % x..., want % x...", ph[:8], want[:8])
	}

	// Memsets, plain over a's first half and on the stream over 32 bytes
	// of its second.
	if err := a.Memset(0xab, n/2); err != nil {
		t.Fatal(err)
	}
	mid, err := a.Add(n/2 + 16)
	if err != nil {
		t.Fatal(err)
	}
	if err := mid.MemsetAsync(s, 0x5a, 32); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	want = slices.Clone(src)
	for i := range n / 2 {
		want[i] = 0xab
	}
	for i := n/2 + 16; i < n/2+48; i++ {
		want[i] = 0x5a
	}
	if got := deviceBytes(t, a, n); !bytes.Equal(got, want) {
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("after the memsets, byte %d is %#x, want %#x", i, got[i], want[i])
				break
			}
		}
	}

	// Fills of elements of each size, over part of an array: by memsets
	// of 1, 2 and 4 bytes, rows of them, or copies.
	checkStandInFill(t, "uint8", byte(0x7f))
	checkStandInFill(t, "uint16", uint16(0x1234))
	checkStandInFill(t, "float32", float32(1.5))
	checkStandInFill(t, "[2]float64", [2]float64{-1, 2.25})
	checkStandInFill(t, "[3]byte", [3]byte{1, 2, 3})
}

// checkStandInFill fills elements 3 to 5000 of an array of 5003 zeros with
// v, async on a stream, and reads the array back.
func checkStandInFill[T comparable](t *testing.T, name string, v T) {
	t.Helper()
	const n, i, j = 5003, 3, 5000
	s := standInStream(t)
	a, err := AllocArray[T](Device(0), n)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Free()
	var zero T
	if err := a.Fill(zero); err != nil {
		t.Fatal(err)
	}
	part, err := a.Slice(i, j)
	if err != nil {
		t.Fatal(err)
	}
	if err := part.FillAsync(s, v); err != nil {
		t.Fatalf("%s: FillAsync: %v", name, err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	got, err := a.ToHost()
	if err != nil {
		t.Fatal(err)
	}
	for k, e := range got {
		want := zero
		if k >= i && k < j {
			want = v
		}
		if e != want {
			t.Errorf("%s: element %d after the fill of %d to %d: %v, want %v", name, k, i, j, e, want)
			break
		}
	}
}

// standInAxpy returns the stand-in's axpy kernel, which it runs as
// y[i] += a * x[i] for each thread i below n (bench's mixSource).
func standInAxpy(t *testing.T) *Kernel {
	t.Helper()
	mod, err := LoadModule([]byte("stub image"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mod.Close() })
	k, err := mod.Kernel("axpy")
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// checkStandInKernels launches axpy: it computes, over the elements its
// grid covers; one that would reach past its arrays does nothing and
// returns CUDA_ERROR_ILLEGAL_ADDRESS.
func checkStandInKernels(t *testing.T) {
	s := standInStream(t)
	k := standInAxpy(t)
	x, err := ArrayFrom(Device(0), []float32{1, 2, 3, 4})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Free()
	y, err := ArrayFrom(Device(0), []float32{10, 20, 30, 40})
	if err != nil {
		t.Fatal(err)
	}
	defer y.Free()
	for _, l := range []struct {
		name  string
		block int
		a     float32
		n     int32
		err   error
		want  []float32
	}{
		{"y += 2x", 4, 2, 4, nil, []float32{12, 24, 36, 48}},
		{"a grid of 2 threads", 2, 1, 4, nil, []float32{13, 26, 36, 48}},
		{"n past the arrays' end", 8, 1, 8, cudadrv.ERROR_ILLEGAL_ADDRESS, []float32{13, 26, 36, 48}},
	} {
		err := k.Launch(s, LaunchConfig{Grid: Dim3{X: 1}, Block: Dim3{X: l.block}}, l.a, x, y, l.n)
		if !errors.Is(err, l.err) || (err == nil) != (l.err == nil) {
			t.Errorf("%s: Launch: %v, want %v", l.name, err, l.err)
		}
		if err := s.Synchronize(); err != nil {
			t.Fatal(err)
		}
		got, err := y.ToHost()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, l.want) {
			t.Errorf("%s: y = %v, want %v", l.name, got, l.want)
		}
	}
}

// checkStandInCapture captures a memset and a host function, and a memset
// on a stream that joins the capture and rejoins it: the capture reports
// itself (AllocAsync on the stream is refused), does none of the work, and
// each launch of the graph does all of it.
func checkStandInCapture(t *testing.T) {
	const n = 256
	s, other := standInStream(t), standInStream(t)
	m := standInAlloc(t, n)
	half, err := m.Add(n / 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Memset(0, n); err != nil {
		t.Fatal(err)
	}
	var ran atomic.Int32
	g, err := Capture(s, CaptureRelaxed, func() error {
		if _, err := AllocAsync(s, 64); !errors.Is(err, ErrCapturing) {
			t.Errorf("AllocAsync on a capturing stream: %v, want ErrCapturing", err)
		}
		if err := m.MemsetAsync(s, 7, n/2); err != nil {
			return err
		}
		if err := s.LaunchHostFunc(func() { ran.Add(1) }); err != nil {
			return err
		}
		if err := other.WaitStream(s); err != nil { // joins the capture
			return err
		}
		if err := half.MemsetAsync(other, 9, n/2); err != nil {
			return err
		}
		return s.WaitStream(other) // and rejoins it
	})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if err := Device(0).Synchronize(); err != nil {
		t.Fatal(err)
	}
	if got := deviceBytes(t, m, n); !bytes.Equal(got, make([]byte, n)) || ran.Load() != 0 {
		t.Errorf("after the capture: memory % x..., host function ran %d times; want none of the work done", got[:4], ran.Load())
	}
	x, err := g.Instantiate(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	want := bytes.Repeat([]byte{7}, n)
	for i := n / 2; i < n; i++ {
		want[i] = 9
	}
	for i := range int32(2) {
		if err := m.Memset(0, n); err != nil {
			t.Fatal(err)
		}
		if err := x.Launch(s); err != nil {
			t.Fatal(err)
		}
		if err := s.Synchronize(); err != nil {
			t.Fatal(err)
		}
		if got := deviceBytes(t, m, n); !bytes.Equal(got, want) || ran.Load() != i+1 {
			t.Errorf("after launch %d: memory % x ... % x, host function ran %d times; want % x ... % x, %d",
				i+1, got[:4], got[n-4:], ran.Load(), want[:4], want[n-4:], i+1)
		}
	}
}

// checkStandInUnjoined captures work on a stream that joined the capture
// and did not rejoin it: the capture ends with
// CUDA_ERROR_STREAM_CAPTURE_UNJOINED, as CUDA's does.
func checkStandInUnjoined(t *testing.T) {
	s, other := standInStream(t), standInStream(t)
	m := standInAlloc(t, 64)
	if err := s.BeginCapture(CaptureRelaxed); err != nil {
		t.Fatal(err)
	}
	if err := other.WaitStream(s); err != nil {
		t.Fatal(err)
	}
	if err := m.MemsetAsync(other, 1, 64); err != nil {
		t.Fatal(err)
	}
	if g, err := s.EndCapture(); !errors.Is(err, cudadrv.ERROR_STREAM_CAPTURE_UNJOINED) {
		t.Errorf("EndCapture with a stream not rejoined: %v, want CUDA_ERROR_STREAM_CAPTURE_UNJOINED", err)
		if g != nil {
			g.Close()
		}
	}
}

// checkStandInGraphMemory launches a graph whose memory is freed: through
// the package, which keeps the memory for the graph, the launch works; with
// the memory freed behind the package's back, the stand-in refuses the
// launch with CUDA_ERROR_ILLEGAL_ADDRESS.
func checkStandInGraphMemory(t *testing.T) {
	d := Device(0)
	s := standInStream(t)
	ctx, err := d.context()
	if err != nil {
		t.Fatal(err)
	}
	var raw unsafe.Pointer
	if err := check("cuMemAlloc", driver.Malloc(ctx, &raw, 64)); err != nil {
		t.Fatal(err)
	}
	unowned, err := UnownedMemory(raw, 64, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := d.Alloc(64)
	if err != nil {
		t.Fatal(err)
	}
	g, err := Capture(s, CaptureRelaxed, func() error {
		return errors.Join(m.MemsetAsync(s, 1, 64), unowned.MemsetAsync(s, 2, 64))
	})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	x, err := g.Instantiate(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if err := m.Free(); err != nil {
		t.Fatal(err)
	}
	if err := x.Launch(s); err != nil {
		t.Errorf("launch of a graph whose memory was freed through the package, which keeps it: %v", err)
	}
	if err := check("cuMemFree", driver.Free(ctx, raw)); err != nil {
		t.Fatal(err)
	}
	if err := x.Launch(s); !errors.Is(err, cudadrv.ERROR_ILLEGAL_ADDRESS) {
		t.Errorf("launch of a graph whose memory was freed behind the package's back: %v, want CUDA_ERROR_ILLEGAL_ADDRESS", err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
}

// checkStandInRanges makes the calls the package's range checks keep from
// the driver, through the shim: the stand-in refuses each with
// CUDA_ERROR_INVALID_VALUE, as CUDA does, and changes nothing.
func checkStandInRanges(t *testing.T) {
	const n = 64
	d := Device(0)
	ctx, err := d.context()
	if err != nil {
		t.Fatal(err)
	}
	m := standInAlloc(t, 2*n)
	if err := m.Memset(0, 2*n); err != nil {
		t.Fatal(err)
	}
	p := m.Ptr()
	end := unsafe.Add(p, n) // n bytes before the allocation's end
	host := make([]byte, 2*n)
	for _, c := range []struct {
		name string
		r    int32
	}{
		{"memset past the end", driver.Memset(uintptr(ctx), uintptr(end), 1, n+1, 0, 0)},
		{"memset past the end, async", driver.Memset(uintptr(ctx), uintptr(end), 1, n+1, 0, 1)},
		{"memset of pageable memory", driver.Memset(uintptr(ctx), uintptr(unsafe.Pointer(&host[0])), 1, n, 0, 0)},
		{"copy from past the end", driver.Memcpy(uintptr(ctx), unsafe.Pointer(&host[0]), end, n+1, 0, 0)},
		{"copy to past the end", driver.Memcpy(uintptr(ctx), end, unsafe.Pointer(&host[0]), n+1, 0, 0)},
		{"copy to past the end, async", driver.Memcpy(uintptr(ctx), end, unsafe.Pointer(&host[0]), n+1, 0, 1)},
		{"free inside an allocation", driver.Free(ctx, end)},
		{"free of pageable memory", driver.Free(ctx, unsafe.Pointer(&host[0]))},
	} {
		if err := check(c.name, c.r); !errors.Is(err, cudadrv.ERROR_INVALID_VALUE) {
			t.Errorf("%s: %v, want CUDA_ERROR_INVALID_VALUE", c.name, err)
		}
	}
	if got := deviceBytes(t, m, 2*n); !bytes.Equal(got, make([]byte, 2*n)) {
		t.Errorf("the refused calls wrote % x", got)
	}
	if err := check("copy to the end", driver.Memcpy(uintptr(ctx), end, unsafe.Pointer(&host[0]), n, 0, 0)); err != nil {
		t.Errorf("a copy of the allocation's last %d bytes: %v", n, err)
	}
}

// checkStandInRefuses makes calls, through the package, that reach driver
// functions the stand-in does not implement: each is an error naming the
// function, CUDA_ERROR_NOT_SUPPORTED, and not a success with nothing done.
// So is a launch of a kernel whose work it does not know.
func checkStandInRefuses(t *testing.T) {
	d := Device(0)
	s := standInStream(t)
	m := standInAlloc(t, 64)
	start, err := NewEvent(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer start.Close()
	end, err := NewEvent(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer end.Close()
	if err := errors.Join(start.Record(s), end.Record(s), s.Synchronize()); err != nil {
		t.Fatal(err)
	}
	mod, err := LoadModule([]byte("stub image"))
	if err != nil {
		t.Fatal(err)
	}
	defer mod.Close()
	unknown, err := mod.Kernel("unknown")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, function string
		err            error
	}{
		{"MemoryPointer.IPCHandle", "cuIpcGetMemHandle", second(m.IPCHandle())},
		{"ElapsedTime", "cuEventElapsedTime", second(ElapsedTime(start, end))},
		{"ProfilerStart", "cuProfilerStart", ProfilerStart()},
		{"Kernel.MaxActiveBlocksPerSM", "cuOccupancyMaxActiveBlocksPerMultiprocessor", second(unknown.MaxActiveBlocksPerSM(d, 128, 0))},
		{"Launch of a kernel the stand-in does not know", "launching unknown", unknown.Launch(s, LaunchConfig{Grid: Dim3{X: 1}, Block: Dim3{X: 1}})},
	} {
		if !errors.Is(c.err, cudadrv.ERROR_NOT_SUPPORTED) || !strings.Contains(c.err.Error(), c.function) {
			t.Errorf("%s: %v, want CUDA_ERROR_NOT_SUPPORTED from %s", c.name, c.err, c.function)
		}
	}
}
