package highlevel

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/gocuda/cuda/cudadrv"
	"github.com/gocuda/cuda/cudart"
	"github.com/gocuda/cuda/internal/gpuprobe"
)

// gpu ends the test as gpuprobe.Require does where the driver has no
// device or fails, fails it where the package cannot use the driver that
// has one, and returns device 0.
func gpu(t testing.TB) Device {
	t.Helper()
	gpuprobe.Require(t)
	if _, err := DeviceCount(); err != nil {
		t.Fatal(err)
	}
	return 0
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rand.IntN(256))
	}
	return b
}

func TestGPUDevice(t *testing.T) {
	d := gpu(t)
	n, err := DeviceCount()
	if err != nil || n < 1 {
		t.Fatalf("DeviceCount = %d, %v", n, err)
	}
	name, err := d.Name()
	if err != nil || !strings.Contains(name, "NVIDIA") {
		t.Errorf("Name = %q, %v", name, err)
	}
	cc, err := d.ComputeCapability()
	major, _ := d.Attribute(DeviceComputeCapabilityMajor)
	minor, _ := d.Attribute(DeviceComputeCapabilityMinor)
	if err != nil || cc != strconv.Itoa(major)+strconv.Itoa(minor) {
		t.Errorf("ComputeCapability = %q, %v; attributes say %d.%d", cc, err, major, minor)
	}
	if w, err := d.Attribute(DeviceWarpSize); w != 32 || err != nil {
		t.Errorf("warp size = %d, %v", w, err)
	}
	var total uint64
	if err := cudadrv.DeviceTotalMem(&total, driverDevice(t, d)); err != nil {
		t.Fatal(err)
	}
	free, memTotal, err := d.MemInfo()
	if err != nil || free <= 0 || free > memTotal || uint64(memTotal) != total {
		t.Errorf("MemInfo = %d free of %d, %v; cuDeviceTotalMem says %d", free, memTotal, err, total)
	}
	drv, err := DriverVersion()
	if drv < 12000 || err != nil {
		t.Errorf("DriverVersion = %d, %v", drv, err)
	}
	if err := d.Synchronize(); err != nil {
		t.Error(err)
	}
	if _, err := Device(n).Name(); !errors.Is(err, cudart.ErrorInvalidDevice) || !errors.Is(err, cudadrv.ERROR_INVALID_DEVICE) {
		t.Errorf("Device(%d).Name: %v, want ErrorInvalidDevice", n, err)
	}
	if dd, err := DefaultDevice(); err != nil || dd < 0 || int(dd) >= n {
		t.Errorf("DefaultDevice = %v, %v", dd, err)
	}
	t.Logf("%s, compute capability %s, %d devices, driver %d", name, cc, n, drv)
}

