// Command devicequery lists the CUDA devices of this machine and their
// properties, the way NVIDIA's deviceQuery sample (cuda-samples,
// Samples/1_Utilities/deviceQuery) does, using only package cudart.
//
// Run it from the module root:
//
//	go run ./examples/devicequery
//
// Nothing links against CUDA at build time: the runtime, libcudart.so of the
// CUDA major the program is built for (13, or 12 with -tags cuda12), is
// opened when the program first calls into it (set $GOCUDA_CUDART to pick a
// particular file; see package cudart for the search order). If the library cannot be opened,
// or any CUDA call fails, devicequery prints the error and "Result = FAIL" to
// standard error and exits with status 1.
//
// The output follows the sample's, with these differences: the banner says
// "dynamic loading" rather than "static linking"; the properties CUDA 13
// dropped from cudaDeviceProp (clock rates, kernel run time limit, copy/kernel
// overlap, compute mode) are read with cudaDeviceGetAttribute instead; the
// "MultiDevice Co-op Kernel Launch" line, whose property and attribute CUDA 13
// removed, is left out; and every value starts in the same column.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/gocuda/cuda/cudart"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		fmt.Fprintln(os.Stderr, "Result = FAIL")
		os.Exit(1)
	}
}

// run writes the report for every device to w.
func run(w io.Writer) error {
	fmt.Fprintf(w, "%s Starting...\n\n", os.Args[0])
	fmt.Fprintf(w, " CUDA Device Query (Runtime API) version (CUDART dynamic loading)\n\n")

	var count int32
	if err := cudart.GetDeviceCount(&count); err != nil {
		return callError("cudaGetDeviceCount", err)
	}
	if count == 0 {
		fmt.Fprintln(w, "There are no available device(s) that support CUDA")
	} else {
		fmt.Fprintf(w, "Detected %d CUDA Capable device(s)\n", count)
	}

	var driver, runtime int32
	if err := cudart.DriverGetVersion(&driver); err != nil {
		return callError("cudaDriverGetVersion", err)
	}
	if err := cudart.RuntimeGetVersion(&runtime); err != nil {
		return callError("cudaRuntimeGetVersion", err)
	}

	devs := make([]*device, count)
	for i := range count {
		d, err := queryDevice(i)
		if err != nil {
			return err
		}
		devs[i] = d
		fmt.Fprintf(w, "\nDevice %d: \"%s\"\n", i, d.name())
		field(w, "CUDA Driver Version / Runtime Version", "%s / %s", version(driver), version(runtime))
		d.print(w)
	}

	if err := printPeerAccess(w, devs); err != nil {
		return err
	}

	fmt.Fprintf(w, "\ndeviceQuery, CUDA Driver = CUDART, CUDA Driver Version = %s, CUDA Runtime Version = %s, NumDevs = %d\n",
		version(driver), version(runtime), count)
	fmt.Fprintln(w, "Result = PASS")
	return nil
}

// device holds what is reported about one device: its cudaDeviceProp and the
// attributes that CUDA 13 no longer puts in it.
type device struct {
	id   int32
	prop cudart.DeviceProp

	clockRate       int32 // kHz
	memoryClockRate int32 // kHz
	gpuOverlap      int32
	kernelTimeout   int32
	computeMode     int32
}

// queryDevice reads the properties and attributes of device id.
func queryDevice(id int32) (*device, error) {
	d := &device{id: id}
	if err := cudart.GetDeviceProperties(&d.prop, id); err != nil {
		return nil, callError("cudaGetDeviceProperties", err)
	}
	attrs := []struct {
		attr cudart.DeviceAttr
		dst  *int32
	}{
		{cudart.DevAttrClockRate, &d.clockRate},
		{cudart.DevAttrMemoryClockRate, &d.memoryClockRate},
		{cudart.DevAttrGpuOverlap, &d.gpuOverlap},
		{cudart.DevAttrKernelExecTimeout, &d.kernelTimeout},
		{cudart.DevAttrComputeMode, &d.computeMode},
	}
	for _, a := range attrs {
		if err := cudart.DeviceGetAttribute(a.dst, a.attr, id); err != nil {
			return nil, callError(fmt.Sprintf("cudaDeviceGetAttribute(%v)", a.attr), err)
		}
	}
	return d, nil
}

// name returns the device's name, up to its terminating NUL.
func (d *device) name() string { return cString(d.prop.Name[:]) }

