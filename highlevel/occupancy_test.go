package highlevel_test

import (
	"errors"
	"fmt"
	"log"
	"strings"
	"testing"

	"github.com/gocuda/cuda/highlevel"
	"github.com/gocuda/cuda/internal/gpuprobe"
)

// Properties as Device.Properties reports them for one GPU of each
// architecture; only the fields the calculator reads are set.
var (
	// Tesla V100 (sm_70): 96 KiB shared memory per SM, all of it a block's
	// with opt-in, no reserve.
	occPropV100 = highlevel.DeviceProperties{
		Major: 7, Minor: 0, MultiprocessorCount: 80,
		MaxThreadsPerBlock: 1024, WarpSize: 32, MaxThreadsPerMultiprocessor: 2048, MaxBlocksPerMultiprocessor: 32,
		MaxRegistersPerBlock: 65536, MaxRegistersPerMultiprocessor: 65536,
		MaxSharedMemoryPerBlock: 48 << 10, MaxSharedMemoryPerMultiprocessor: 96 << 10, MaxSharedMemoryPerBlockOptin: 96 << 10,
		TextureAlignment: 512,
	}
	// Tesla T4 (sm_75, Turing): 1024 threads and 16 blocks per SM,
	// carveouts of 32 or 64 KiB.
	occPropT4 = highlevel.DeviceProperties{
		Major: 7, Minor: 5, MultiprocessorCount: 40,
		MaxThreadsPerBlock: 1024, WarpSize: 32, MaxThreadsPerMultiprocessor: 1024, MaxBlocksPerMultiprocessor: 16,
		MaxRegistersPerBlock: 65536, MaxRegistersPerMultiprocessor: 65536,
		MaxSharedMemoryPerBlock: 48 << 10, MaxSharedMemoryPerMultiprocessor: 64 << 10, MaxSharedMemoryPerBlockOptin: 64 << 10,
		TextureAlignment: 512,
	}
	// A100 (sm_80): 164 KiB per SM, 163 KiB per block with opt-in, 1 KiB
	// reserved per block.
	occPropA100 = highlevel.DeviceProperties{
		Major: 8, Minor: 0, MultiprocessorCount: 108,
		MaxThreadsPerBlock: 1024, WarpSize: 32, MaxThreadsPerMultiprocessor: 2048, MaxBlocksPerMultiprocessor: 32,
		MaxRegistersPerBlock: 65536, MaxRegistersPerMultiprocessor: 65536,
		MaxSharedMemoryPerBlock: 48 << 10, MaxSharedMemoryPerMultiprocessor: 164 << 10, MaxSharedMemoryPerBlockOptin: 163 << 10,
		ReservedSharedMemoryPerBlock: 1 << 10, TextureAlignment: 512,
	}
	// H100 (sm_90): 228 KiB per SM, 227 KiB per block with opt-in, 1 KiB
	// reserved per block.
	occPropH100 = highlevel.DeviceProperties{
		Major: 9, Minor: 0, MultiprocessorCount: 132,
		MaxThreadsPerBlock: 1024, WarpSize: 32, MaxThreadsPerMultiprocessor: 2048, MaxBlocksPerMultiprocessor: 32,
		MaxRegistersPerBlock: 65536, MaxRegistersPerMultiprocessor: 65536,
		MaxSharedMemoryPerBlock: 48 << 10, MaxSharedMemoryPerMultiprocessor: 228 << 10, MaxSharedMemoryPerBlockOptin: 227 << 10,
		ReservedSharedMemoryPerBlock: 1 << 10, TextureAlignment: 512,
	}
	// GeForce RTX 5090 (sm_120): 1536 threads (48 warps) and 24 blocks per
	// SM, 100 KiB per SM, 99 KiB per block with opt-in, 1 KiB reserved.
	occPropRTX5090 = highlevel.DeviceProperties{
		Major: 12, Minor: 0, MultiprocessorCount: 170,
		MaxThreadsPerBlock: 1024, WarpSize: 32, MaxThreadsPerMultiprocessor: 1536, MaxBlocksPerMultiprocessor: 24,
		MaxRegistersPerBlock: 65536, MaxRegistersPerMultiprocessor: 65536,
		MaxSharedMemoryPerBlock: 48 << 10, MaxSharedMemoryPerMultiprocessor: 100 << 10, MaxSharedMemoryPerBlockOptin: 99 << 10,
		ReservedSharedMemoryPerBlock: 1 << 10, TextureAlignment: 512,
	}
)

