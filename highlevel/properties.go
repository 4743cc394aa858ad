package highlevel

import (
	"strings"

	"github.com/gocuda/cuda/cudart"
)

// DeviceProperties are a device's properties, as Device.Properties reads
// them. A field named as a DeviceAttribute (without "Device") holds that
// attribute's value, yes-or-no ones as bools; sizes are in bytes.
//
// DeviceDataFromProperties reads only Major, Minor, MultiprocessorCount,
// MaxThreadsPerBlock, MaxThreadsPerMultiprocessor, WarpSize, the two
// register counts, the four shared memory sizes and TextureAlignment: a
// program may fill those alone to compute the occupancy of a device it
// does not have.
type DeviceProperties struct {
	Name        string   // "NVIDIA H200"
	UUID        [16]byte // the device's UUID, as nvidia-smi -L shows it
	TotalMemory int      // global memory
	// Major and Minor are the compute capability, 9 and 0 for 9.0
	// (DeviceComputeCapabilityMajor and Minor).
	Major, Minor int

	MultiprocessorCount         int
	MaxThreadsPerBlock          int
	MaxBlockDim                 [3]int // DeviceMaxBlockDimX, Y and Z
	MaxGridDim                  [3]int // DeviceMaxGridDimX, Y and Z
	MaxThreadsPerMultiprocessor int
	MaxBlocksPerMultiprocessor  int
	WarpSize                    int

	MaxRegistersPerBlock          int
	MaxRegistersPerMultiprocessor int

	MaxSharedMemoryPerBlock          int // without opting in
	MaxSharedMemoryPerBlockOptin     int
	MaxSharedMemoryPerMultiprocessor int
	ReservedSharedMemoryPerBlock     int
	TotalConstantMemory              int

	GlobalMemoryBusWidth      int // bits
	L2CacheSize               int
	MaxPersistingL2CacheSize  int
	MaxAccessPolicyWindowSize int
	MaxPitch                  int
	TextureAlignment          int

	ConcurrentKernels          bool
	AsyncEngineCount           int
	StreamPrioritiesSupported  bool
	ComputePreemptionSupported bool
	CooperativeLaunch          bool
	ClusterLaunch              bool
	GlobalL1CacheSupported     bool
	LocalL1CacheSupported      bool
	UnifiedFunctionPointers    bool

	Integrated           bool
	MultiGPUBoard        bool
	MultiGPUBoardGroupID int
	PCIDomainID          int
	PCIBusID             int
	PCIDeviceID          int
	ECCEnabled           bool

	UnifiedAddressing                      bool
	ManagedMemory                          bool
	ConcurrentManagedAccess                bool
	PageableMemoryAccess                   bool
	PageableMemoryAccessUsesHostPageTables bool
	DirectManagedMemAccessFromHost         bool
	CanMapHostMemory                       bool
	CanUseHostPointerForRegisteredMem      bool
	HostRegisterSupported                  bool
	ReadOnlyHostRegisterSupported          bool
	HostNativeAtomicSupported              bool
	MemoryPoolsSupported                   bool
	MemoryPoolSupportedHandleTypes         int // a bit mask
	IPCEventSupported                      bool
	GPUDirectRDMASupported                 bool
	GPUDirectRDMAFlushWritesOptions        int // a bit mask
	GPUDirectRDMAWritesOrdering            int
}

