package highlevel

import (
	"errors"
	"fmt"
	"math"
)

// This file is PyCUDA's occupancy calculator (pycuda.tools.DeviceData and
// OccupancyRecord) for sm_70 to sm_121. The computation follows the CUDA
// 13.0 header cuda_occupancy.h (cudaOccMaxActiveBlocksPerMultiprocessor and
// the per-architecture functions it calls), so that it gives what
// cudaOccupancyMaxActiveBlocksPerMultiprocessor gives on the device, and it
// needs no GPU: DeviceDataFromProperties takes a DeviceProperties.

var (
	// ErrUnsupportedArch is returned by NewDeviceData and
	// DeviceDataFromProperties for a compute capability the occupancy
	// calculator does not know: below 7.0, or one that cuda_occupancy.h of
	// CUDA 13.0 has no tables for. The error that wraps it names the
	// architecture.
	ErrUnsupportedArch = errors.New("highlevel: architecture not supported by the occupancy calculator")
	// ErrBlockTooLarge is returned by DeviceData.Occupancy when a block of
	// the given shape cannot run on the device at all: too many threads,
	// registers or bytes of shared memory for one block. The error that
	// wraps it says which.
	ErrBlockTooLarge = errors.New("highlevel: block too large for the device")
)

// DeviceData describes what limits how many blocks fit on one
// multiprocessor (SM) of a device: PyCUDA's pycuda.tools.DeviceData for
// current GPUs. Counts are per SM unless a field's name says per block. Its
// sizes come from the device's properties, its allocation rules and block
// slots from cuda_occupancy.h's per-architecture tables.
//
// The zero value describes no device: make one with NewDeviceData or
// DeviceDataFromProperties. Align, AlignWords, AlignElems and Coalesce
// return 0 for it, and Occupancy an error wrapping ErrNil.
type DeviceData struct {
	// Major is the major compute capability, 9 on sm_90.
	Major int
	// Minor is the minor compute capability, 0 on sm_90.
	Minor int
	// Multiprocessors is the number of SMs: a grid of Multiprocessors x
	// OccupancyRecord.TBPerMP blocks fills the device once.
	Multiprocessors int
	// MaxThreads is the most threads one block may have (PyCUDA's
	// max_threads), 1024 on every supported GPU.
	MaxThreads int
	// WarpSize is the number of threads in a warp, 32.
	WarpSize int
	// WarpsPerMP is the most warps resident on one SM (PyCUDA's
	// warps_per_mp): MaxThreadsPerMultiprocessor / WarpSize, 64 on sm_70,
	// sm_80, sm_90 and sm_100, 48 on sm_86, sm_89 and sm_120, 32 on sm_75.
	WarpsPerMP int
	// ThreadBlocksPerMP is the most blocks resident on one SM whatever
	// their size (PyCUDA's thread_blocks_per_mp), from cuda_occupancy.h's
	// cudaOccMaxBlocksPerMultiprocessor: 32 on sm_70, sm_80, sm_90, sm_100;
	// 24 on sm_89, sm_110 and sm_12x; 16 on sm_75, sm_86 and sm_87.
	ThreadBlocksPerMP int
	// Registers is the number of 32-bit registers of one SM (PyCUDA's
	// registers), 65536.
	Registers int
	// RegistersPerBlock is the most 32-bit registers one block may use,
	// 65536.
	RegistersPerBlock int
	// MaxRegistersPerThread is the most registers one thread may use, 255
	// (cuda_occupancy.h's cudaOccRegAllocationMaxPerThread allows 256, but
	// the compiler never allocates more than 255).
	MaxRegistersPerThread int
	// SharedMemory is the shared memory of one SM in bytes (PyCUDA's
	// shared_memory was the per-block figure of its day), 228 KiB on sm_90:
	// the largest carveout, of which the driver reserves
	// ReservedSharedMemoryPerBlock for each resident block.
	SharedMemory int
	// SharedMemoryPerBlock is the most shared memory in bytes, static plus
	// dynamic, one block may use once its kernel opts in with
	// KernelMaxDynamicSharedSize (DeviceMaxSharedMemoryPerBlockOptin),
	// 227 KiB on sm_90.
	SharedMemoryPerBlock int
	// SharedMemoryPerBlockDefault is the most shared memory in bytes one
	// block may use without opting in (DeviceMaxSharedMemoryPerBlock),
	// 48 KiB.
	SharedMemoryPerBlockDefault int
	// ReservedSharedMemoryPerBlock is the shared memory in bytes the driver
	// reserves for each block on top of what the kernel asks for, 1 KiB
	// from sm_80 on and 0 on sm_7x.
	ReservedSharedMemoryPerBlock int
	// SmemGranularity is the number of shared memory banks (PyCUDA's
	// smem_granularity, then 16, the threads of a half-warp). Today there
	// are 32 banks of 4 bytes: the 32 threads of a warp reading 32
	// consecutive 4-byte words touch each bank once and run without bank
	// conflicts, so pad a shared array's rows to a multiple of 32 words
	// plus one to read its columns without conflicts.
	SmemGranularity int
	// SmemAllocGranularity is the unit in bytes in which shared memory is
	// given to a block (cudaOccSMemAllocationGranularity): 256 on sm_7x,
	// 128 from sm_80 on. A block's static and dynamic shared memory plus
	// ReservedSharedMemoryPerBlock is rounded up to it.
	SmemAllocGranularity int
	// RegAllocGranularity is the unit in which registers are given to a
	// warp (cudaOccRegAllocationGranularity), 256: a warp of threads with
	// r registers each holds r*WarpSize registers rounded up to it.
	RegAllocGranularity int
	// RegAllocUnit is what registers are allocated to (PyCUDA's
	// register_allocation_unit): "warp" on every supported GPU.
	RegAllocUnit string
	// SubPartitions is the number of sub-partitions (warp schedulers) of an
	// SM (cudaOccSubPartitionsPerMultiprocessor), 4. Each has a quarter of
	// the registers, and a warp lives in one, so the SM holds SubPartitions
	// x (Registers/SubPartitions / registers per warp) warps; the hardware
	// also checks a block against RegistersPerBlock as if its warps were
	// rounded up to a multiple of SubPartitions.
	SubPartitions int
	// AlignBytes is the alignment in bytes at which a warp's accesses to
	// global memory coalesce best, 128: one L1 cache line (four 32-byte
	// sectors), what a warp's 32 4-byte loads cover. PyCUDA's
	// align_bytes(word_size) was 64 or 128, for the half-warps of compute
	// 1.x; today it does not depend on the word size.
	AlignBytes int
	// TextureAlignment is the alignment in bytes a texture bound to linear
	// memory needs (DeviceTextureAlignment), 512.
	TextureAlignment int
}

