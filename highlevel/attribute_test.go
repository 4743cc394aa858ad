package highlevel

import (
	"cmp"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/gocuda/cuda/cudadrv"
	"github.com/gocuda/cuda/internal/dl"
)

func TestDeviceAttributeString(t *testing.T) {
	for _, tc := range []struct {
		a    DeviceAttribute
		want string
	}{
		{DeviceMaxThreadsPerBlock, "DeviceMaxThreadsPerBlock"},
		{DeviceWarpSize, "DeviceWarpSize"},
		{DevicePCIBusID, "DevicePCIBusID"},
		{DeviceComputeCapabilityMajor, "DeviceComputeCapabilityMajor"},
		{DeviceGPUDirectRDMAWritesOrdering, "DeviceGPUDirectRDMAWritesOrdering"},
		{0, "DeviceAttribute(0)"},
		{-1, "DeviceAttribute(-1)"},
		{DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_WIDTH), "DeviceAttribute(21)"},
		{DeviceAttribute(len(deviceAttributeNames)), "DeviceAttribute(" + strconv.Itoa(len(deviceAttributeNames)) + ")"},
		{100000, "DeviceAttribute(100000)"},
	} {
		if got := tc.a.String(); got != tc.want {
			t.Errorf("DeviceAttribute(%d).String() = %q, want %q", int(tc.a), got, tc.want)
		}
	}
}

func TestKernelAttributeString(t *testing.T) {
	for _, tc := range []struct {
		a    KernelAttribute
		want string
	}{
		{KernelMaxDynamicSharedSize, "KernelMaxDynamicSharedSize"},
		{KernelPreferredSharedCarveout, "KernelPreferredSharedCarveout"},
		{KernelRequiredClusterWidth, "KernelRequiredClusterWidth"},
		{KernelClusterSchedulingPolicyPreference, "KernelClusterSchedulingPolicyPreference"},
		{0, "KernelAttribute(0)"}, // CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, read-only
		{-1, "KernelAttribute(-1)"},
		{KernelAttribute(cudadrv.FUNC_ATTRIBUTE_NUM_REGS), "KernelAttribute(4)"},
		{KernelAttribute(cudadrv.FUNC_ATTRIBUTE_MAX), "KernelAttribute(16)"},
	} {
		if got := tc.a.String(); got != tc.want {
			t.Errorf("KernelAttribute(%d).String() = %q, want %q", int(tc.a), got, tc.want)
		}
	}
}

// deviceAttributeNames and kernelAttributeNames name each attribute by its
// value, without "Device" or "Kernel"; "" for a value that is no constant.
var (
	deviceAttributeNames = attributeNames(int(deviceAttributeLimit), func(i int) (string, bool) {
		a := DeviceAttribute(i)
		return strings.TrimPrefix(a.String(), "Device"), a.known()
	})
	kernelAttributeNames = attributeNames(16, func(i int) (string, bool) {
		a := KernelAttribute(i)
		return strings.TrimPrefix(a.String(), "Kernel"), a.known()
	})
)

func attributeNames(n int, name func(int) (string, bool)) []string {
	names := make([]string, n)
	for i := range names {
		if s, ok := name(i); ok {
			names[i] = s
		}
	}
	return names
}

// TestAttributeLimits checks that no constant lies past the limits the
// tables above and a device's attribute cache take.
func TestAttributeLimits(t *testing.T) {
	for a := deviceAttributeLimit; a < deviceAttributeLimit+1000; a++ {
		if s := a.String(); !strings.HasSuffix(s, ")") {
			t.Errorf("%s = %d, past deviceAttributeLimit %d", s, int(a), int(deviceAttributeLimit))
		}
	}
	for a := KernelAttribute(len(kernelAttributeNames)); a < 1000; a++ {
		if s := a.String(); !strings.HasSuffix(s, ")") {
			t.Errorf("%s = %d, past the %d kernelAttributeNames", s, int(a), len(kernelAttributeNames))
		}
	}
}