// TestGPUProperties checks what the package takes from libcudart, the
// properties and the runtime's version, against what it takes from the
// driver.
func TestGPUProperties(t *testing.T) {
	d := gpu(t)
	needsRuntime(t)
	p, err := d.Properties()
	if err != nil {
		t.Fatal(err)
	}
	name, _ := d.Name()
	_, total, _ := d.MemInfo()
	if p.Name != name || p.TotalMemory != total {
		t.Errorf("Properties: name %q, memory %d; the driver says %q, %d", p.Name, p.TotalMemory, name, total)
	}
	if p.UUID == ([16]byte{}) {
		t.Error("Properties: no UUID")
	}
	b2i := func(b bool) int {
		if b {
			return 1
		}
		return 0
	}
	// Every field named as an attribute holds the attribute's value.
	for a, got := range map[DeviceAttribute]int{
		DeviceComputeCapabilityMajor:                 p.Major,
		DeviceComputeCapabilityMinor:                 p.Minor,
		DeviceMultiprocessorCount:                    p.MultiprocessorCount,
		DeviceMaxThreadsPerBlock:                     p.MaxThreadsPerBlock,
		DeviceMaxBlockDimX:                           p.MaxBlockDim[0],
		DeviceMaxBlockDimY:                           p.MaxBlockDim[1],
		DeviceMaxBlockDimZ:                           p.MaxBlockDim[2],
		DeviceMaxGridDimX:                            p.MaxGridDim[0],
		DeviceMaxGridDimY:                            p.MaxGridDim[1],
		DeviceMaxGridDimZ:                            p.MaxGridDim[2],
		DeviceMaxThreadsPerMultiprocessor:            p.MaxThreadsPerMultiprocessor,
		DeviceMaxBlocksPerMultiprocessor:             p.MaxBlocksPerMultiprocessor,
		DeviceWarpSize:                               p.WarpSize,
		DeviceMaxRegistersPerBlock:                   p.MaxRegistersPerBlock,
		DeviceMaxRegistersPerMultiprocessor:          p.MaxRegistersPerMultiprocessor,
		DeviceMaxSharedMemoryPerBlock:                p.MaxSharedMemoryPerBlock,
		DeviceMaxSharedMemoryPerBlockOptin:           p.MaxSharedMemoryPerBlockOptin,
		DeviceMaxSharedMemoryPerMultiprocessor:       p.MaxSharedMemoryPerMultiprocessor,
		DeviceReservedSharedMemoryPerBlock:           p.ReservedSharedMemoryPerBlock,
		DeviceTotalConstantMemory:                    p.TotalConstantMemory,
		DeviceGlobalMemoryBusWidth:                   p.GlobalMemoryBusWidth,
		DeviceL2CacheSize:                            p.L2CacheSize,
		DeviceMaxPersistingL2CacheSize:               p.MaxPersistingL2CacheSize,
		DeviceMaxAccessPolicyWindowSize:              p.MaxAccessPolicyWindowSize,
		DeviceMaxPitch:                               p.MaxPitch,
		DeviceTextureAlignment:                       p.TextureAlignment,
		DeviceConcurrentKernels:                      b2i(p.ConcurrentKernels),
		DeviceAsyncEngineCount:                       p.AsyncEngineCount,
		DeviceStreamPrioritiesSupported:              b2i(p.StreamPrioritiesSupported),
		DeviceComputePreemptionSupported:             b2i(p.ComputePreemptionSupported),
		DeviceCooperativeLaunch:                      b2i(p.CooperativeLaunch),
		DeviceClusterLaunch:                          b2i(p.ClusterLaunch),
		DeviceGlobalL1CacheSupported:                 b2i(p.GlobalL1CacheSupported),
		DeviceLocalL1CacheSupported:                  b2i(p.LocalL1CacheSupported),
		DeviceUnifiedFunctionPointers:                b2i(p.UnifiedFunctionPointers),
		DeviceIntegrated:                             b2i(p.Integrated),
		DeviceMultiGPUBoard:                          b2i(p.MultiGPUBoard),
		DeviceMultiGPUBoardGroupID:                   p.MultiGPUBoardGroupID,
		DevicePCIDomainID:                            p.PCIDomainID,
		DevicePCIBusID:                               p.PCIBusID,
		DevicePCIDeviceID:                            p.PCIDeviceID,
		DeviceECCEnabled:                             b2i(p.ECCEnabled),
		DeviceUnifiedAddressing:                      b2i(p.UnifiedAddressing),
		DeviceManagedMemory:                          b2i(p.ManagedMemory),
		DeviceConcurrentManagedAccess:                b2i(p.ConcurrentManagedAccess),
		DevicePageableMemoryAccess:                   b2i(p.PageableMemoryAccess),
		DevicePageableMemoryAccessUsesHostPageTables: b2i(p.PageableMemoryAccessUsesHostPageTables),
		DeviceDirectManagedMemAccessFromHost:         b2i(p.DirectManagedMemAccessFromHost),
		DeviceCanMapHostMemory:                       b2i(p.CanMapHostMemory),
		DeviceCanUseHostPointerForRegisteredMem:      b2i(p.CanUseHostPointerForRegisteredMem),
		DeviceHostRegisterSupported:                  b2i(p.HostRegisterSupported),
		DeviceReadOnlyHostRegisterSupported:          b2i(p.ReadOnlyHostRegisterSupported),
		DeviceHostNativeAtomicSupported:              b2i(p.HostNativeAtomicSupported),
		DeviceMemoryPoolsSupported:                   b2i(p.MemoryPoolsSupported),
		DeviceMemoryPoolSupportedHandleTypes:         p.MemoryPoolSupportedHandleTypes,
		DeviceIPCEventSupported:                      b2i(p.IPCEventSupported),
		DeviceGPUDirectRDMASupported:                 b2i(p.GPUDirectRDMASupported),
		DeviceGPUDirectRDMAFlushWritesOptions:        p.GPUDirectRDMAFlushWritesOptions,
		DeviceGPUDirectRDMAWritesOrdering:            p.GPUDirectRDMAWritesOrdering,
	} {
		if want, err := d.Attribute(a); got != want || err != nil {
			t.Errorf("Properties: %v is %d; Attribute says %d, %v", a, got, want, err)
		}
	}
	dd, err := NewDeviceData(d)
	if err != nil {
		t.Fatal(err)
	}
	if want, err := DeviceDataFromProperties(&p); dd != want || err != nil {
		t.Errorf("NewDeviceData = %+v; from Properties %+v, %v", dd, want, err)
	}
	rt, err := RuntimeVersion()
	drv, _ := DriverVersion()
	if rt < 12000 || drv < rt || err != nil {
		t.Errorf("versions: runtime %d (%v), driver %d", rt, err, drv)
	}
}