// print writes the device's properties, one per line.
func (d *device) print(w io.Writer) {
	p := &d.prop
	field(w, "CUDA Capability Major/Minor version number:", "%d.%d", p.Major, p.Minor)
	field(w, "Total amount of global memory:", "%.0f MBytes (%d bytes)",
		float64(p.TotalGlobalMem)/(1<<20), p.TotalGlobalMem)
	cores := coresPerSM(w, p.Major, p.Minor)
	field(w, fmt.Sprintf("(%03d) Multiprocessors, (%03d) CUDA Cores/MP:", p.MultiProcessorCount, cores),
		"%d CUDA Cores", cores*p.MultiProcessorCount)
	field(w, "GPU Max Clock rate:", "%.0f MHz (%0.2f GHz)",
		float64(d.clockRate)*1e-3, float64(d.clockRate)*1e-6)
	field(w, "Memory Clock rate:", "%.0f MHz", float64(d.memoryClockRate)*1e-3)
	field(w, "Memory Bus Width:", "%d-bit", p.MemoryBusWidth)
	if p.L2CacheSize != 0 {
		field(w, "L2 Cache Size:", "%d bytes", p.L2CacheSize)
	}
	field(w, "Maximum Texture Dimension Size (x,y,z)", "1D=(%d), 2D=(%d, %d), 3D=(%d, %d, %d)",
		p.MaxTexture1D, p.MaxTexture2D[0], p.MaxTexture2D[1],
		p.MaxTexture3D[0], p.MaxTexture3D[1], p.MaxTexture3D[2])
	field(w, "Maximum Layered 1D Texture Size, (num) layers", "1D=(%d), %d layers",
		p.MaxTexture1DLayered[0], p.MaxTexture1DLayered[1])
	field(w, "Maximum Layered 2D Texture Size, (num) layers", "2D=(%d, %d), %d layers",
		p.MaxTexture2DLayered[0], p.MaxTexture2DLayered[1], p.MaxTexture2DLayered[2])
	field(w, "Total amount of constant memory:", "%d bytes", p.TotalConstMem)
	field(w, "Total amount of shared memory per block:", "%d bytes", p.SharedMemPerBlock)
	field(w, "Total shared memory per multiprocessor:", "%d bytes", p.SharedMemPerMultiprocessor)
	field(w, "Total number of registers available per block:", "%d", p.RegsPerBlock)
	field(w, "Warp size:", "%d", p.WarpSize)
	field(w, "Maximum number of threads per multiprocessor:", "%d", p.MaxThreadsPerMultiProcessor)
	field(w, "Maximum number of threads per block:", "%d", p.MaxThreadsPerBlock)
	field(w, "Max dimension size of a thread block (x,y,z):", "(%d, %d, %d)",
		p.MaxThreadsDim[0], p.MaxThreadsDim[1], p.MaxThreadsDim[2])
	field(w, "Max dimension size of a grid size    (x,y,z):", "(%d, %d, %d)",
		p.MaxGridSize[0], p.MaxGridSize[1], p.MaxGridSize[2])
	field(w, "Maximum memory pitch:", "%d bytes", p.MemPitch)
	field(w, "Texture alignment:", "%d bytes", p.TextureAlignment)
	field(w, "Concurrent copy and kernel execution:", "%s with %d copy engine(s)",
		yesNo(d.gpuOverlap != 0), p.AsyncEngineCount)
	field(w, "Run time limit on kernels:", "%s", yesNo(d.kernelTimeout != 0))
	field(w, "Integrated GPU sharing Host Memory:", "%s", yesNo(p.Integrated != 0))
	field(w, "Support host page-locked memory mapping:", "%s", yesNo(p.CanMapHostMemory != 0))
	field(w, "Alignment requirement for Surfaces:", "%s", yesNo(p.SurfaceAlignment != 0))
	field(w, "Device has ECC support:", "%s", enabled(p.ECCEnabled != 0))
	field(w, "Device supports Unified Addressing (UVA):", "%s", yesNo(p.UnifiedAddressing != 0))
	field(w, "Device supports Managed Memory:", "%s", yesNo(p.ManagedMemory != 0))
	field(w, "Device supports Compute Preemption:", "%s", yesNo(p.ComputePreemptionSupported != 0))
	field(w, "Supports Cooperative Kernel Launch:", "%s", yesNo(p.CooperativeLaunch != 0))
	field(w, "Device PCI Domain ID / Bus ID / location ID:", "%d / %d / %d",
		p.PciDomainID, p.PciBusID, p.PciDeviceID)
	fmt.Fprintln(w, "  Compute Mode:")
	fmt.Fprintf(w, "     < %s >\n", computeModeText(cudart.ComputeMode(d.computeMode)))
}