// propertiesOf returns the properties p, as cudaGetDeviceProperties
// fills it, describes.
func propertiesOf(p *cudart.DeviceProp) DeviceProperties {
	name, _, _ := strings.Cut(string(p.Name[:]), "\x00")
	dims := func(v [3]int32) [3]int { return [3]int{int(v[0]), int(v[1]), int(v[2])} }
	return DeviceProperties{
		Name:        name,
		UUID:        p.Uuid.Bytes,
		TotalMemory: int(p.TotalGlobalMem),
		Major:       int(p.Major),
		Minor:       int(p.Minor),

		MultiprocessorCount:         int(p.MultiProcessorCount),
		MaxThreadsPerBlock:          int(p.MaxThreadsPerBlock),
		MaxBlockDim:                 dims(p.MaxThreadsDim),
		MaxGridDim:                  dims(p.MaxGridSize),
		MaxThreadsPerMultiprocessor: int(p.MaxThreadsPerMultiProcessor),
		MaxBlocksPerMultiprocessor:  int(p.MaxBlocksPerMultiProcessor),
		WarpSize:                    int(p.WarpSize),

		MaxRegistersPerBlock:          int(p.RegsPerBlock),
		MaxRegistersPerMultiprocessor: int(p.RegsPerMultiprocessor),

		MaxSharedMemoryPerBlock:          int(p.SharedMemPerBlock),
		MaxSharedMemoryPerBlockOptin:     int(p.SharedMemPerBlockOptin),
		MaxSharedMemoryPerMultiprocessor: int(p.SharedMemPerMultiprocessor),
		ReservedSharedMemoryPerBlock:     int(p.ReservedSharedMemPerBlock),
		TotalConstantMemory:              int(p.TotalConstMem),

		GlobalMemoryBusWidth:      int(p.MemoryBusWidth),
		L2CacheSize:               int(p.L2CacheSize),
		MaxPersistingL2CacheSize:  int(p.PersistingL2CacheMaxSize),
		MaxAccessPolicyWindowSize: int(p.AccessPolicyMaxWindowSize),
		MaxPitch:                  int(p.MemPitch),
		TextureAlignment:          int(p.TextureAlignment),

		ConcurrentKernels:          p.ConcurrentKernels != 0,
		AsyncEngineCount:           int(p.AsyncEngineCount),
		StreamPrioritiesSupported:  p.StreamPrioritiesSupported != 0,
		ComputePreemptionSupported: p.ComputePreemptionSupported != 0,
		CooperativeLaunch:          p.CooperativeLaunch != 0,
		ClusterLaunch:              p.ClusterLaunch != 0,
		GlobalL1CacheSupported:     p.GlobalL1CacheSupported != 0,
		LocalL1CacheSupported:      p.LocalL1CacheSupported != 0,
		UnifiedFunctionPointers:    p.UnifiedFunctionPointers != 0,

		Integrated:           p.Integrated != 0,
		MultiGPUBoard:        p.IsMultiGpuBoard != 0,
		MultiGPUBoardGroupID: int(p.MultiGpuBoardGroupID),
		PCIDomainID:          int(p.PciDomainID),
		PCIBusID:             int(p.PciBusID),
		PCIDeviceID:          int(p.PciDeviceID),
		ECCEnabled:           p.ECCEnabled != 0,

		UnifiedAddressing:                      p.UnifiedAddressing != 0,
		ManagedMemory:                          p.ManagedMemory != 0,
		ConcurrentManagedAccess:                p.ConcurrentManagedAccess != 0,
		PageableMemoryAccess:                   p.PageableMemoryAccess != 0,
		PageableMemoryAccessUsesHostPageTables: p.PageableMemoryAccessUsesHostPageTables != 0,
		DirectManagedMemAccessFromHost:         p.DirectManagedMemAccessFromHost != 0,
		CanMapHostMemory:                       p.CanMapHostMemory != 0,
		CanUseHostPointerForRegisteredMem:      p.CanUseHostPointerForRegisteredMem != 0,
		HostRegisterSupported:                  p.HostRegisterSupported != 0,
		ReadOnlyHostRegisterSupported:          p.HostRegisterReadOnlySupported != 0,
		HostNativeAtomicSupported:              p.HostNativeAtomicSupported != 0,
		MemoryPoolsSupported:                   p.MemoryPoolsSupported != 0,
		MemoryPoolSupportedHandleTypes:         int(p.MemoryPoolSupportedHandleTypes),
		IPCEventSupported:                      p.IpcEventSupported != 0,
		GPUDirectRDMASupported:                 p.GpuDirectRDMASupported != 0,
		GPUDirectRDMAFlushWritesOptions:        int(p.GpuDirectRDMAFlushWritesOptions),
		GPUDirectRDMAWritesOrdering:            int(p.GpuDirectRDMAWritesOrdering),
	}
}