// needsRuntime skips t, a test of what the package takes from libcudart,
// where $GOCUDA_CUDART names a file that cannot be loaded: the GPU suite
// run without the runtime. Elsewhere a missing libcudart fails the test.
func needsRuntime(t *testing.T) {
	t.Helper()
	if err := cudart.Load(); err != nil && os.Getenv("GOCUDA_CUDART") != "" {
		t.Skipf("needs libcudart: %v", err)
	}
}

// driverDevice returns d's CUdevice.
func driverDevice(t *testing.T, d Device) cudadrv.Device {
	t.Helper()
	var dev cudadrv.Device
	if err := cudadrv.DeviceGet(&dev, int32(d)); err != nil {
		t.Fatal(err)
	}
	return dev
}

// TestGPUAttributeCache reads every attribute from many goroutines at once,
// most answered from the cache, and compares each with CUDA's answer; an
// attribute highlevel does not name is refused each time, never cached.
func TestGPUAttributeCache(t *testing.T) {
	d := gpu(t)
	want := make(map[DeviceAttribute]int)
	dev := driverDevice(t, d)
	for a := range DeviceAttribute(len(deviceAttributeNames)) {
		var v int32
		if a.known() && cudadrv.DeviceGetAttribute(&v, cudadrv.Device_attribute(a), dev) == nil {
			want[a] = int(v)
		}
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 3 {
				for a, w := range want {
					if v, err := d.Attribute(a); v != w || err != nil {
						t.Errorf("Attribute(%v) = %d, %v; CUDA says %d", a, v, err, w)
					}
				}
			}
		})
	}
	wg.Wait()
	for _, a := range []DeviceAttribute{-1, 0, DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_WIDTH), 100000} {
		for range 2 {
			if _, err := d.Attribute(a); !errors.Is(err, ErrInvalid) {
				t.Errorf("Attribute(%d): %v, want ErrInvalid", a, err)
			}
		}
	}
}

// TestGPUDo checks that Do runs fn with the device current on a locked
// thread and restores the previous device, also after a panic.
func TestGPUDo(t *testing.T) {
	gpu(t)
	n, _ := DeviceCount()
	last := Device(n - 1)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := Device(0).Use(); err != nil {
		t.Fatal(err)
	}
	err := last.Do(func() error {
		if d, err := CurrentDevice(); d != last || err != nil {
			t.Errorf("in Do: current device %v, %v; want %v", d, err, last)
		}
		return errors.New("fn's error")
	})
	if err == nil || err.Error() != "fn's error" {
		t.Errorf("Do returned %v", err)
	}
	func() {
		defer func() { recover() }()
		last.Do(func() error { panic("boom") })
	}()
	if d, _ := CurrentDevice(); d != 0 {
		t.Errorf("after Do: current device %v, want 0", d)
	}
	// An operation on another device puts the thread's context back.
	if err := last.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if d, _ := CurrentDevice(); d != 0 {
		t.Errorf("after an operation on %v: current device %v, want 0", last, d)
	}
}

