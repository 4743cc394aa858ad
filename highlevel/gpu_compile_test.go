package highlevel

import (
	"os"
	"os/exec"
	"testing"
	"unsafe"
)

const setKernel = `extern "C" __global__ void set(unsigned *p, unsigned v) { p[threadIdx.x] = v; }`

// TestGPUCompileForDevice compiles for each device's architecture, as
// Device.Arch names it, and runs the code there.
func TestGPUCompileForDevice(t *testing.T) {
	gpu(t)
	n, _ := DeviceCount()
	for d := range Device(n) {
		arch, err := d.Arch()
		cc, _ := d.ComputeCapability()
		if err != nil || arch != "sm_"+cc {
			t.Fatalf("%v: Arch = %q, %v; compute capability %q", d, arch, err, cc)
		}
		c, err := Compile(setKernel, &CompileOptions{Arch: arch})
		if err != nil {
			t.Fatal(err)
		}
		if c.Arch != arch {
			t.Errorf("compiled for %q, asked for %q", c.Arch, arch)
		}
		m, err := LoadModule(c.Image)
		if err != nil {
			t.Fatal(err)
		}
		k, _ := m.Kernel("set")
		p, err := d.Alloc(4)
		if err != nil {
			t.Fatal(err)
		}
		s, _ := NewStream(d, nil)
		if err := k.Launch(s, LaunchConfig{Grid: Dim3{X: 1}, Block: Dim3{X: 1}}, p, uint32(40+d)); err != nil {
			t.Fatalf("%v: %v", d, err)
		}
		s.Synchronize()
		var got uint32
		p.CopyToHostPointer(unsafe.Pointer(&got), 4)
		if got != uint32(40+d) {
			t.Errorf("%v: the kernel wrote %d, want %d", d, got, 40+d)
		}
		s.Close()
		p.Memory().free()
		m.Close()
	}
}

// TestGPULoadModuleMakesNoContext loads a module in a child process before
// anything else: no primary context may appear until a kernel runs, and
// then only on the device it runs on, the last one.
func TestGPULoadModuleMakesNoContext(t *testing.T) {
	gpu(t)
	n, _ := DeviceCount()
	last := Device(n - 1)
	if arch := os.Getenv("HL_LOAD_CHILD"); arch != "" {
		loadModuleChild(t, arch, last)
		return
	}
	// The architecture comes from here: asking for it makes a context.
	arch, err := last.Arch()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestGPULoadModuleMakesNoContext$", "-test.v")
	cmd.Env = append(os.Environ(), "HL_LOAD_CHILD="+arch)
	out, err := cmd.CombinedOutput()
	t.Logf("child:\n%s", out)
	if err != nil {
		t.Fatalf("child: %v", err)
	}
}

func loadModuleChild(t *testing.T, arch string, last Device) {
	n, _ := DeviceCount()
	active := func() []bool {
		a := make([]bool, n)
		for d := range Device(n) {
			ok, err := d.primaryContextActive()
			if err != nil {
				t.Fatal(err)
			}
			a[d] = ok
		}
		return a
	}
	c, err := Compile(setKernel, &CompileOptions{Arch: arch}) // an explicit target: no device
	if err != nil {
		t.Fatal(err)
	}
	m, err := LoadModule(c.Image)
	if err != nil {
		t.Fatalf("LoadModule as the first call: %v", err)
	}
	defer m.Close()
	for d, on := range active() {
		if on {
			t.Errorf("device %d has a primary context after Compile and LoadModule", d)
		}
	}
	// The program's first device is last: Module.Kernel reads the
	// parameters in its context, and no other device gets one.
	p, err := last.Alloc(4)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Memory().free()
	k, err := m.Kernel("set")
	if err != nil {
		t.Fatal(err)
	}
	if k.NumParams() != 2 {
		t.Errorf("set has %d parameters, want 2", k.NumParams())
	}
	if err := k.Launch(nil, LaunchConfig{Grid: Dim3{X: 1}, Block: Dim3{X: 1}}, p, uint32(77)); err != nil {
		t.Fatal(err)
	}
	var got uint32
	if err := p.CopyToHostPointer(unsafe.Pointer(&got), 4); err != nil || got != 77 {
		t.Errorf("the kernel wrote %d (%v), want 77", got, err)
	}
	for d, on := range active() {
		if on != (Device(d) == last) {
			t.Errorf("device %d: primary context active %v after a launch on %v", d, on, last)
		}
	}
	t.Logf("%d devices, launched on %v, compiled for %s", n, last, arch)
}