func occDeviceData(t *testing.T, p highlevel.DeviceProperties) highlevel.DeviceData {
	t.Helper()
	dd, err := highlevel.DeviceDataFromProperties(&p)
	if err != nil {
		t.Fatalf("DeviceDataFromProperties(sm_%d%d): %v", p.Major, p.Minor, err)
	}
	return dd
}

func TestDeviceDataFromProperties(t *testing.T) {
	for _, c := range []struct {
		name string
		prop highlevel.DeviceProperties
		want highlevel.DeviceData
	}{
		{"sm_70", occPropV100, highlevel.DeviceData{
			Major: 7, Minor: 0, Multiprocessors: 80, MaxThreads: 1024, WarpSize: 32,
			WarpsPerMP: 64, ThreadBlocksPerMP: 32, Registers: 65536, RegistersPerBlock: 65536, MaxRegistersPerThread: 255,
			SharedMemory: 98304, SharedMemoryPerBlock: 98304, SharedMemoryPerBlockDefault: 49152, ReservedSharedMemoryPerBlock: 0,
			SmemGranularity: 32, SmemAllocGranularity: 256, RegAllocGranularity: 256, RegAllocUnit: "warp",
			SubPartitions: 4, AlignBytes: 128, TextureAlignment: 512,
		}},
		{"sm_75", occPropT4, highlevel.DeviceData{
			Major: 7, Minor: 5, Multiprocessors: 40, MaxThreads: 1024, WarpSize: 32,
			WarpsPerMP: 32, ThreadBlocksPerMP: 16, Registers: 65536, RegistersPerBlock: 65536, MaxRegistersPerThread: 255,
			SharedMemory: 65536, SharedMemoryPerBlock: 65536, SharedMemoryPerBlockDefault: 49152, ReservedSharedMemoryPerBlock: 0,
			SmemGranularity: 32, SmemAllocGranularity: 256, RegAllocGranularity: 256, RegAllocUnit: "warp",
			SubPartitions: 4, AlignBytes: 128, TextureAlignment: 512,
		}},
		{"sm_80", occPropA100, highlevel.DeviceData{
			Major: 8, Minor: 0, Multiprocessors: 108, MaxThreads: 1024, WarpSize: 32,
			WarpsPerMP: 64, ThreadBlocksPerMP: 32, Registers: 65536, RegistersPerBlock: 65536, MaxRegistersPerThread: 255,
			SharedMemory: 167936, SharedMemoryPerBlock: 166912, SharedMemoryPerBlockDefault: 49152, ReservedSharedMemoryPerBlock: 1024,
			SmemGranularity: 32, SmemAllocGranularity: 128, RegAllocGranularity: 256, RegAllocUnit: "warp",
			SubPartitions: 4, AlignBytes: 128, TextureAlignment: 512,
		}},
		{"sm_90", occPropH100, highlevel.DeviceData{
			Major: 9, Minor: 0, Multiprocessors: 132, MaxThreads: 1024, WarpSize: 32,
			WarpsPerMP: 64, ThreadBlocksPerMP: 32, Registers: 65536, RegistersPerBlock: 65536, MaxRegistersPerThread: 255,
			SharedMemory: 233472, SharedMemoryPerBlock: 232448, SharedMemoryPerBlockDefault: 49152, ReservedSharedMemoryPerBlock: 1024,
			SmemGranularity: 32, SmemAllocGranularity: 128, RegAllocGranularity: 256, RegAllocUnit: "warp",
			SubPartitions: 4, AlignBytes: 128, TextureAlignment: 512,
		}},
		{"sm_120", occPropRTX5090, highlevel.DeviceData{
			Major: 12, Minor: 0, Multiprocessors: 170, MaxThreads: 1024, WarpSize: 32,
			WarpsPerMP: 48, ThreadBlocksPerMP: 24, Registers: 65536, RegistersPerBlock: 65536, MaxRegistersPerThread: 255,
			SharedMemory: 102400, SharedMemoryPerBlock: 101376, SharedMemoryPerBlockDefault: 49152, ReservedSharedMemoryPerBlock: 1024,
			SmemGranularity: 32, SmemAllocGranularity: 128, RegAllocGranularity: 256, RegAllocUnit: "warp",
			SubPartitions: 4, AlignBytes: 128, TextureAlignment: 512,
		}},
	} {
		if got := occDeviceData(t, c.prop); got != c.want {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, c.want)
		}
	}

	// cudaOccMaxBlocksPerMultiprocessor's table, by architecture.
	for _, c := range []struct{ major, minor, blocks int }{
		{7, 0, 32}, {7, 2, 32}, {7, 5, 16}, {8, 0, 32}, {8, 6, 16}, {8, 7, 16}, {8, 9, 24},
		{9, 0, 32}, {10, 0, 32}, {10, 1, 24}, {10, 3, 32}, {11, 0, 24}, {12, 0, 24}, {12, 1, 24},
	} {
		p := occPropH100
		p.Major, p.Minor = c.major, c.minor
		p.MaxSharedMemoryPerMultiprocessor = 64 << 10 // a carveout every architecture has
		if got := occDeviceData(t, p).ThreadBlocksPerMP; got != c.blocks {
			t.Errorf("sm_%d%d: ThreadBlocksPerMP %d, want %d", c.major, c.minor, got, c.blocks)
		}
	}
}