// NewDeviceData returns the DeviceData of device d, from its attributes:
// DeviceDataFromProperties of the properties it reads, the fields of
// DeviceProperties that it needs, read from the driver.
func NewDeviceData(d Device) (DeviceData, error) {
	var p DeviceProperties
	for _, f := range []struct {
		attr DeviceAttribute
		v    *int
	}{
		{DeviceComputeCapabilityMajor, &p.Major},
		{DeviceComputeCapabilityMinor, &p.Minor},
		{DeviceMultiprocessorCount, &p.MultiprocessorCount},
		{DeviceMaxThreadsPerBlock, &p.MaxThreadsPerBlock},
		{DeviceMaxThreadsPerMultiprocessor, &p.MaxThreadsPerMultiprocessor},
		{DeviceWarpSize, &p.WarpSize},
		{DeviceMaxRegistersPerMultiprocessor, &p.MaxRegistersPerMultiprocessor},
		{DeviceMaxRegistersPerBlock, &p.MaxRegistersPerBlock},
		{DeviceMaxSharedMemoryPerMultiprocessor, &p.MaxSharedMemoryPerMultiprocessor},
		{DeviceMaxSharedMemoryPerBlockOptin, &p.MaxSharedMemoryPerBlockOptin},
		{DeviceMaxSharedMemoryPerBlock, &p.MaxSharedMemoryPerBlock},
		{DeviceReservedSharedMemoryPerBlock, &p.ReservedSharedMemoryPerBlock},
		{DeviceTextureAlignment, &p.TextureAlignment},
	} {
		v, err := d.Attribute(f.attr)
		if err != nil {
			return DeviceData{}, err
		}
		*f.v = v
	}
	return DeviceDataFromProperties(&p)
}

