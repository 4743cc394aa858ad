// Command devicequery lists the CUDA devices of this machine as NVIDIA's
// deviceQuery sample does, through package highlevel: each device's
// Properties, and the Attributes CUDA 13 took out of them (clock rates,
// compute mode). Run it from the module root: go run ./examples/devicequery.
//
// Properties and RuntimeVersion load libcudart ($GOCUDA_CUDART names the
// file). If a call fails, devicequery prints the error and "Result = FAIL"
// to standard error and exits with status 1.
package main

import (
	"cmp"
	"fmt"
	"io"
	"os"

	"github.com/gocuda/cuda/highlevel"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "%v\nResult = FAIL\n", err)
		os.Exit(1)
	}
}

// run writes the report for every device to w.
func run(w io.Writer) error {
	n, err := highlevel.DeviceCount()
	drv, err1 := highlevel.DriverVersion()
	rt, err2 := highlevel.RuntimeVersion()
	if err := cmp.Or(err, err1, err2); err != nil {
		return err
	}
	fmt.Fprintf(w, "Detected %d CUDA Capable device(s)\n", n)
	for d := range highlevel.Device(n) {
		p, err := d.Properties()
		clock, err1 := d.Attribute(highlevel.DeviceClockRate) // kHz
		memClock, err2 := d.Attribute(highlevel.DeviceMemoryClockRate)
		mode, err3 := d.Attribute(highlevel.DeviceComputeMode)
		if err := cmp.Or(err, err1, err2, err3); err != nil {
			return err
		}
		fmt.Fprintf(w, "\nDevice %d: %q\n", d.ID(), p.Name)
		field(w, "CUDA Driver Version / Runtime Version", "%s / %s", version(drv), version(rt))
		field(w, "CUDA Capability Major/Minor version number:", "%d.%d", p.Major, p.Minor)
		field(w, "Total amount of global memory:", "%d MBytes (%d bytes)", p.TotalMemory>>20, p.TotalMemory)
		field(w, "Multiprocessors:", "%d", p.MultiprocessorCount)
		field(w, "GPU Max Clock rate:", "%d MHz (%.2f GHz)", clock/1000, float64(clock)*1e-6)
		field(w, "Memory Clock rate:", "%d MHz", memClock/1000)
		field(w, "Memory Bus Width:", "%d-bit", p.GlobalMemoryBusWidth)
		field(w, "L2 Cache Size:", "%d bytes", p.L2CacheSize)
		field(w, "Total amount of shared memory per block:", "%d bytes", p.MaxSharedMemoryPerBlock)
		field(w, "Total number of registers available per block:", "%d", p.MaxRegistersPerBlock)
		field(w, "Warp size:", "%d", p.WarpSize)
		field(w, "Maximum number of threads per multiprocessor:", "%d", p.MaxThreadsPerMultiprocessor)
		field(w, "Maximum number of threads per block:", "%d", p.MaxThreadsPerBlock)
		field(w, "Max dimension size of a thread block (x,y,z):", "%v", p.MaxBlockDim)
		field(w, "Max dimension size of a grid size    (x,y,z):", "%v", p.MaxGridDim)
		field(w, "Concurrent copy and kernel execution:", "%d copy engine(s)", p.AsyncEngineCount)
		field(w, "Device has ECC support enabled:", "%t", p.ECCEnabled)
		field(w, "Device supports Unified Addressing (UVA):", "%t", p.UnifiedAddressing)
		field(w, "Device supports Managed Memory:", "%t", p.ManagedMemory)
		field(w, "Supports Cooperative Kernel Launch:", "%t", p.CooperativeLaunch)
		field(w, "Device PCI Domain ID / Bus ID / location ID:", "%d / %d / %d", p.PCIDomainID, p.PCIBusID, p.PCIDeviceID)
		field(w, "Compute Mode:", "%s", map[int]string{0: "Default", 2: "Prohibited", 3: "Exclusive Process"}[mode])
	}
	fmt.Fprintf(w, "\nCUDA Driver = %s, CUDA Runtime = %s, NumDevs = %d\nResult = PASS\n", version(drv), version(rt), n)
	return nil
}

// field writes one "label  value" line, the values in one column.
func field(w io.Writer, label, format string, args ...any) {
	fmt.Fprintf(w, "  %-46s %s\n", label, fmt.Sprintf(format, args...))
}

// version formats a CUDA version number such as 13000 as "13.0".
func version(v int) string { return fmt.Sprintf("%d.%d", v/1000, (v%100)/10) }