func TestDeviceDataErrors(t *testing.T) {
	if _, err := highlevel.DeviceDataFromProperties(nil); err == nil {
		t.Error("nil properties: no error")
	}
	for _, c := range []struct{ major, minor int }{{6, 1}, {5, 2}, {3, 5}, {0, 0}, {10, 2}, {11, 2}, {12, 2}, {13, 0}} {
		p := occPropH100
		p.Major, p.Minor = c.major, c.minor
		_, err := highlevel.DeviceDataFromProperties(&p)
		name := fmt.Sprintf("sm_%d%d", c.major, c.minor)
		if !errors.Is(err, highlevel.ErrUnsupportedArch) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: err %v, want ErrUnsupportedArch naming %s", name, err, name)
		}
	}
	for name, edit := range map[string]func(*highlevel.DeviceProperties){
		"warp size 0":             func(p *highlevel.DeviceProperties) { p.WarpSize = 0 },
		"no threads per SM":       func(p *highlevel.DeviceProperties) { p.MaxThreadsPerMultiprocessor = 0 },
		"no SMs":                  func(p *highlevel.DeviceProperties) { p.MultiprocessorCount = 0 },
		"no registers":            func(p *highlevel.DeviceProperties) { p.MaxRegistersPerMultiprocessor = 0 },
		"no shared memory":        func(p *highlevel.DeviceProperties) { p.MaxSharedMemoryPerMultiprocessor = 0 },
		"256 KiB, no carveout":    func(p *highlevel.DeviceProperties) { p.MaxSharedMemoryPerMultiprocessor = 256 << 10 },
		"no shared mem per block": func(p *highlevel.DeviceProperties) { p.MaxSharedMemoryPerBlock = 0 },
	} {
		p := occPropH100
		edit(&p)
		if _, err := highlevel.DeviceDataFromProperties(&p); err == nil || errors.Is(err, highlevel.ErrUnsupportedArch) {
			t.Errorf("%s: err %v, want an error about the properties", name, err)
		}
	}
}

