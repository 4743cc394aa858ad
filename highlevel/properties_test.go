package highlevel

import (
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/gocuda/cuda/cudadrv"
	"github.com/gocuda/cuda/cudart"
)

// h200Prop is the part of cudaGetDeviceProperties' answer for an H200 that
// DeviceProperties holds.
func h200Prop() cudart.DeviceProp {
	p := cudart.DeviceProp{
		TotalGlobalMem: 150109880320, SharedMemPerBlock: 49152, RegsPerBlock: 65536, WarpSize: 32,
		MemPitch: 2147483647, MaxThreadsPerBlock: 1024,
		MaxThreadsDim: [3]int32{1024, 1024, 64}, MaxGridSize: [3]int32{2147483647, 65535, 65535},
		TotalConstMem: 65536, Major: 9, Minor: 0, TextureAlignment: 512, MultiProcessorCount: 132,
		CanMapHostMemory: 1, ConcurrentKernels: 1, ECCEnabled: 1, PciBusID: 0x19, PciDeviceID: 0, PciDomainID: 0,
		AsyncEngineCount: 3, UnifiedAddressing: 1, MemoryBusWidth: 6144, L2CacheSize: 52428800,
		PersistingL2CacheMaxSize: 85983232, MaxThreadsPerMultiProcessor: 2048, StreamPrioritiesSupported: 1,
		GlobalL1CacheSupported: 1, LocalL1CacheSupported: 1, SharedMemPerMultiprocessor: 233472,
		RegsPerMultiprocessor: 65536, ManagedMemory: 1, ConcurrentManagedAccess: 1,
		ComputePreemptionSupported: 1, CooperativeLaunch: 1, SharedMemPerBlockOptin: 232448,
		DirectManagedMemAccessFromHost: 0, MaxBlocksPerMultiProcessor: 32, AccessPolicyMaxWindowSize: 134213632,
		ReservedSharedMemPerBlock: 1024, HostRegisterSupported: 1, HostRegisterReadOnlySupported: 1,
		MemoryPoolsSupported: 1, GpuDirectRDMASupported: 1, GpuDirectRDMAFlushWritesOptions: 1,
		GpuDirectRDMAWritesOrdering: 100, MemoryPoolSupportedHandleTypes: 9, IpcEventSupported: 1, ClusterLaunch: 1,
	}
	copy(p.Name[:], "NVIDIA H200\x00garbage after the NUL")
	p.Uuid.Bytes = [16]byte{0x9a, 0x1b, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0xff}
	return p
}