func TestGPUMemory(t *testing.T) {
	d := gpu(t)
	const n = 1 << 20
	for _, tc := range []struct {
		name  string
		alloc func(int) (MemoryPointer, error)
	}{
		{"Malloc", d.Alloc},
		{"Managed", Managed(d).Alloc},
		{"AllocAsync", func(n int) (MemoryPointer, error) { return AllocAsync(nil, n) }},
		{"pool", func(n int) (MemoryPointer, error) {
			p, err := DefaultMemoryPool()
			if err != nil {
				return MemoryPointer{}, err
			}
			return p.Alloc(n)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := tc.alloc(n)
			if err != nil {
				t.Fatal(err)
			}
			if m.Size() != n || m.Device() != d {
				t.Errorf("size %d on %v", m.Size(), m.Device())
			}
			src := randomBytes(n)
			if err := m.CopyFromHostPointer(unsafe.Pointer(&src[0]), n); err != nil {
				t.Fatal(err)
			}
			// Offsets: set 100 bytes at 1000 to 7, then copy the second half
			// over the first half through another allocation.
			q, err := m.Add(1000)
			if err != nil {
				t.Fatal(err)
			}
			if err := q.Memset(7, 100); err != nil {
				t.Fatal(err)
			}
			copy(src[1000:1100], bytes.Repeat([]byte{7}, 100))
			other, err := d.Alloc(n / 2)
			if err != nil {
				t.Fatal(err)
			}
			defer other.Memory().free()
			half, _ := m.Add(n / 2)
			if err := other.CopyFromDevice(half, n/2); err != nil {
				t.Fatal(err)
			}
			if err := m.CopyFromDevice(other, n/2); err != nil {
				t.Fatal(err)
			}
			copy(src[:n/2], src[n/2:])
			got := make([]byte, n)
			if err := m.CopyToHostPointer(unsafe.Pointer(&got[0]), n); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, src) {
				t.Errorf("read back differs")
			}
			if err := m.Memset(0, n+1); err == nil {
				t.Errorf("Memset past the end: no error")
			}
			if err := m.Memory().free(); err != nil {
				t.Fatal(err)
			}
			if err := m.Memory().free(); !errors.Is(err, ErrFreed) {
				t.Errorf("second Free: %v, want ErrFreed", err)
			}
			if err := m.CopyToHostPointer(unsafe.Pointer(&got[0]), n); !errors.Is(err, ErrFreed) {
				t.Errorf("copy after Free: %v, want ErrFreed", err)
			}
		})
	}
}