// The expected values are worked out by hand from cuda_occupancy.h
// (cudaOccMaxActiveBlocksPerMultiprocessor, default carveout):
//
//	warps = ceil(threads/32)
//	warps limit = WarpsPerMP / warps
//	regs: perWarp = roundup(regs*32, 256); limit = (65536/4/perWarp)*4 / warps (no limit for 0 registers)
//	smem: perBlock = roundup(smem + reserved, granularity); limit = carveout / perBlock (none for 0 bytes)
//	device limit = ThreadBlocksPerMP
func TestOccupancy(t *testing.T) {
	v100, t4, a100, h100, rtx := occDeviceData(t, occPropV100), occDeviceData(t, occPropT4),
		occDeviceData(t, occPropA100), occDeviceData(t, occPropH100), occDeviceData(t, occPropRTX5090)
	for _, c := range []struct {
		name                string
		dd                  highlevel.DeviceData
		threads, smem, regs int
		tb                  int
		limitedBy           string
		warpsPerMP          int
		occupancy           float64
	}{
		// sm_90 (H100): 64 warps, 32 blocks, carveout 228 KiB = 233472.
		// 1 warp: warps 64/1=64; regs none; smem roundup(0+1024,128)=1024,
		// 233472/1024=228; device 32 -> 32 blocks, 32 warps, 32/64.
		{"sm_90 device", h100, 32, 0, 0, 32, "device", 32, 0.5},
		// 8 warps: warps 64/8=8; regs 16*32=512/warp, 16384/512=32 per
		// sub-partition, 128/8=16; smem 228; device 32 -> warps 8, 64 warps.
		{"sm_90 warps", h100, 256, 0, 16, 8, "warps", 64, 1},
		// 8 warps, 64 regs: 2048/warp, 16384/2048=8 per sub-partition,
		// 32/8=4; warps 8 -> regs 4, 32 warps.
		{"sm_90 regs", h100, 256, 0, 64, 4, "regs", 32, 0.5},
		// Granularity: 4 warps, 33 regs: 1056 -> roundup 256 = 1280/warp,
		// 16384/1280=12 per sub-partition, 48/4=12 (65536/(1056*4) would
		// give 15); warps 64/4=16 -> regs 12, 48 warps.
		{"sm_90 regs granularity", h100, 128, 0, 33, 12, "regs", 48, 0.75},
		// Sub-partitions: 3 warps, 40 regs: 1280/warp, 12 per
		// sub-partition, 48/3=16 (65536/(1280*3) would give 17); warps
		// 64/3=21 -> regs 16, 48 warps.
		{"sm_90 regs sub-partitions", h100, 96, 0, 40, 16, "regs", 48, 0.75},
		// 4 warps, 32 regs, 32 KiB: smem 32768+1024=33792 (a multiple of
		// 128), 233472/33792=6 (without the reserve 233472/32768=7); regs
		// 1024/warp, 64/4=16; warps 16 -> smem 6, 24 warps.
		{"sm_90 smem reserved", h100, 128, 32768, 32, 6, "smem", 24, 0.375},
		// 1 warp, 7937 bytes: 7937+1024=8961 -> roundup 128 = 9088,
		// 233472/9088=25 (233472/8961 would give 26); warps 64; device 32
		// -> smem 25, 25 warps.
		{"sm_90 smem granularity", h100, 32, 7937, 0, 25, "smem", 25, 25.0 / 64},
		// 32 warps, 32 regs, the whole opt-in 227 KiB: 232448+1024=233472
		// <= limit 232448+1024, 233472/233472=1; warps 64/32=2; regs
		// 64/32=2 -> smem 1, 32 warps.
		{"sm_90 smem opt-in max", h100, 1024, 232448, 32, 1, "smem", 32, 0.5},
		// 32 warps, 64 regs: 2048/warp, 8 per sub-partition, 32/32=1;
		// regsPerBlock 2048*32=65536 fits exactly; warps 2 -> regs 1.
		{"sm_90 regs full block", h100, 1024, 0, 64, 1, "regs", 32, 0.5},

		// sm_80 (A100): 64 warps, 32 blocks, carveout 164 KiB = 167936.
		// 2 warps, 16 regs: warps 64/2=32; regs 512/warp, 32 per
		// sub-partition, 128/2=64; smem 167936/1024=164; device 32: a tie
		// of device and warps, named "device".
		{"sm_80 device ties warps", a100, 64, 0, 16, 32, "device", 64, 1},
		// 8 warps, 32 regs, 48 KiB: 49152+1024=50176, 167936/50176=3;
		// warps 8; regs 1024/warp, 64/8=8 -> smem 3, 24 warps.
		{"sm_80 smem", a100, 256, 49152, 32, 3, "smem", 24, 0.375},
		// The whole opt-in 163 KiB: 166912+1024=167936, 167936/167936=1.
		{"sm_80 smem opt-in max", a100, 32, 166912, 0, 1, "smem", 1, 1.0 / 64},
		// 8 warps, 255 regs: 8160 -> roundup 256 = 8192/warp, 16384/8192=2
		// per sub-partition, 8/8=1; block 8192*8=65536 fits -> regs 1.
		{"sm_80 255 registers", a100, 256, 0, 255, 1, "regs", 8, 0.125},

		// sm_70 (V100): 64 warps, 32 blocks, carveout 96 KiB = 98304,
		// granularity 256, no reserve.
		// 32 warps, nothing else: regs and smem unlimited (0 bytes need no
		// carveout); warps 64/32=2 -> warps 2, 64 warps.
		{"sm_70 warps", v100, 1024, 0, 0, 2, "warps", 64, 1},
		// 4 warps, 32 regs, 20000 bytes: roundup 256 = 20224,
		// 98304/20224=4; regs 64/4=16; warps 16 -> smem 4, 16 warps.
		{"sm_70 smem", v100, 128, 20000, 32, 4, "smem", 16, 0.25},
		// All 96 KiB: 98304 <= opt-in 98304, 98304/98304=1.
		{"sm_70 smem opt-in max", v100, 64, 98304, 0, 1, "smem", 2, 2.0 / 64},
		// 4 warps, 128 regs: 4096/warp, 16384/4096=4 per sub-partition,
		// 16/4=4; warps 16 -> regs 4, 16 warps.
		{"sm_70 regs", v100, 128, 0, 128, 4, "regs", 16, 0.25},

		// sm_75 (Turing): 32 warps, 16 blocks, carveout 64 KiB, granularity
		// 256. 1 warp, 5000 bytes: roundup 256 = 5120, 65536/5120=12;
		// warps 32; device 16 -> smem 12, 12 warps.
		{"sm_75 smem", t4, 32, 5000, 0, 12, "smem", 12, 0.375},
		// 2 warps: warps 32/2=16 = device 16 -> "device".
		{"sm_75 device", t4, 64, 0, 32, 16, "device", 32, 1},

		// sm_120 (RTX 5090): 48 warps, 24 blocks, carveout 100 KiB =
		// 102400. 1 warp, 32 regs: warps 48; regs 1024/warp, 64/1=64; smem
		// 102400/1024=100; device 24 -> device 24, 24 warps, 24/48.
		{"sm_120 device", rtx, 32, 0, 32, 24, "device", 24, 0.5},
		// 16 warps, 32 regs: warps 48/16=3; regs 64/16=4 -> warps 3, 48.
		{"sm_120 warps", rtx, 512, 0, 32, 3, "warps", 48, 1},
		// 8 warps, 72 regs: 2304/warp (9x256), 16384/2304=7 per
		// sub-partition, 28/8=3; warps 48/8=6 -> regs 3, 24 warps.
		{"sm_120 regs", rtx, 256, 0, 72, 3, "regs", 24, 0.5},
		// 4 warps, 32 KiB: 32768+1024=33792, 102400/33792=3; warps 12 ->
		// smem 3, 12 warps.
		{"sm_120 smem", rtx, 128, 32768, 0, 3, "smem", 12, 0.25},
		// The whole opt-in 99 KiB: 101376+1024=102400, 1 block.
		{"sm_120 smem opt-in max", rtx, 128, 101376, 0, 1, "smem", 4, 4.0 / 48},
	} {
		got, err := c.dd.Occupancy(c.threads, c.smem, c.regs)
		want := highlevel.OccupancyRecord{TBPerMP: c.tb, LimitedBy: c.limitedBy, WarpsPerMP: c.warpsPerMP, Occupancy: c.occupancy}
		if err != nil || got != want {
			t.Errorf("%s: Occupancy(%d, %d, %d) = %+v, %v; want %+v", c.name, c.threads, c.smem, c.regs, got, err, want)
		}
	}
}