func TestPropertiesOf(t *testing.T) {
	h200 := DeviceProperties{
		Name: "NVIDIA H200", UUID: [16]byte{0x9a, 0x1b, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0xff},
		TotalMemory: 150109880320, Major: 9, Minor: 0,
		MultiprocessorCount: 132, MaxThreadsPerBlock: 1024,
		MaxBlockDim: [3]int{1024, 1024, 64}, MaxGridDim: [3]int{2147483647, 65535, 65535},
		MaxThreadsPerMultiprocessor: 2048, MaxBlocksPerMultiprocessor: 32, WarpSize: 32,
		MaxRegistersPerBlock: 65536, MaxRegistersPerMultiprocessor: 65536,
		MaxSharedMemoryPerBlock: 49152, MaxSharedMemoryPerBlockOptin: 232448, MaxSharedMemoryPerMultiprocessor: 233472,
		ReservedSharedMemoryPerBlock: 1024, TotalConstantMemory: 65536,
		GlobalMemoryBusWidth: 6144, L2CacheSize: 52428800, MaxPersistingL2CacheSize: 85983232,
		MaxAccessPolicyWindowSize: 134213632, MaxPitch: 2147483647, TextureAlignment: 512,
		ConcurrentKernels: true, AsyncEngineCount: 3, StreamPrioritiesSupported: true, ComputePreemptionSupported: true,
		CooperativeLaunch: true, ClusterLaunch: true, GlobalL1CacheSupported: true, LocalL1CacheSupported: true,
		PCIBusID: 0x19, ECCEnabled: true,
		UnifiedAddressing: true, ManagedMemory: true, ConcurrentManagedAccess: true, CanMapHostMemory: true,
		HostRegisterSupported: true, ReadOnlyHostRegisterSupported: true, MemoryPoolsSupported: true,
		MemoryPoolSupportedHandleTypes: 9, IPCEventSupported: true, GPUDirectRDMASupported: true,
		GPUDirectRDMAFlushWritesOptions: 1, GPUDirectRDMAWritesOrdering: 100,
	}
	integrated := h200Prop()
	integrated.Integrated, integrated.PageableMemoryAccess, integrated.PageableMemoryAccessUsesHostPageTables = 1, 1, 1
	integrated.IsMultiGpuBoard, integrated.MultiGpuBoardGroupID, integrated.UnifiedFunctionPointers = 1, 7, 1
	integrated.CanUseHostPointerForRegisteredMem, integrated.HostNativeAtomicSupported, integrated.DirectManagedMemAccessFromHost = 1, 1, 1
	integrated.PciDomainID, integrated.PciDeviceID = 2, 3
	wantIntegrated := h200
	wantIntegrated.Integrated, wantIntegrated.PageableMemoryAccess, wantIntegrated.PageableMemoryAccessUsesHostPageTables = true, true, true
	wantIntegrated.MultiGPUBoard, wantIntegrated.MultiGPUBoardGroupID, wantIntegrated.UnifiedFunctionPointers = true, 7, true
	wantIntegrated.CanUseHostPointerForRegisteredMem, wantIntegrated.HostNativeAtomicSupported, wantIntegrated.DirectManagedMemAccessFromHost = true, true, true
	wantIntegrated.PCIDomainID, wantIntegrated.PCIDeviceID = 2, 3
	var noNUL cudart.DeviceProp // a name that fills the array
	copy(noNUL.Name[:], strings.Repeat("a", len(noNUL.Name)))
	for _, tc := range []struct {
		name string
		p    cudart.DeviceProp
		want DeviceProperties
	}{
		{"H200", h200Prop(), h200},
		{"integrated", integrated, wantIntegrated},
		{"zero", cudart.DeviceProp{}, DeviceProperties{}},
		{"name without NUL", noNUL, DeviceProperties{Name: strings.Repeat("a", 256)}},
	} {
		if got := propertiesOf(&tc.p); got != tc.want {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
}

// TestPropertiesOfEveryField fills every field of a cudaDeviceProp and
// checks that every field of DeviceProperties is filled from it, and named
// as the attribute it holds: none is forgotten when a field is added.
func TestPropertiesOfEveryField(t *testing.T) {
	var p cudart.DeviceProp
	fill(reflect.ValueOf(&p).Elem())
	got := reflect.ValueOf(propertiesOf(&p))
	notAttributes := map[string]bool{"Name": true, "UUID": true, "TotalMemory": true, "Major": true, "Minor": true, "MaxBlockDim": true, "MaxGridDim": true}
	known := make(map[string]bool)
	for _, name := range deviceAttributeNames {
		known[name] = true
	}
	for i := range got.NumField() {
		f := got.Type().Field(i)
		if got.Field(i).IsZero() {
			t.Errorf("DeviceProperties.%s is not filled", f.Name)
		}
		if !notAttributes[f.Name] && !known[f.Name] {
			t.Errorf("DeviceProperties.%s is named as no DeviceAttribute", f.Name)
		}
	}
}

// fill sets every number of v, whatever its nesting, to one that is not 0.
func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			fill(v.Field(i))
		}
	case reflect.Array:
		for i := range v.Len() {
			fill(v.Index(i))
		}
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Int:
		v.SetInt(1)
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uint, reflect.Uintptr:
		v.SetUint(1)
	}
}

// TestStreamHandleType checks that a Stream's handle is one value for
// cudart and cudadrv: the same size and kind, so that converting between
// them is exact.
func TestStreamHandleType(t *testing.T) {
	rt, drv := reflect.TypeFor[cudart.Stream](), reflect.TypeFor[cudadrv.Stream]()
	if rt.Kind() != reflect.Uintptr || drv.Kind() != reflect.Uintptr || unsafe.Sizeof(cudart.Stream(0)) != unsafe.Sizeof(cudadrv.Stream(0)) {
		t.Errorf("cudart.Stream is a %v, cudadrv.Stream a %v", rt.Kind(), drv.Kind())
	}
	if h := (&Stream{h: cudadrv.Stream(cudadrv.STREAM_PER_THREAD)}).Handle(); h != cudart.StreamPerThread {
		t.Errorf("per-thread stream's handle %#x, want cudart.StreamPerThread", h)
	}
	if h := (*Stream)(nil).Handle(); h != 0 {
		t.Errorf("nil Stream's handle %#x, want 0", h)
	}
}