// DeviceDataFromProperties returns the DeviceData of a device with
// properties p, as Device.Properties gives them (DeviceProperties says
// which fields it reads); it calls no CUDA function, so it works for any
// device without one. It returns an error
// wrapping ErrUnsupportedArch, naming the architecture, below sm_70 or for
// an architecture cuda_occupancy.h does not know (sm_70 to sm_121 are
// known, with sm_10x and sm_11x minors 0, 1 and 3 and sm_12x minors 0 and
// 1), and an error for a nil p or properties a device cannot have.
func DeviceDataFromProperties(p *DeviceProperties) (DeviceData, error) {
	if p == nil {
		return DeviceData{}, invalid("highlevel: DeviceDataFromProperties: nil properties")
	}
	major, minor := p.Major, p.Minor
	if occCarveouts(major, minor) == nil {
		return DeviceData{}, fmt.Errorf("%w: compute capability %d.%d (sm_%d%d)", ErrUnsupportedArch, major, minor, major, minor)
	}
	dd := DeviceData{
		Major:                        major,
		Minor:                        minor,
		Multiprocessors:              p.MultiprocessorCount,
		MaxThreads:                   p.MaxThreadsPerBlock,
		WarpSize:                     p.WarpSize,
		ThreadBlocksPerMP:            occMaxBlocksPerSM(major, minor),
		Registers:                    p.MaxRegistersPerMultiprocessor,
		RegistersPerBlock:            p.MaxRegistersPerBlock,
		MaxRegistersPerThread:        255,
		SharedMemory:                 p.MaxSharedMemoryPerMultiprocessor,
		SharedMemoryPerBlock:         p.MaxSharedMemoryPerBlockOptin,
		SharedMemoryPerBlockDefault:  p.MaxSharedMemoryPerBlock,
		ReservedSharedMemoryPerBlock: p.ReservedSharedMemoryPerBlock,
		SmemGranularity:              32,
		SmemAllocGranularity:         128,
		RegAllocGranularity:          256,
		RegAllocUnit:                 "warp",
		SubPartitions:                4,
		AlignBytes:                   128,
		TextureAlignment:             p.TextureAlignment,
	}
	if major == 7 {
		dd.SmemAllocGranularity = 256
	}
	if dd.SharedMemoryPerBlock < dd.SharedMemoryPerBlockDefault {
		dd.SharedMemoryPerBlock = dd.SharedMemoryPerBlockDefault
	}
	bad := func(what string, v int) (DeviceData, error) {
		return DeviceData{}, invalid("highlevel: sm_%d%d properties: %s %d is impossible", major, minor, what, v)
	}
	// cudaOccDevicePropCheck: every limit is positive.
	switch {
	case dd.MaxThreads <= 0:
		return bad("MaxThreadsPerBlock", dd.MaxThreads)
	case p.MaxThreadsPerMultiprocessor <= 0:
		return bad("MaxThreadsPerMultiprocessor", p.MaxThreadsPerMultiprocessor)
	case dd.WarpSize <= 0:
		return bad("WarpSize", dd.WarpSize)
	case dd.RegistersPerBlock <= 0:
		return bad("MaxRegistersPerBlock", dd.RegistersPerBlock)
	case dd.Registers <= 0:
		return bad("MaxRegistersPerMultiprocessor", dd.Registers)
	case dd.SharedMemoryPerBlockDefault <= 0:
		return bad("MaxSharedMemoryPerBlock", dd.SharedMemoryPerBlockDefault)
	case dd.SharedMemory <= 0:
		return bad("MaxSharedMemoryPerMultiprocessor", dd.SharedMemory)
	case dd.Multiprocessors <= 0:
		return bad("MultiprocessorCount", dd.Multiprocessors)
	case dd.ReservedSharedMemoryPerBlock < 0:
		return bad("ReservedSharedMemoryPerBlock", dd.ReservedSharedMemoryPerBlock)
	}
	// The default carveout is the SM's shared memory rounded up to a
	// carveout the architecture has; without one every computation of
	// cuda_occupancy.h fails.
	if _, ok := occAlignUpCarveout(major, minor, dd.SharedMemory); !ok {
		return bad("MaxSharedMemoryPerMultiprocessor", dd.SharedMemory)
	}
	dd.WarpsPerMP = p.MaxThreadsPerMultiprocessor / dd.WarpSize
	return dd, nil
}

