package highlevel

import (
	"strings"

	"github.com/gocuda/cuda/cudadrv"
)

// A DeviceAttribute names a property of a device that Device.Attribute
// reads (CUdevice_attribute). Each constant is named Device followed by
// CUDA's name in Go's case: CU_DEVICE_ATTRIBUTE_WARP_SIZE is
// DeviceWarpSize, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID DevicePCIBusID. Its value
// is CUDA's. Attributes that are yes-or-no read as 1 or 0.
//
// The constants cover what the package's programs use: limits of a launch,
// the device's memory, caches and clocks, its identity (PCI, NUMA) and the
// features the package's operations rely on. Texture and surface limits,
// the attributes CUDA deprecates and those of Windows and graphics interop
// are left out: cudadrv.DeviceGetAttribute reads them. Device.Attribute
// refuses a value that is none of the constants.
type DeviceAttribute int

// The attributes Device.Attribute reads. DeviceProperties has most of them
// as fields of the same name.
const (
	// DeviceMaxThreadsPerBlock is the most threads a block may have.
	DeviceMaxThreadsPerBlock = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
	// DeviceMaxBlockDimX is the largest x dimension of a block.
	DeviceMaxBlockDimX = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)
	// DeviceMaxBlockDimY is the largest y dimension of a block.
	DeviceMaxBlockDimY = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)
	// DeviceMaxBlockDimZ is the largest z dimension of a block.
	DeviceMaxBlockDimZ = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)
	// DeviceMaxGridDimX is the largest x dimension of a grid, in blocks.
	DeviceMaxGridDimX = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)
	// DeviceMaxGridDimY is the largest y dimension of a grid, in blocks.
	DeviceMaxGridDimY = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)
	// DeviceMaxGridDimZ is the largest z dimension of a grid, in blocks.
	DeviceMaxGridDimZ = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)
	// DeviceMaxSharedMemoryPerBlock is the shared memory in bytes a block
	// may use without its kernel opting in to more (48 KiB).
	DeviceMaxSharedMemoryPerBlock = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)
	// DeviceMaxSharedMemoryPerBlockOptin is the shared memory in bytes a
	// block may use once its kernel opts in with
	// Kernel.SetAttribute(d, KernelMaxDynamicSharedSize, n).
	DeviceMaxSharedMemoryPerBlockOptin = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
	// DeviceMaxSharedMemoryPerMultiprocessor is the shared memory in bytes
	// of one multiprocessor.
	DeviceMaxSharedMemoryPerMultiprocessor = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)
	// DeviceReservedSharedMemoryPerBlock is the shared memory in bytes the
	// driver reserves for each block.
	DeviceReservedSharedMemoryPerBlock = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK)
	// DeviceTotalConstantMemory is the memory in bytes for __constant__
	// variables.
	DeviceTotalConstantMemory = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY)
	// DeviceWarpSize is the number of threads in a warp.
	DeviceWarpSize = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_WARP_SIZE)
	// DeviceMaxPitch is the largest pitch in bytes of a 2D copy.
	DeviceMaxPitch = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_MAX_PITCH)
	// DeviceMaxRegistersPerBlock is the most 32-bit registers a block may
	// use.
	DeviceMaxRegistersPerBlock = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK)
	// DeviceMaxRegistersPerMultiprocessor is the number of 32-bit registers
	// of one multiprocessor.
	DeviceMaxRegistersPerMultiprocessor = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR)
	// DeviceMaxThreadsPerMultiprocessor is the most threads resident on one
	// multiprocessor.
	DeviceMaxThreadsPerMultiprocessor = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)
	// DeviceMaxBlocksPerMultiprocessor is the most blocks resident on one
	// multiprocessor.
	DeviceMaxBlocksPerMultiprocessor = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR)
	// DeviceMultiprocessorCount is the number of multiprocessors (SMs).
	DeviceMultiprocessorCount = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
	// DeviceComputeCapabilityMajor is the major compute capability, 9 for
	// 9.0.
	DeviceComputeCapabilityMajor = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
	// DeviceComputeCapabilityMinor is the minor compute capability, 0 for
	// 9.0.
	DeviceComputeCapabilityMinor = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
	// DeviceClockRate is the typical clock frequency of the multiprocessors
	// in kHz.
	DeviceClockRate = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_CLOCK_RATE)
	// DeviceMemoryClockRate is the peak clock frequency of the memory in
	// kHz.
	DeviceMemoryClockRate = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)
	// DeviceGlobalMemoryBusWidth is the width of the memory bus in bits.
	DeviceGlobalMemoryBusWidth = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)
	// DeviceL2CacheSize is the size of the L2 cache in bytes.
	DeviceL2CacheSize = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_L2_CACHE_SIZE)
	// DeviceMaxPersistingL2CacheSize is the most L2 cache in bytes that may
	// be set aside for persisting accesses.
	DeviceMaxPersistingL2CacheSize = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE)
	// DeviceMaxAccessPolicyWindowSize is the largest access policy window
	// in bytes.
	DeviceMaxAccessPolicyWindowSize = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE)
	// DeviceSingleToDoublePrecisionPerfRatio is the ratio of the device's
	// single precision to its double precision performance.
	DeviceSingleToDoublePrecisionPerfRatio = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO)
	// DeviceTextureAlignment is the alignment in bytes a texture bound to
	// linear memory needs.
	DeviceTextureAlignment = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT)

	// DeviceIntegrated is 1 for a GPU integrated with the host's memory.
	DeviceIntegrated = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_INTEGRATED)
	// DeviceMultiGPUBoard is 1 for a device on a board of several GPUs.
	DeviceMultiGPUBoard = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_MULTI_GPU_BOARD)
	// DeviceMultiGPUBoardGroupID is the same for the devices of one
	// multi-GPU board.
	DeviceMultiGPUBoardGroupID = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID)
	// DevicePCIDomainID is the PCI domain of the device.
	DevicePCIDomainID = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_PCI_DOMAIN_ID)
	// DevicePCIBusID is the PCI bus of the device.
	DevicePCIBusID = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_PCI_BUS_ID)
	// DevicePCIDeviceID is the PCI device (slot) of the device.
	DevicePCIDeviceID = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_PCI_DEVICE_ID)
	// DeviceNUMAConfig is how the device's memory is a NUMA node: 0 not
	// one, 1 a node of its own (CUdeviceNumaConfig).
	DeviceNUMAConfig = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_NUMA_CONFIG)
	// DeviceNUMAID is the NUMA node of the device's memory, -1 for none.
	DeviceNUMAID = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_NUMA_ID)
	// DeviceHostNUMAID is the host NUMA node closest to the device, -1
	// where the system has no NUMA.
	DeviceHostNUMAID = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_HOST_NUMA_ID)
	// DeviceECCEnabled is 1 where the device's memory has ECC turned on.
	DeviceECCEnabled = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_ECC_ENABLED)
	// DeviceComputeMode is the device's compute mode (CUcomputemode): 0
	// default, any number of contexts; 2 prohibited, none; 3 exclusive
	// process, one process's.
	DeviceComputeMode = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_COMPUTE_MODE)
	// DeviceKernelExecTimeout is 1 where the system limits how long a
	// kernel may run (a GPU that also drives a display).
	DeviceKernelExecTimeout = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT)
	// DeviceMPSEnabled is 1 where the device's contexts are shared through
	// MPS.
	DeviceMPSEnabled = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_MPS_ENABLED)

	// DeviceConcurrentKernels is 1 where kernels may run at the same time.
	DeviceConcurrentKernels = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_CONCURRENT_KERNELS)
	// DeviceAsyncEngineCount is the number of copy engines, which copy
	// while kernels run.
	DeviceAsyncEngineCount = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT)
	// DeviceStreamPrioritiesSupported is 1 where streams may have
	// priorities (StreamOptions).
	DeviceStreamPrioritiesSupported = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED)
	// DeviceComputePreemptionSupported is 1 where the device can preempt
	// running kernels.
	DeviceComputePreemptionSupported = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED)
	// DeviceCooperativeLaunch is 1 where kernels may be launched
	// cooperatively (LaunchConfig.Cooperative).
	DeviceCooperativeLaunch = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH)
	// DeviceClusterLaunch is 1 where kernels may be launched in thread
	// block clusters (LaunchConfig.Cluster).
	DeviceClusterLaunch = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_CLUSTER_LAUNCH)
	// DeviceGlobalL1CacheSupported is 1 where global memory may be cached
	// in L1.
	DeviceGlobalL1CacheSupported = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED)
	// DeviceLocalL1CacheSupported is 1 where local memory may be cached in
	// L1.
	DeviceLocalL1CacheSupported = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED)
	// DeviceMemSyncDomainCount is the number of memory synchronization
	// domains.
	DeviceMemSyncDomainCount = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT)
	// DeviceTensorMapAccessSupported is 1 where kernels may access memory
	// through tensor maps (TMA).
	DeviceTensorMapAccessSupported = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_TENSOR_MAP_ACCESS_SUPPORTED)
	// DeviceUnifiedFunctionPointers is 1 where function pointers are the
	// same on the host and the device.
	DeviceUnifiedFunctionPointers = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_UNIFIED_FUNCTION_POINTERS)

	// DeviceUnifiedAddressing is 1 where the device shares one address
	// space with the host.
	DeviceUnifiedAddressing = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING)
	// DeviceManagedMemory is 1 where the device can allocate managed
	// memory (Managed).
	DeviceManagedMemory = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_MANAGED_MEMORY)
	// DeviceConcurrentManagedAccess is 1 where the device and the host may
	// use managed memory at the same time.
	DeviceConcurrentManagedAccess = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS)
	// DevicePageableMemoryAccess is 1 where kernels may use pageable host
	// memory, registered or not.
	DevicePageableMemoryAccess = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS)
	// DevicePageableMemoryAccessUsesHostPageTables is 1 where the device
	// reaches pageable memory through the host's page tables.
	DevicePageableMemoryAccessUsesHostPageTables = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES)
	// DeviceDirectManagedMemAccessFromHost is 1 where the host may use
	// managed memory on the device without migrating it.
	DeviceDirectManagedMemAccessFromHost = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST)
	// DeviceCanMapHostMemory is 1 where pinned host memory may be mapped
	// into the device's address space.
	DeviceCanMapHostMemory = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY)
	// DeviceCanUseHostPointerForRegisteredMem is 1 where the device uses
	// registered host memory at the host's addresses.
	DeviceCanUseHostPointerForRegisteredMem = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM)
	// DeviceHostRegisterSupported is 1 where host memory may be registered
	// (HostRegister).
	DeviceHostRegisterSupported = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED)
	// DeviceReadOnlyHostRegisterSupported is 1 where host memory may be
	// registered read-only for the device.
	DeviceReadOnlyHostRegisterSupported = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED)
	// DeviceHostNativeAtomicSupported is 1 where the link to the host
	// supports native atomic operations.
	DeviceHostNativeAtomicSupported = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED)
	// DeviceMemoryPoolsSupported is 1 where the device has CUDA memory
	// pools (MemoryAsyncPool, AllocAsync).
	DeviceMemoryPoolsSupported = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED)
	// DeviceMemoryPoolSupportedHandleTypes is the bit mask of the handle
	// types a memory pool may be shared with (CUmemAllocationHandleType).
	DeviceMemoryPoolSupportedHandleTypes = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES)
	// DeviceVirtualMemoryManagementSupported is 1 where the device has
	// CUDA's virtual memory management (cuMemCreate, cuMemMap).
	DeviceVirtualMemoryManagementSupported = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)
	// DeviceGenericCompressionSupported is 1 where the device can compress
	// memory.
	DeviceGenericCompressionSupported = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED)
	// DeviceIPCEventSupported is 1 where events may be shared between
	// processes (EventOptions.Interprocess).
	DeviceIPCEventSupported = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED)
	// DeviceHandleTypePOSIXFileDescriptorSupported is 1 where memory may be
	// exported as a file descriptor.
	DeviceHandleTypePOSIXFileDescriptorSupported = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED)
	// DeviceHandleTypeFabricSupported is 1 where memory may be exported as
	// a fabric handle.
	DeviceHandleTypeFabricSupported = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED)
	// DeviceDMABufSupported is 1 where memory may be shared through
	// dma_buf.
	DeviceDMABufSupported = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED)
	// DeviceMulticastSupported is 1 where the device supports NVLink
	// switch multicast and reductions.
	DeviceMulticastSupported = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED)
	// DeviceGPUDirectRDMASupported is 1 where the device supports
	// GPUDirect RDMA.
	DeviceGPUDirectRDMASupported = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED)
	// DeviceGPUDirectRDMAWithCUDAVMMSupported is 1 where memory made with
	// cuMemCreate may be used for GPUDirect RDMA.
	DeviceGPUDirectRDMAWithCUDAVMMSupported = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED)
	// DeviceGPUDirectRDMAFlushWritesOptions is the bit mask of the ways
	// GPUDirect RDMA writes may be flushed
	// (CUflushGPUDirectRDMAWritesOptions).
	DeviceGPUDirectRDMAFlushWritesOptions = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS)
	// DeviceGPUDirectRDMAWritesOrdering is the scope within which
	// GPUDirect RDMA writes need no flush (CUGPUDirectRDMAWritesOrdering).
	DeviceGPUDirectRDMAWritesOrdering = DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING)
)