// printPeerAccess reports, for every ordered pair of distinct devices,
// whether the first can access the second's memory. It prints nothing for
// fewer than two devices.
func printPeerAccess(w io.Writer, devs []*device) error {
	if len(devs) < 2 {
		return nil
	}
	for _, a := range devs {
		for _, b := range devs {
			if a == b {
				continue
			}
			var can int32
			if err := cudart.DeviceCanAccessPeer(&can, a.id, b.id); err != nil {
				return callError("cudaDeviceCanAccessPeer", err)
			}
			fmt.Fprintf(w, "> Peer access from %s (GPU%d) -> %s (GPU%d) : %s\n",
				a.name(), a.id, b.name(), b.id, yesNo(can != 0))
		}
	}
	return nil
}

// field writes one "label  value" line, the value formatted by format and
// aligned in the column deviceQuery uses.
func field(w io.Writer, label, format string, args ...any) {
	fmt.Fprintf(w, "  %-46s %s\n", label, fmt.Sprintf(format, args...))
}

// smCores gives the CUDA cores per multiprocessor of each compute capability,
// keyed 0xMm (major, minor), in ascending order.
var smCores = []struct{ sm, cores int32 }{
	{0x30, 192}, {0x32, 192}, {0x35, 192}, {0x37, 192},
	{0x50, 128}, {0x52, 128}, {0x53, 128},
	{0x60, 64}, {0x61, 128}, {0x62, 128},
	{0x70, 64}, {0x72, 64}, {0x75, 64},
	{0x80, 64}, {0x86, 128}, {0x87, 128}, {0x89, 128},
	{0x90, 128},
	{0xa0, 128}, {0xa1, 128}, {0xa3, 128},
	{0xb0, 128}, {0xc0, 128}, {0xc1, 128},
}

// coresPerSM returns the CUDA cores per multiprocessor of compute capability
// major.minor. For one it does not know it says so on w and, like deviceQuery,
// assumes the newest architecture's count.
func coresPerSM(w io.Writer, major, minor int32) int32 {
	sm := major<<4 + minor
	for _, e := range smCores {
		if e.sm == sm {
			return e.cores
		}
	}
	last := smCores[len(smCores)-1].cores
	fmt.Fprintf(w, "MapSMtoCores for SM %d.%d is undefined.  Default to use %d Cores/SM\n", major, minor, last)
	return last
}

// computeModeText describes a compute mode as deviceQuery does.
func computeModeText(m cudart.ComputeMode) string {
	switch m {
	case cudart.ComputeModeDefault:
		return "Default (multiple host threads can use ::cudaSetDevice() with device simultaneously)"
	case cudart.ComputeModeExclusive:
		return "Exclusive (only one host thread in one process is able to use ::cudaSetDevice() with this device)"
	case cudart.ComputeModeProhibited:
		return "Prohibited (no host thread can use ::cudaSetDevice() with this device)"
	case cudart.ComputeModeExclusiveProcess:
		return "Exclusive Process (many threads in one process is able to use ::cudaSetDevice() with this device)"
	}
	return "Unknown"
}

// version formats a CUDA version number such as 13000 as "13.0".
func version(v int32) string {
	return fmt.Sprintf("%d.%d", v/1000, (v%100)/10)
}

func yesNo(v bool) string {
	if v {
		return "Yes"
	}
	return "No"
}

func enabled(v bool) string {
	if v {
		return "Enabled"
	}
	return "Disabled"
}

// cString returns b up to its first NUL byte as a string.
func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// callError describes a failed CUDA call. A CUDA status is shown with its
// number, as deviceQuery shows it; other errors, such as a *cudart.LibraryError
// listing where libcudart was looked for, are shown as they are.
func callError(call string, err error) error {
	var status cudart.Error
	if errors.As(err, &status) {
		return fmt.Errorf("%s returned %d\n-> %w", call, int32(status), err)
	}
	return fmt.Errorf("%s: %w", call, err)
}