// Align returns bytes rounded up to a multiple of AlignBytes (PyCUDA's
// align(bytes); its word_size argument no longer matters).
func (dd DeviceData) Align(bytes int) int {
	return occRoundUp(bytes, dd.AlignBytes)
}

// AlignWords returns the fewest words of wordSize bytes that make a
// multiple of AlignBytes (PyCUDA's align_words(word_size)): 32 for 4-byte
// words, 16 for 8, 8 for 16, 128 for 3. A word size below 1 counts as 1.
func (dd DeviceData) AlignWords(wordSize int) int {
	a, b := dd.AlignBytes, max(wordSize, 1)
	for b != 0 {
		a, b = b, a%b
	}
	return dd.AlignBytes / a
}

// AlignElems returns n rounded up to a multiple of AlignWords(elemSize): the
// length to give an array of n elements of elemSize bytes so that the next
// array starts aligned. It is PyCUDA's align_dtype(elements, dtype_size),
// with elemSize for the dtype's size (unsafe.Sizeof of a Go element).
func (dd DeviceData) AlignElems(n, elemSize int) int {
	return occRoundUp(n, dd.AlignWords(elemSize))
}

// Coalesce returns threads rounded up to a multiple of WarpSize (PyCUDA's
// coalesce, which rounded to the 16 threads of a half-warp): the unit in
// which threads are scheduled.
func (dd DeviceData) Coalesce(threads int) int {
	return occRoundUp(threads, dd.WarpSize)
}

// ValidTextureChannelCount returns the number of channels, 1, 2 or 4, a
// texture element needs to hold n values (PyCUDA's
// make_valid_tex_channel_count): the smallest of them not below n. It
// returns an error for n above 4 or below 1.
func (dd DeviceData) ValidTextureChannelCount(n int) (int, error) {
	for _, c := range [...]int{1, 2, 4} {
		if n >= 1 && n <= c {
			return c, nil
		}
	}
	return 0, invalid("highlevel: no texture channel count holds %d values (1, 2 or 4)", n)
}

// An OccupancyRecord says how many blocks of one shape fit on one SM at a
// time, and what stops more (PyCUDA's OccupancyRecord).
type OccupancyRecord struct {
	// TBPerMP is the number of blocks resident on one SM, at least 1.
	TBPerMP int
	// LimitedBy is the limit that TBPerMP reached: "device" (the SM's
	// block slots, ThreadBlocksPerMP), "warps" (its warp slots,
	// WarpsPerMP), "regs" (its registers) or "smem" (its shared memory).
	// When several limits give the same count, the first of "device",
	// "regs", "smem", "warps" is named, the order PyCUDA's min over
	// (count, name) pairs gives.
	LimitedBy string
	// WarpsPerMP is the number of warps resident on one SM: TBPerMP times
	// the block's warps.
	WarpsPerMP int
	// Occupancy is WarpsPerMP / DeviceData.WarpsPerMP, in (0, 1].
	Occupancy float64
}