// deviceAttributeLimit is one past the largest DeviceAttribute constant:
// it bounds the attribute cache of a device. TestAttributeLimits checks it.
const deviceAttributeLimit = DeviceHostNUMAID + 1

// deviceAttributeKnown marks the constants: stringer names every other
// value "DeviceAttribute(N)". A table, since Device.Attribute asks on each
// call, and a cached attribute costs about 20 ns in all.
var deviceAttributeKnown = func() (k [deviceAttributeLimit]bool) {
	for i := range k {
		k[i] = !strings.HasSuffix(DeviceAttribute(i).String(), ")")
	}
	return k
}()

// known reports whether a is one of the constants.
func (a DeviceAttribute) known() bool {
	return uint(a) < uint(deviceAttributeLimit) && deviceAttributeKnown[a]
}

// A KernelAttribute names a setting of a kernel on a device that
// Kernel.SetAttribute changes (CUfunction_attribute): only those CUDA lets
// a program set. Each constant is named Kernel followed by the field of
// KernelAttributes that reads it back; its value is CUDA's. Kernel.Attributes
// reads them all, with the kernel's fixed attributes.
type KernelAttribute int

// The attributes Kernel.SetAttribute sets.
const (
	// KernelMaxDynamicSharedSize is the most dynamic shared memory in bytes
	// a launch may ask for (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES).
	// Beyond 48 KiB a kernel must raise it before a launch asks for more, up
	// to the device's DeviceMaxSharedMemoryPerBlockOptin less the kernel's
	// static shared memory.
	KernelMaxDynamicSharedSize = KernelAttribute(cudadrv.FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
	// KernelPreferredSharedCarveout is the share of the L1 cache and shared
	// memory the kernel prefers as shared memory, in percent, or -1 for no
	// preference (CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT). It
	// is a hint the driver may overrule.
	KernelPreferredSharedCarveout = KernelAttribute(cudadrv.FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT)
	// KernelRequiredClusterWidth is the x dimension in blocks of the
	// clusters the kernel must be launched with
	// (CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH). The three dimensions are
	// all 0 or all positive; a kernel compiled with them cannot change them.
	KernelRequiredClusterWidth = KernelAttribute(cudadrv.FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH)
	// KernelRequiredClusterHeight is the y dimension of the required
	// clusters (see KernelRequiredClusterWidth).
	KernelRequiredClusterHeight = KernelAttribute(cudadrv.FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT)
	// KernelRequiredClusterDepth is the z dimension of the required
	// clusters (see KernelRequiredClusterWidth).
	KernelRequiredClusterDepth = KernelAttribute(cudadrv.FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH)
	// KernelNonPortableClusterSizeAllowed is 1 to let the kernel launch in
	// clusters larger than the portable size, which every later GPU runs
	// (8 blocks), 0 to refuse them: such a size may work only on some GPUs.
	KernelNonPortableClusterSizeAllowed = KernelAttribute(cudadrv.FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED)
	// KernelClusterSchedulingPolicyPreference is how the blocks of a
	// cluster are placed on the multiprocessors (CUclusterSchedulingPolicy):
	// 0 the default, 1 spread, 2 load-balancing.
	KernelClusterSchedulingPolicyPreference = KernelAttribute(cudadrv.FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE)
)

// known reports whether a is one of the constants: stringer names every
// other value "KernelAttribute(N)".
func (a KernelAttribute) known() bool {
	return a >= 0 && !strings.HasSuffix(a.String(), ")")
}