func TestGPUAsyncCopies(t *testing.T) {
	d := gpu(t)
	s, err := NewStream(d, &StreamOptions{NonBlocking: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const n = 4 << 20
	pinned, err := DefaultPinnedMemoryPool().Alloc(n)
	if err != nil {
		t.Fatal(err)
	}
	defer pinned.Free()
	src := randomBytes(n)
	copy(pinned.Bytes(), src)
	m, err := AllocAsync(s, n)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.CopyFromHostPointerAsync(s, pinned.Ptr(), n); err != nil {
		t.Fatal(err)
	}
	if err := m.MemsetAsync(s, 9, 10); err != nil {
		t.Fatal(err)
	}
	copy(src[:10], bytes.Repeat([]byte{9}, 10))
	clear(pinned.Bytes())
	// A registered Go slice receives the result.
	dst := make([]byte, n)
	reg, err := RegisterHost(dst)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.CopyToHostPointerAsync(s, unsafe.Pointer(&dst[0]), n); err != nil {
		t.Fatal(err)
	}
	if err := s.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(dst, src) {
		t.Errorf("async round trip differs")
	}
	if err := reg.Unregister(); err != nil {
		t.Error(err)
	}
	if err := reg.Unregister(); !errors.Is(err, ErrClosed) {
		t.Errorf("second Unregister: %v, want ErrClosed", err)
	}
	if err := m.Memory().free(); err != nil {
		t.Error(err)
	}
	if err := s.Synchronize(); err != nil {
		t.Error(err)
	}
	u, err := AllocPinned(100)
	if err != nil {
		t.Fatal(err)
	}
	if err := u.Free(); err != nil {
		t.Error(err)
	}
}

func TestGPUPoolOnDevice(t *testing.T) {
	d := gpu(t)
	p, err := NewMemoryPool(d)
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		m, err := p.Alloc(3 << 20)
		if err != nil {
			t.Fatal(err)
		}
		m.Memory().free()
	}
	if p.UsedBytes() != 0 || p.TotalBytes() != 3<<20 {
		t.Errorf("after 100 Malloc/Free: used %d, total %d", p.UsedBytes(), p.TotalBytes())
	}
	_, total, _ := d.MemInfo()
	_, err = p.Alloc(2 * total)
	if !errors.Is(err, cudart.ErrorMemoryAllocation) {
		t.Errorf("Malloc of twice the device: %v, want ErrorMemoryAllocation", err)
	}
	if p.TotalBytes() != 0 {
		t.Errorf("after out of memory the pool holds %d, want 0 (it frees and retries)", p.TotalBytes())
	}
	ap, err := NewMemoryAsyncPool(d)
	if err != nil {
		t.Fatal(err)
	}
	defer ap.Close()
	if err := ap.SetReleaseThreshold(64 << 20); err != nil {
		t.Fatal(err)
	}
	if th := ap.ReleaseThreshold(); th != 64<<20 {
		t.Errorf("ReleaseThreshold = %d", th)
	}
	m, err := ap.Alloc(8 << 20)
	if err != nil {
		t.Fatal(err)
	}
	if used := ap.UsedBytes(); used < 8<<20 {
		t.Errorf("async pool UsedBytes = %d", used)
	}
	m.Memory().free()
	d.Synchronize()
	if used := ap.UsedBytes(); used != 0 {
		t.Errorf("async pool UsedBytes after Free = %d", used)
	}
	if err := ap.FreeAllBlocks(); err != nil {
		t.Error(err)
	}
	if total := ap.TotalBytes(); total != 0 {
		t.Errorf("async pool TotalBytes after FreeAllBlocks = %d", total)
	}
	own, err := d.Alloc(1024)
	if err != nil {
		t.Fatal(err)
	}
	un, err := UnownedMemory(own.Ptr(), 1024, own)
	if err != nil || un.Device() != d {
		t.Fatalf("UnownedMemory: %v on %v", err, un.Device())
	}
	if err := un.Memset(1, 1024); err != nil {
		t.Error(err)
	}
	un.Memory().free()
	if err := own.Memory().free(); err != nil {
		t.Errorf("the owner's Free after the unowned one's: %v", err)
	}
	x := 5
	if _, err := UnownedMemory(unsafe.Pointer(&x), 8, nil); err == nil {
		t.Errorf("UnownedMemory of Go memory: no error")
	}
}

func TestGPUArray(t *testing.T) {
	gpu(t)
	src := make([]float32, 100000)
	for i := range src {
		src[i] = float32(i) * 0.5
	}
	a, err := ArrayFrom(nil, src)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Free()
	got, err := a.ToHost()
	if err != nil || !slices.Equal(got, src) {
		t.Fatalf("ToHost: %v, equal %v", err, slices.Equal(got, src))
	}
	s, err := a.Slice(10, 20)
	if err != nil || s.Len() != 10 {
		t.Fatal(s, err)
	}
	part := []float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	st, _ := NewStream(0, nil)
	defer st.Close()
	if err := s.CopyFromHostAsync(st, part); err != nil {
		t.Fatal(err)
	}
	copy(src[10:20], part)
	if err := a.CopyToHostAsync(st, got); err != nil {
		t.Fatal(err)
	}
	st.Synchronize()
	if !slices.Equal(got, src) {
		t.Errorf("after writing a slice: differs")
	}
	if err := s.CopyToHost(make([]float32, 9)); err == nil {
		t.Errorf("CopyToHost to a shorter slice: no error")
	}
	if _, err := a.Slice(5, 100001); err == nil {
		t.Errorf("Slice past the end: no error")
	}
	if err := s.Free(); err == nil {
		t.Errorf("Free of a slice: no error")
	}
}

// TestGPUWaitStream checks that WaitStream orders one stream's work after
// another's, forks and joins a capture as WaitEvent does, and closes its
// event with the stream waited for.
func TestGPUWaitStream(t *testing.T) {
	d := gpu(t)
	first, err1 := NewStream(d, &StreamOptions{NonBlocking: true})
	then, err2 := NewStream(d, &StreamOptions{NonBlocking: true})
	buf, err3 := AllocArray[uint32](d, 1<<10)
	if err := cmp.Or(err1, err2, err3); err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	defer then.Close()
	defer buf.Free()
	var flag atomic.Int32
	var seen int32 = -1
	first.LaunchHostFunc(func() { time.Sleep(20 * time.Millisecond); flag.Store(1) })
	if err := then.WaitStream(first); err != nil {
		t.Fatal(err)
	}
	then.LaunchHostFunc(func() { seen = flag.Load() })
	if err := then.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if seen != 1 {
		t.Errorf("the waiting stream's host function saw %d, want 1: it ran before the work it waits for", seen)
	}

	// A fork and a join: then's fill is captured into first's graph.
	g, err := Capture(first, CaptureRelaxed, func() error {
		return cmp.Or(then.WaitStream(first), buf.FillAsync(then, 7), first.WaitStream(then))
	})
	if err != nil {
		t.Fatalf("Capture of a fork and a join by WaitStream: %v", err)
	}
	defer g.Close()
	x, err := g.Instantiate(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if err := cmp.Or(x.Launch(first), first.Synchronize()); err != nil {
		t.Fatal(err)
	}
	got, err := buf.ToHost()
	if i := slices.IndexFunc(got, func(v uint32) bool { return v != 7 }); err != nil || i >= 0 {
		t.Errorf("after the graph with the joined stream's fill: %v, word %d differs; want all 7", err, i)
	}

	if err := then.WaitStream(nil); !errors.Is(err, ErrNil) {
		t.Errorf("WaitStream(nil) = %v, want ErrNil", err)
	}
	after := first.after
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if !after.life.Closed() {
		t.Errorf("Close of a stream waited for left its WaitStream event open")
	}
	if err := then.WaitStream(first); !errors.Is(err, ErrClosed) {
		t.Errorf("WaitStream of a closed stream = %v, want ErrClosed", err)
	}
}

func TestGPUStreamsAndEvents(t *testing.T) {
	d := gpu(t)
	least, greatest, err := StreamPriorityRange(d)
	if err != nil || greatest > least {
		t.Fatalf("priority range %d..%d, %v", least, greatest, err)
	}
	hi, err := NewStream(d, &StreamOptions{NonBlocking: true, Priority: greatest})
	if err != nil {
		t.Fatal(err)
	}
	lo, _ := NewStream(d, nil)
	start, _ := NewEvent(d, nil)
	if err := start.Record(lo); err != nil {
		t.Fatal(err)
	}
	// Callbacks run in order, after the work before them, and refuse CUDA.
	var order []int
	var inCallback error
	lo.LaunchHostFunc(func() { time.Sleep(20 * time.Millisecond); order = append(order, 1) })
	lo.AddCallback(func(err error) {
		order = append(order, 2)
		_, _, inCallback = d.MemInfo()
		if err != nil {
			t.Errorf("callback status %v", err)
		}
	})
	end, err := lo.recordNew(nil)
	if err != nil {
		t.Fatal(err)
	}
	// hi waits for lo's end event, then runs its own host function.
	if err := hi.WaitEvent(end); err != nil {
		t.Fatal(err)
	}
	hi.LaunchHostFunc(func() { order = append(order, 3) })
	if done, err := end.Query(); done || err != nil {
		t.Errorf("end event done at once: %v, %v", done, err)
	}
	if err := hi.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(order, []int{1, 2, 3}) {
		t.Errorf("callbacks ran in order %v, want 1 2 3", order)
	}
	if !errors.Is(inCallback, ErrInCallback) {
		t.Errorf("CUDA from a callback: %v, want ErrInCallback", inCallback)
	}
	elapsed, err := ElapsedTime(start, end)
	if err != nil || elapsed < 15*time.Millisecond || elapsed > time.Second {
		t.Errorf("ElapsedTime = %v, %v; want about 20ms", elapsed, err)
	}
	if done, err := lo.Query(); !done || err != nil {
		t.Errorf("lo.Query = %v, %v", done, err)
	}
	for _, c := range []interface{ Close() error }{hi, lo, start, end} {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
		if err := c.Close(); !errors.Is(err, ErrClosed) {
			t.Errorf("second Close: %v, want ErrClosed", err)
		}
	}
	if err := lo.Synchronize(); !errors.Is(err, ErrClosed) {
		t.Errorf("Synchronize of a closed stream: %v", err)
	}
	for _, mk := range []func(Device) (*Stream, error){LegacyDefaultStream, PerThreadDefaultStream} {
		s, err := mk(d)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Synchronize(); err != nil {
			t.Error(err)
		}
		s.Close()
	}
	ext, _ := NewStream(d, nil)
	wrapped, _ := ExternalStream(ext.Handle(), d)
	wrapped.Close()
	if err := ext.Synchronize(); err != nil {
		t.Errorf("an external stream's Close destroyed it: %v", err)
	}
	ext.Close()
	ipc, err := NewEvent(d, &EventOptions{Interprocess: true, DisableTiming: true, Blocking: true})
	if err != nil {
		t.Fatal(err)
	}
	ipc.Close()
}

// TestGPUWait checks Wait and Done with cancellation: the GPU work goes on.
func TestGPUWait(t *testing.T) {
	d := gpu(t)
	s, _ := NewStream(d, nil)
	defer s.Close()
	var ran atomic.Bool
	s.LaunchHostFunc(func() { time.Sleep(200 * time.Millisecond); ran.Store(true) })
	e, err := s.recordNew(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := e.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait with a 20ms timeout: %v, want DeadlineExceeded", err)
	}
	select {
	case <-e.Done():
		t.Errorf("Done closed before the work")
	default:
	}
	if err := s.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-e.Done():
	case <-time.After(time.Second):
		t.Errorf("Done not closed after the work")
	}
	if !ran.Load() {
		t.Errorf("Wait returned before the host function ran")
	}
}

func threads() int {
	b, _ := os.ReadFile("/proc/self/status")
	for l := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(l, "Threads:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return -1
}

// TestGPUWaitManyGoroutines makes 10,000 goroutines (4,000 under -race)
// wait on one event, checks that they take a bounded number of OS threads,
// and reports those and their wake-up latency, beside a goroutine blocked
// in cudaEventSynchronize.
func TestGPUWaitManyGoroutines(t *testing.T) {
	d := gpu(t)
	const waiters = maxWaiters
	s, _ := NewStream(d, nil)
	defer s.Close()
	var released atomic.Int64
	s.LaunchHostFunc(func() { time.Sleep(300 * time.Millisecond); released.Store(time.Now().UnixNano()) })
	e, err := s.recordNew(nil)
	if err != nil {
		t.Fatal(err)
	}
	before := threads()
	wake := make([]int64, waiters)
	var wg sync.WaitGroup
	for i := range waiters {
		wg.Go(func() {
			if err := e.Wait(context.Background()); err != nil {
				t.Error(err)
			}
			wake[i] = time.Now().UnixNano()
		})
	}
	var syncWake int64
	wg.Go(func() {
		if err := e.Synchronize(); err != nil {
			t.Error(err)
		}
		syncWake = time.Now().UnixNano()
	})
	time.Sleep(150 * time.Millisecond)
	during := threads()
	wg.Wait()
	r := released.Load()
	lat := make([]time.Duration, waiters)
	for i, w := range wake {
		lat[i] = time.Duration(w - r)
	}
	slices.Sort(lat)
	t.Logf("%d goroutines waiting: OS threads %d before, %d while waiting; wake-up after the event: median %v, p99 %v, max %v; cudaEventSynchronize: %v",
		waiters, before, during, lat[waiters/2], lat[waiters*99/100], lat[waiters-1], time.Duration(syncWake-r))
	// Starting the goroutines may start up to GOMAXPROCS threads; waiting
	// adds at most maxThreads, for the waiters sleeping in C, whatever
	// their number.
	if limit := before + runtime.GOMAXPROCS(0) + int(maxThreads()) + 8; during > limit {
		t.Errorf("%d OS threads while waiting, %d before: more than %d", during, before, limit)
	}
	e.Close()

	// One waiter at a time: the latency of Wait against a goroutine blocked
	// in cudaEventSynchronize, medians of 21 rounds each.
	var waitLat, syncLat []time.Duration
	for i := range 42 {
		s.LaunchHostFunc(func() { time.Sleep(5 * time.Millisecond); released.Store(time.Now().UnixNano()) })
		e, err := s.recordNew(nil)
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			err = e.Wait(context.Background())
		} else {
			err = e.Synchronize()
		}
		woke := time.Now().UnixNano()
		if err != nil {
			t.Fatal(err)
		}
		if lat := time.Duration(woke - released.Load()); i%2 == 0 {
			waitLat = append(waitLat, lat)
		} else {
			syncLat = append(syncLat, lat)
		}
		e.Close()
	}
	slices.Sort(waitLat)
	slices.Sort(syncLat)
	t.Logf("one waiter: wake-up after the event, median of 21: Wait %v, cudaEventSynchronize %v", waitLat[10], syncLat[10])
}

func TestGPUGraph(t *testing.T) {
	d := gpu(t)
	s, _ := NewStream(d, &StreamOptions{NonBlocking: true})
	defer s.Close()
	m, _ := d.Alloc(1 << 20)
	defer m.Memory().free()
	host := make([]byte, 1<<20)
	var runs atomic.Int32
	capture := func(v byte) *Graph {
		g, err := Capture(s, CaptureRelaxed, func() error {
			if err := m.MemsetAsync(s, v, 1<<20); err != nil {
				return err
			}
			return s.LaunchHostFunc(func() { runs.Add(1) })
		})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	g := capture(5)
	x, err := g.Instantiate(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Upload(s); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := x.Launch(s); err != nil {
			t.Fatal(err)
		}
	}
	s.Synchronize()
	m.CopyToHostPointer(unsafe.Pointer(&host[0]), len(host))
	if host[0] != 5 || host[len(host)-1] != 5 || runs.Load() != 3 {
		t.Errorf("after 3 launches: bytes %d..%d, host node ran %d times", host[0], host[len(host)-1], runs.Load())
	}
	g.Close() // the instantiation keeps working
	g2 := capture(6)
	if err := x.Update(g2); err != nil {
		t.Fatal(err)
	}
	g2.Close()
	x.Launch(s)
	s.Synchronize()
	m.CopyToHostPointer(unsafe.Pointer(&host[0]), len(host))
	if host[0] != 6 || runs.Load() != 4 {
		t.Errorf("after Update: byte %d, host node ran %d times", host[0], runs.Load())
	}
	x.Close()
	if err := x.Launch(s); !errors.Is(err, ErrClosed) {
		t.Errorf("Launch of a closed graph: %v", err)
	}
	_, err = Capture(s, CaptureRelaxed, func() error { return errors.New("stop") })
	if err == nil || !strings.Contains(err.Error(), "stop") {
		t.Errorf("Capture with a failing fn: %v", err)
	}
	if err := s.Synchronize(); err != nil {
		t.Errorf("the stream after a failed capture: %v", err)
	}
}

// TestGPUManyGoroutines runs 64 goroutines over every device, each
// allocating, copying, checking and freeing through the pools with its own
// stream and events; goroutines move between OS threads all the while.
func TestGPUManyGoroutines(t *testing.T) {
	gpu(t)
	n, _ := DeviceCount()
	pools := make([]*MemoryPool, n)
	for i := range pools {
		pools[i], _ = NewMemoryPool(Device(i))
	}
	var wg sync.WaitGroup
	for g := range 64 {
		wg.Go(func() {
			d := Device(g % n)
			s, err := NewStream(d, &StreamOptions{NonBlocking: true})
			if err != nil {
				t.Error(err)
				return
			}
			defer s.Close()
			for i := range 20 {
				size := 1024 * (1 + (g+i)%64)
				m, err := pools[d].AllocAsync(s, size)
				if err != nil {
					t.Error(err)
					return
				}
				src := bytes.Repeat([]byte{byte(g + i)}, size)
				dst := make([]byte, size)
				m.CopyFromHostPointerAsync(s, unsafe.Pointer(&src[0]), size)
				e, err := s.recordNew(nil)
				if err != nil {
					t.Error(err)
					return
				}
				s.WaitEvent(e)
				m.CopyToHostPointerAsync(s, unsafe.Pointer(&dst[0]), size)
				if err := s.Wait(context.Background()); err != nil {
					t.Error(err)
				}
				if !bytes.Equal(src, dst) {
					t.Errorf("goroutine %d on %v: round trip %d differs", g, d, i)
				}
				e.Close()
				m.Memory().free()
			}
		})
	}
	wg.Wait()
	for i, p := range pools {
		if p.UsedBytes() != 0 {
			t.Errorf("device %d pool: UsedBytes %d", i, p.UsedBytes())
		}
		p.FreeAllBlocks()
	}
	t.Logf("64 goroutines over %d devices", n)
}

// TestGPUPeer copies between two devices and checks that a stream of one
// device is refused for memory of another.
func TestGPUPeer(t *testing.T) {
	gpu(t)
	if n, _ := DeviceCount(); n < 2 {
		t.Skip("one device: peer copies need two")
	}
	a, err := Device(0).Alloc(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Memory().free()
	b, err := Device(1).Alloc(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Memory().free()
	src := randomBytes(1 << 20)
	a.CopyFromHostPointer(unsafe.Pointer(&src[0]), len(src))
	s1, _ := NewStream(1, nil)
	defer s1.Close()
	if err := b.CopyFromDeviceAsync(s1, a, 1<<20); err != nil {
		t.Fatal(err)
	}
	s1.Synchronize()
	got := make([]byte, 1<<20)
	b.CopyToHostPointer(unsafe.Pointer(&got[0]), len(got))
	if !bytes.Equal(got, src) {
		t.Errorf("peer copy differs")
	}
	if err := a.MemsetAsync(s1, 0, 10); err == nil {
		t.Errorf("memory of device 0 on a stream of device 1: no error")
	}
}

// recordNew records e on the stream, or a new event when e is nil, and returns
// the event.
func (s *Stream) recordNew(e *Event) (*Event, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	if e != nil {
		return e, e.Record(s)
	}
	if s.life.Closed() {
		return nil, ErrClosed
	}
	e, err := NewEvent(s.dev, nil)
	if err != nil {
		return nil, err
	}
	if err := e.Record(s); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}