// Occupancy returns how many blocks of threads threads fit on one SM at a
// time, when each thread uses registers registers and each block sharedMem
// bytes of shared memory, static and dynamic together (PyCUDA's
// OccupancyRecord(devdata, threads, shared_mem, registers)).
//
// It computes what cuda_occupancy.h's cudaOccMaxActiveBlocksPerMultiprocessor
// computes, and so what cudaOccupancyMaxActiveBlocksPerMultiprocessor
// returns for a kernel with that register count (cudaFuncAttributes.numRegs)
// and static plus dynamic shared memory, under these assumptions:
//   - the kernel's shared memory carveout preference is the default
//     (cudaSharedmemCarveoutDefault) and its cache config
//     cudaFuncCachePreferNone, so the SM offers all of SharedMemory (rounded
//     up to a carveout the architecture has); a kernel given a smaller
//     cudaFuncAttributePreferredSharedMemoryCarveout may fit fewer blocks;
//   - a block above SharedMemoryPerBlockDefault has opted in to what it
//     uses (cudaFuncAttributeMaxDynamicSharedMemorySize);
//   - the kernel uses one block barrier and no virtual resources, so
//     neither limits blocks below ThreadBlocksPerMP; partitioned global
//     caching does not exist from sm_70 on.
//
// The limits: warps, WarpsPerMP / ceil(threads/WarpSize); registers, per
// warp registers*WarpSize rounded up to RegAllocGranularity, each of the
// SubPartitions holding Registers/SubPartitions of them; shared memory,
// sharedMem + ReservedSharedMemoryPerBlock rounded up to
// SmemAllocGranularity, SharedMemory of them per SM; and ThreadBlocksPerMP.
//
// Occupancy never returns a record with TBPerMP 0: a block that cannot run
// at all is an error wrapping ErrBlockTooLarge (threads above MaxThreads,
// registers above MaxRegistersPerThread or a block's registers above
// RegistersPerBlock, sharedMem above SharedMemoryPerBlock). Negative
// arguments and threads 0 are errors too.
func (dd DeviceData) Occupancy(threads, sharedMem, registers int) (OccupancyRecord, error) {
	if dd.WarpSize <= 0 || dd.WarpsPerMP <= 0 || dd.SubPartitions <= 0 || dd.RegAllocGranularity <= 0 || dd.SmemAllocGranularity <= 0 {
		return OccupancyRecord{}, opErr("Occupancy", zeroError("DeviceData", "NewDeviceData or DeviceDataFromProperties"))
	}
	tooLarge := func(format string, args ...any) (OccupancyRecord, error) {
		return OccupancyRecord{}, fmt.Errorf("%w: sm_%d%d: "+format, append([]any{ErrBlockTooLarge, dd.Major, dd.Minor}, args...)...)
	}
	switch {
	case threads <= 0:
		return OccupancyRecord{}, invalid("highlevel: Occupancy: %d threads per block", threads)
	case sharedMem < 0:
		return OccupancyRecord{}, invalid("highlevel: Occupancy: %d bytes of shared memory per block", sharedMem)
	case registers < 0:
		return OccupancyRecord{}, invalid("highlevel: Occupancy: %d registers per thread", registers)
	case threads > dd.MaxThreads:
		return tooLarge("%d threads per block, at most %d", threads, dd.MaxThreads)
	case registers > dd.MaxRegistersPerThread:
		return tooLarge("%d registers per thread, at most %d", registers, dd.MaxRegistersPerThread)
	case sharedMem > dd.SharedMemoryPerBlock:
		return tooLarge("%d bytes of shared memory per block, at most %d", sharedMem, dd.SharedMemoryPerBlock)
	}
	warps := occDivUp(threads, dd.WarpSize)

	// cudaOccMaxBlocksPerSMWarpsLimit.
	limitWarps := dd.WarpsPerMP / warps

	// cudaOccMaxBlocksPerSMRegsLimit.
	limitRegs := math.MaxInt
	regsPerWarp := occRoundUp(registers*dd.WarpSize, dd.RegAllocGranularity)
	regsPerBlock := regsPerWarp * warps
	// The hardware checks the per-block limit as if the block's warps
	// were spread over all sub-partitions at once.
	regsAssumed := regsPerWarp * occRoundUp(warps, dd.SubPartitions)
	if regsPerBlock > dd.RegistersPerBlock || regsAssumed > dd.RegistersPerBlock {
		return tooLarge("%d threads with %d registers each take %d registers (%d as the hardware counts them), at most %d per block",
			threads, registers, regsPerBlock, regsAssumed, dd.RegistersPerBlock)
	}
	if regsPerWarp > 0 {
		warpsPerSubPartition := dd.Registers / dd.SubPartitions / regsPerWarp
		limitRegs = warpsPerSubPartition * dd.SubPartitions / warps
	}

	// cudaOccMaxBlocksPerSMSmemLimit, with cudaOccSMemPerBlock under
	// FUNC_SHMEM_LIMIT_OPTIN and cudaOccSMemPerMultiprocessor under the
	// default carveout.
	limitSmem := math.MaxInt
	smemUsed := sharedMem + dd.ReservedSharedMemoryPerBlock
	smemPerBlock := occRoundUp(smemUsed, dd.SmemAllocGranularity)
	smemLimit := dd.SharedMemoryPerBlockDefault
	if smemUsed > dd.SharedMemoryPerBlockDefault {
		smemLimit = dd.SharedMemoryPerBlock
	}
	if dd.Major >= 8 {
		smemLimit += dd.ReservedSharedMemoryPerBlock
	}
	if smemPerBlock > smemLimit {
		return tooLarge("%d bytes of shared memory per block take %d with the driver's reserve and rounding, at most %d",
			sharedMem, smemPerBlock, smemLimit)
	}
	smemPerSM, ok := occAlignUpCarveout(dd.Major, dd.Minor, dd.SharedMemory)
	if ok && smemPerSM < smemPerBlock {
		smemPerSM, ok = occAlignUpCarveout(dd.Major, dd.Minor, smemPerBlock)
	}
	if !ok {
		return tooLarge("%d bytes of shared memory per block fit no shared memory carveout", sharedMem)
	}
	if smemPerBlock > 0 {
		limitSmem = smemPerSM / smemPerBlock
	}

	// The overall limit and, in PyCUDA's order for ties, what set it.
	r := OccupancyRecord{TBPerMP: dd.ThreadBlocksPerMP, LimitedBy: "device"}
	for _, l := range [...]struct {
		n    int
		name string
	}{{limitRegs, "regs"}, {limitSmem, "smem"}, {limitWarps, "warps"}} {
		if l.n < r.TBPerMP {
			r.TBPerMP, r.LimitedBy = l.n, l.name
		}
	}
	if r.TBPerMP <= 0 {
		return tooLarge("no block of %d threads with %d registers each and %d bytes of shared memory fits on an SM (limited by %s)",
			threads, registers, sharedMem, r.LimitedBy)
	}
	r.WarpsPerMP = r.TBPerMP * warps
	r.Occupancy = float64(r.WarpsPerMP) / float64(dd.WarpsPerMP)
	return r, nil
}