func TestOccupancyErrors(t *testing.T) {
	h100, v100 := occDeviceData(t, occPropH100), occDeviceData(t, occPropV100)
	for _, c := range []struct {
		name                string
		dd                  highlevel.DeviceData
		threads, smem, regs int
		tooLarge            bool
	}{
		{"no threads", h100, 0, 0, 0, false},
		{"negative threads", h100, -32, 0, 0, false},
		{"negative smem", h100, 32, -1, 0, false},
		{"negative regs", h100, 32, 0, -1, false},
		{"1025 threads", h100, 1025, 0, 0, true},
		{"256 registers", h100, 32, 0, 256, true},
		// One byte above the 227 KiB opt-in limit.
		{"smem above opt-in", h100, 32, 232449, 0, true},
		// One byte above V100's 96 KiB.
		{"sm_70 smem above opt-in", v100, 32, 98305, 0, true},
		// 32 warps of 65 regs: 2080 -> 2304/warp, 2304*32=73728 > 65536.
		{"registers per block", h100, 1024, 0, 65, true},
		// 25 warps of 80 regs: 2560/warp, 2560*25=64000 fits, but the
		// hardware counts roundup(25,4)=28 warps: 2560*28=71680 > 65536.
		{"registers per block, hardware check", h100, 800, 0, 80, true},
		{"zero DeviceData", highlevel.DeviceData{}, 32, 0, 0, false},
	} {
		r, err := c.dd.Occupancy(c.threads, c.smem, c.regs)
		if err == nil || errors.Is(err, highlevel.ErrBlockTooLarge) != c.tooLarge || r != (highlevel.OccupancyRecord{}) {
			t.Errorf("%s: Occupancy(%d, %d, %d) = %+v, %v; want an error (ErrBlockTooLarge: %v)", c.name, c.threads, c.smem, c.regs, r, err, c.tooLarge)
		}
	}
}