// TestAttributeValues checks that each constant is CUDA's attribute of its
// name: its name, in capitals and without "_", is CUDA's, but for the few
// named otherwise.
func TestAttributeValues(t *testing.T) {
	squash := func(s string) string { return strings.ToUpper(strings.ReplaceAll(s, "_", "")) }
	renamed := map[string]string{
		"MemoryPoolSupportedHandleTypes": "MEMPOOL_SUPPORTED_HANDLE_TYPES",
		// cudadrv names 102 by its deprecated alias.
		"VirtualMemoryManagementSupported": "VIRTUAL_ADDRESS_MANAGEMENT_SUPPORTED",
		"MaxDynamicSharedSize":             "MAX_DYNAMIC_SHARED_SIZE_BYTES",
		"PreferredSharedCarveout":          "PREFERRED_SHARED_MEMORY_CARVEOUT",
	}
	var n int
	for a, name := range deviceAttributeNames {
		if name == "" {
			continue
		}
		n++
		cuda := strings.TrimPrefix(cudadrv.Device_attribute(a).String(), "CU_DEVICE_ATTRIBUTE_")
		if want := cmp.Or(renamed[name], name); squash(cuda) != squash(want) {
			t.Errorf("Device%s is %d, %s", name, a, cuda)
		}
	}
	if n < 70 {
		t.Errorf("%d device attributes", n)
	}
	for a, name := range kernelAttributeNames {
		if name == "" {
			continue
		}
		cuda := strings.TrimPrefix(cudadrv.Function_attribute(a).String(), "CU_FUNC_ATTRIBUTE_")
		if want := cmp.Or(renamed[name], name); squash(cuda) != squash(want) {
			t.Errorf("Kernel%s is %d, %s", name, a, cuda)
		}
	}
}

// TestAttributeRefusals checks that an attribute highlevel does not name,
// and a value a kernel's attribute cannot hold, are refused before any
// CUDA call: here, where no driver may load, as where one does.
func TestAttributeRefusals(t *testing.T) {
	k := &Kernel{m: &Module{kernels: map[string]*Kernel{}}, name: "k"}
	tooBig := int(1) << 40
	deviceAttr := func(a DeviceAttribute) error { _, err := Device(0).Attribute(a); return err }
	for _, tc := range []struct {
		name string
		err  error
		msg  string
	}{
		{"device attribute -1", deviceAttr(-1), "highlevel: attribute DeviceAttribute(-1) of device 0: unknown device attribute"},
		{"device attribute 0", deviceAttr(0), "attribute DeviceAttribute(0) of device 0: unknown"},
		{"texture attribute", deviceAttr(DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_WIDTH)), "DeviceAttribute(22)"},
		{"deprecated attribute", deviceAttr(DeviceAttribute(cudadrv.DEVICE_ATTRIBUTE_GPU_OVERLAP)), "DeviceAttribute(15)"},
		{"past the last", deviceAttr(DeviceAttribute(len(deviceAttributeNames))), "DeviceAttribute(" + strconv.Itoa(len(deviceAttributeNames)) + ")"},
		{"far past", deviceAttr(1 << 20), "DeviceAttribute(1048576)"},
		{"on device -1", second(Device(-1).Attribute(-1)), "attribute DeviceAttribute(-1) of device -1: unknown device attribute"},
		{"kernel attribute -1", k.SetAttribute(0, -1, 1), "highlevel: set KernelAttribute(-1) of kernel k: unknown kernel attribute"},
		{"read-only kernel attribute", k.SetAttribute(0, KernelAttribute(cudadrv.FUNC_ATTRIBUTE_NUM_REGS), 8), "set KernelAttribute(4) of kernel k"},
		{"cluster size must be set", k.SetAttribute(0, KernelAttribute(cudadrv.FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET), 1), "KernelAttribute(10)"},
		{"past the last kernel attribute", k.SetAttribute(0, KernelAttribute(cudadrv.FUNC_ATTRIBUTE_MAX), 1), "KernelAttribute(16)"},
		{"value too big", k.SetAttribute(0, KernelMaxDynamicSharedSize, tooBig), "set KernelMaxDynamicSharedSize of kernel k: 1099511627776 does not fit in 32 bits"},
		{"value too small", k.SetAttribute(0, KernelPreferredSharedCarveout, -tooBig), "-1099511627776 does not fit"},
	} {
		if !errors.Is(tc.err, ErrInvalid) || errors.As(tc.err, new(*dl.LibraryError)) || !strings.Contains(tc.err.Error(), tc.msg) {
			t.Errorf("%s: %v, want a refusal matching ErrInvalid that says %q", tc.name, tc.err, tc.msg)
		}
	}
	if err := (*Kernel)(nil).SetAttribute(0, KernelMaxDynamicSharedSize, 1); !errors.Is(err, ErrNil) {
		t.Errorf("SetAttribute on a nil Kernel: %v, want ErrNil", err)
	}
}