// occDivUp is x/y rounded up, for x >= 0 and y > 0 (__occDivideRoundUp);
// for x < 0 it rounds toward zero, which is up.
func occDivUp(x, y int) int {
	if x <= 0 {
		return x / y
	}
	return (x-1)/y + 1
}

// occRoundUp is x rounded up to a multiple of y > 0 (__occRoundUp); 0 for
// y <= 0, a limit of a DeviceData not made by NewDeviceData.
func occRoundUp(x, y int) int {
	if y <= 0 {
		return 0
	}
	return y * occDivUp(x, y)
}

// occMaxBlocksPerSM is cudaOccMaxBlocksPerMultiprocessor for sm_70 on.
func occMaxBlocksPerSM(major, minor int) int {
	switch {
	case major == 7 && minor == 5, major == 8 && minor != 0 && minor != 9:
		return 16
	case major == 8 && minor == 9, major == 10 && minor == 1, major == 11 && minor == 0, major == 12:
		return 24
	default:
		return 32
	}
}

// occCarveouts returns the shared memory sizes in KiB an SM of compute
// capability major.minor can be configured with, ascending, as
// cudaOccAlignUpShmemSizeVoltaPlus knows them; nil for an architecture it
// does not know.
func occCarveouts(major, minor int) []int {
	switch major {
	case 7:
		if minor == 5 { // Turing
			return []int{32, 64}
		}
		return []int{0, 8, 16, 32, 64, 96}
	case 8:
		if minor == 0 || minor == 7 {
			return []int{0, 8, 16, 32, 64, 100, 132, 164}
		}
		return []int{0, 8, 16, 32, 64, 100}
	case 9:
		return []int{0, 8, 16, 32, 64, 100, 132, 164, 196, 228}
	case 10, 11:
		if minor == 0 || minor == 1 || minor == 3 {
			return []int{0, 8, 16, 32, 64, 100, 132, 164, 196, 228}
		}
	case 12:
		if minor == 0 || minor == 1 {
			return []int{0, 8, 16, 32, 64, 100}
		}
	}
	return nil
}

// occAlignUpCarveout returns the smallest carveout in bytes of at least
// size, and false if there is none (cudaOccAlignUpShmemSizeVoltaPlus).
func occAlignUpCarveout(major, minor, size int) (int, bool) {
	for _, kib := range occCarveouts(major, minor) {
		if size <= kib*1024 {
			return kib * 1024, true
		}
	}
	return 0, false
}