func TestDeviceDataAlign(t *testing.T) {
	dd := occDeviceData(t, occPropH100)
	for _, c := range [][2]int{{0, 0}, {1, 128}, {127, 128}, {128, 128}, {129, 256}, {1000, 1024}} {
		if got := dd.Align(c[0]); got != c[1] {
			t.Errorf("Align(%d) = %d, want %d", c[0], got, c[1])
		}
	}
	// 128 bytes hold 32 4-byte, 16 8-byte, 8 16-byte words; 3-byte words
	// need 128 of them (384 bytes) to make a multiple of 128.
	for _, c := range [][2]int{{1, 128}, {2, 64}, {3, 128}, {4, 32}, {8, 16}, {16, 8}, {12, 32}, {256, 1}} {
		if got := dd.AlignWords(c[0]); got != c[1] {
			t.Errorf("AlignWords(%d) = %d, want %d", c[0], got, c[1])
		}
	}
	for _, c := range [][3]int{{0, 4, 0}, {1, 4, 32}, {33, 4, 64}, {100, 8, 112}, {8, 16, 8}, {9, 16, 16}} {
		if got := dd.AlignElems(c[0], c[1]); got != c[2] {
			t.Errorf("AlignElems(%d, %d) = %d, want %d", c[0], c[1], got, c[2])
		}
	}
	for _, c := range [][2]int{{1, 32}, {32, 32}, {33, 64}, {1000, 1024}} {
		if got := dd.Coalesce(c[0]); got != c[1] {
			t.Errorf("Coalesce(%d) = %d, want %d", c[0], got, c[1])
		}
	}
	for n, want := range map[int]int{1: 1, 2: 2, 3: 4, 4: 4} {
		if got, err := dd.ValidTextureChannelCount(n); got != want || err != nil {
			t.Errorf("ValidTextureChannelCount(%d) = %d, %v; want %d", n, got, err, want)
		}
	}
	for _, n := range []int{0, -1, 5} {
		if _, err := dd.ValidTextureChannelCount(n); err == nil {
			t.Errorf("ValidTextureChannelCount(%d): no error", n)
		}
	}
	if got := dd.AlignWords(0); got != dd.AlignWords(1) {
		t.Errorf("AlignWords(0) = %d, want AlignWords(1) = %d", got, dd.AlignWords(1))
	}
}

// occPressure keeps N floats live per thread (volatile loads used in
// reverse order), so that --maxrregcount sets the kernel's register count,
// and uses S floats of static shared memory.
const occPressure = `
extern "C" __global__ void pressure(const volatile float *in, float *out) {
	__shared__ float st[S];
	float v[N];
#pragma unroll
	for (int i = 0; i < N; i++) v[i] = in[threadIdx.x + i];
	float s = 0;
#pragma unroll
	for (int i = N - 1; i >= 0; i--) s = s * v[i] + 1.0f;
	st[threadIdx.x % S] = s;
	__syncthreads();
	out[threadIdx.x] = st[(threadIdx.x + 1) % S];
}
`

// On a GPU, DeviceData.Occupancy agrees with CUDA's
// cuOccupancyMaxActiveBlocksPerMultiprocessor for kernels of many register
// counts, block sizes and shared memory sizes: a count of 0 is an error.
func TestGPUOccupancyMatchesCUDA(t *testing.T) {
	gpuprobe.Require(t)
	d := highlevel.Device(0)
	dd, err := highlevel.NewDeviceData(d)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("sm_%d%d: %+v", dd.Major, dd.Minor, dd)
	checked := 0
	for _, v := range []struct{ maxregs, static int }{
		{16, 4}, {24, 1024}, {32, 4}, {40, 256}, {48, 4}, {64, 2048}, {72, 4}, {80, 4},
		{96, 4}, {128, 1024}, {168, 4}, {200, 4}, {255, 4},
	} {
		c, err := highlevel.Compile(occPressure, &highlevel.CompileOptions{
			Name:    "pressure.cu",
			Defines: map[string]string{"N": "256", "S": fmt.Sprint(v.static)},
			Options: []string{fmt.Sprintf("--maxrregcount=%d", v.maxregs)},
		})
		if err != nil {
			t.Fatal(err)
		}
		m, err := highlevel.LoadModule(c.Image)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		k, err := m.Kernel("pressure")
		if err != nil {
			t.Fatal(err)
		}
		a, err := k.Attributes(d)
		if err != nil {
			t.Fatal(err)
		}
		maxDyn := dd.SharedMemoryPerBlock - a.SharedSizeBytes
		if err := k.SetAttribute(d, highlevel.KernelMaxDynamicSharedSize, maxDyn); err != nil {
			t.Fatal(err)
		}
		t.Logf("maxrregcount %d: %d registers, %d bytes static shared memory, at most %d threads", v.maxregs, a.NumRegs, a.SharedSizeBytes, a.MaxThreadsPerBlock)
		for _, threads := range []int{1, 32, 33, 64, 96, 100, 128, 160, 192, 224, 256, 288, 320, 384, 416, 480, 512, 544, 640, 672, 768, 800, 896, 928, 960, 1000, 1024} {
			for _, dyn := range []int{0, 1, 1000, 7937, 16384, 32768, 48<<10 - a.SharedSizeBytes, 48 << 10, 70000, 100000, 150000, maxDyn} {
				if dyn > maxDyn {
					continue
				}
				want, werr := k.MaxActiveBlocksPerSM(d, threads, dyn)
				got, err := dd.Occupancy(threads, a.SharedSizeBytes+dyn, a.NumRegs)
				checked++
				switch {
				case werr != nil:
					t.Fatalf("MaxActiveBlocksPerSM(%d, %d): %v", threads, dyn, werr)
				case want == 0 && err == nil:
					t.Errorf("%d regs, %d threads, %d+%d bytes: CUDA fits no block, Occupancy gives %+v", a.NumRegs, threads, a.SharedSizeBytes, dyn, got)
				case want > 0 && (err != nil || got.TBPerMP != want):
					t.Errorf("%d regs, %d threads, %d+%d bytes: CUDA fits %d blocks, Occupancy gives %+v, %v", a.NumRegs, threads, a.SharedSizeBytes, dyn, want, got, err)
				}
			}
		}
	}
	t.Logf("%d configurations checked", checked)
}

// DeviceData.Occupancy is PyCUDA's OccupancyRecord: how many blocks of a
// kernel fit on one SM, and what stops more. DeviceDataFromProperties
// needs no GPU; NewDeviceData(dev) reads a real one.
func ExampleDeviceData_Occupancy() {
	dd, err := highlevel.NewDeviceData(highlevel.Device(0))
	if err != nil {
		log.Fatal(err)
	}
	// 256 threads of 64 registers, 16 KiB of shared memory per block.
	r, err := dd.Occupancy(256, 16<<10, 64)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d blocks per SM (limited by %s), occupancy %.0f%%\n", r.TBPerMP, r.LimitedBy, 100*r.Occupancy)
	fmt.Println("a full wave:", r.TBPerMP*dd.Multiprocessors, "blocks")
}
