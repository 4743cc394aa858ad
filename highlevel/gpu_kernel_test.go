package highlevel

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/gocuda/cuda/cudadrv"
	"github.com/gocuda/cuda/cudart"
	"github.com/gocuda/cuda/nvrtc"
)

const testKernels = `
extern "C" __global__ void saxpy(float a, const float *x, float *y, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) y[i] = a * x[i] + y[i];
}
struct scale { float mul, add; };
extern "C" __global__ void affine(scale s, float *y, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) y[i] = s.mul * y[i] + s.add;
}
template <typename T> __global__ void fill(T *p, T v, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) p[i] = v;
}
extern "C" __global__ void empty() {}
extern "C" __global__ void cluster_rank(unsigned *out) {
	unsigned r;
	asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
	if (threadIdx.x == 0) out[blockIdx.x] = r;
}
extern "C" __global__ void dynamic_smem(int *out) {
	extern __shared__ int buf[];
	buf[threadIdx.x] = threadIdx.x;
	__syncthreads();
	out[threadIdx.x] = buf[blockDim.x - 1 - threadIdx.x];
}
extern "C" __global__ void fault(int *p) { p[(size_t)blockIdx.x << 28] = 1; }
#define WEIGH(N) struct vals##N { long long v[N]; }; \
extern "C" __global__ void weigh##N(vals##N s, long long *out) { \
	long long t = 0; \
	for (int i = 0; i < N; i++) t += s.v[i] * (i + 1); \
	*out = t; \
}
WEIGH(7)
WEIGH(20)
WEIGH(100)
`

// testModule compiles testKernels for the device and loads them.
func testModule(t *testing.T) *Module {
	t.Helper()
	c, err := Compile(testKernels, &CompileOptions{Name: "test.cu", NameExpressions: []string{"fill<int>"}})
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	m, err := LoadModule(c.Image)
	if err != nil {
		t.Fatalf("LoadModule: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func kernel(t *testing.T, m *Module, name string) *Kernel {
	t.Helper()
	k, err := m.Kernel(name)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestGPUCompileAndLaunch(t *testing.T) {
	d := gpu(t)
	m := testModule(t)
	s, err := NewStream(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	const n = 1000
	xs, ys := make([]float32, n), make([]float32, n)
	for i := range xs {
		xs[i], ys[i] = float32(i), 1
	}
	x, _ := ArrayFrom(nil, xs)
	y, _ := ArrayFrom(nil, ys)
	defer x.Free()
	defer y.Free()
	cfg := LaunchConfig{Grid: Dim3{X: (n + 127) / 128}, Block: Dim3{X: 128}}
	if err := kernel(t, m, "saxpy").Launch(s, cfg, float32(2), x, y.MemoryPointer(), int32(n)); err != nil {
		t.Fatal(err)
	}
	if err := kernel(t, m, "affine").Launch(s, cfg, struct{ Mul, Add float32 }{10, 3}, y, int32(n)); err != nil {
		t.Fatal(err)
	}
	s.Synchronize()
	got, _ := y.ToHost()
	for i, v := range got {
		if want := 10*(2*float32(i)+1) + 3; v != want {
			t.Fatalf("y[%d] = %v, want %v", i, v, want)
		}
	}

	// A template instance, by its lowered name; the nil stream.
	c, _ := Compile(testKernels, &CompileOptions{Name: "test.cu", NameExpressions: []string{"fill<int>", "fill<float>"}})
	ints, _ := AllocArray[int32](nil, n)
	defer ints.Free()
	if err := kernel(t, m, c.LoweredNames["fill<int>"]).Launch(nil, cfg, ints, int32(7), int32(n)); err != nil {
		t.Fatal(err)
	}
	// The parameter types of a C++ kernel come from its lowered name: a
	// float parameter takes only a float32.
	cm, err := LoadModule(c.Image)
	if err != nil {
		t.Fatal(err)
	}
	defer cm.Close()
	fillFloat := kernel(t, cm, c.LoweredNames["fill<float>"])
	for _, v := range []any{int32(7), uint32(7)} {
		if err := fillFloat.Launch(nil, cfg, y, v, int32(n)); !errors.Is(err, ErrArgument) || !strings.Contains(err.Error(), "for a float parameter") {
			t.Errorf("fill<float> with %T: %v, want ErrArgument for a float parameter", v, err)
		}
	}
	if got, _ := ints.ToHost(); got[0] != 7 || got[n-1] != 7 {
		t.Errorf("fill<int>: %d ... %d", got[0], got[n-1])
	}
}

func TestGPUCompileCache(t *testing.T) {
	gpu(t)
	a, err := Compile(testKernels, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := Compile(testKernels, nil); b != a {
		t.Error("a second Compile of the same source compiled again")
	}
	if b, _ := Compile(testKernels, &CompileOptions{Defines: map[string]string{"N": "4"}}); b == a {
		t.Error("other options gave the cached result")
	}
	ClearCaches()
	if b, _ := Compile(testKernels, nil); b == a {
		t.Error("ClearCaches kept the result")
	}
	ptx, err := Compile(testKernels, &CompileOptions{Arch: "compute_90"})
	if err != nil || !strings.Contains(string(ptx.Image), ".entry saxpy") {
		t.Fatalf("PTX: %v", err)
	}
	m, err := LoadModule(ptx.Image)
	if err != nil {
		t.Fatalf("loading PTX: %v", err)
	}
	defer m.Close()
	if _, err := m.Kernel("saxpy"); err != nil {
		t.Error(err)
	}
}

func TestGPUCompileError(t *testing.T) {
	gpu(t)
	src := "extern \"C\" __global__ void k(int *p) {\n\tp[0] = undeclared;\n}\n"
	_, err := Compile(src, &CompileOptions{Name: "mistake.cu"})
	var ce *CompileError
	if !errors.As(err, &ce) || !errors.Is(err, nvrtc.ERROR_COMPILATION) {
		t.Fatalf("Compile = %v, want a *CompileError wrapping ERROR_COMPILATION", err)
	}
	if !strings.Contains(err.Error(), "mistake.cu(2)") {
		t.Errorf("the error does not name line 2:\n%v", err)
	}
	if _, err := Compile(src, &CompileOptions{Options: []string{"--no-such-option"}}); !errors.Is(err, nvrtc.ERROR_INVALID_OPTION) {
		t.Errorf("bad option: %v", err)
	}
	if _, err := Compile(src, &CompileOptions{Arch: "90"}); err == nil {
		t.Error("target 90 accepted")
	}
}

func TestGPULaunchErrors(t *testing.T) {
	d := gpu(t)
	m := testModule(t)
	if _, err := m.Kernel("no_such_kernel"); err == nil || !strings.Contains(err.Error(), `"no_such_kernel"`) {
		t.Errorf("unknown kernel: %v", err)
	}
	saxpy := kernel(t, m, "saxpy")
	if saxpy.NumParams() != 4 {
		t.Errorf("saxpy has %d parameters, want 4", saxpy.NumParams())
	}
	y, _ := AllocArray[float32](nil, 32)
	defer y.Free()
	one := LaunchConfig{Grid: Dim3{X: 1}, Block: Dim3{X: 32}}
	for _, tt := range []struct {
		name string
		cfg  LaunchConfig
		args []any
		want string
	}{
		{"too few arguments", one, []any{float32(1), y, y}, "takes 4 arguments, got 3"},
		{"wrong type", one, []any{1.0, y, y, int32(32)}, "argument 0: float64 is 8 bytes, the parameter 4"},
		{"int for a 4-byte int", one, []any{float32(1), y, y, 32}, "argument 3: int is 8 bytes, the parameter 4"},
		{"Go slice", one, []any{float32(1), []float32{1}, y, int32(32)}, "argument 1: []float32 cannot be passed"},
		{"block too large", LaunchConfig{Block: Dim3{X: 64, Y: 32}}, []any{float32(1), y, y, int32(32)}, "more than the 1024"},
		{"too much shared memory", LaunchConfig{Block: Dim3{X: 32}, SharedMem: 1 << 30}, []any{float32(1), y, y, int32(32)}, "bytes of shared memory"},
	} {
		if err := saxpy.Launch(nil, tt.cfg, tt.args...); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
	s, _ := NewStream(d, nil)
	s.Close()
	if err := saxpy.Launch(s, one, float32(1), y, y, int32(32)); !errors.Is(err, ErrClosed) {
		t.Errorf("launch on a closed stream: %v", err)
	}
	// A cooperative grid larger than the device holds at once: CUDA's error.
	big := LaunchConfig{Grid: Dim3{X: 1 << 20}, Block: Dim3{X: 1024}, Cooperative: true}
	if err := kernel(t, m, "empty").Launch(nil, big); !errors.Is(err, cudadrv.ERROR_COOPERATIVE_LAUNCH_TOO_LARGE) {
		t.Errorf("cooperative launch too large: %v", err)
	}
	m2 := testModule(t)
	k := kernel(t, m2, "empty")
	m2.Close()
	if err := k.Launch(nil, one); !errors.Is(err, ErrClosed) {
		t.Errorf("launch from a closed module: %v", err)
	}
	// Junk taken for PTX may load (the driver compiles lazily); its
	// kernels cannot be found.
	if junk, err := LoadModule([]byte("not device code")); err == nil {
		if _, err := junk.Kernel("k"); err == nil {
			t.Error("a kernel of junk was found")
		}
		junk.Close()
	}
}

func TestGPULaunchConfig(t *testing.T) {
	d := gpu(t)
	m := testModule(t)
	if cc, _ := d.ComputeCapability(); cc >= "90" {
		// Clusters of 2: block ranks 0, 1, 0, 1, ...
		out, _ := AllocArray[uint32](nil, 8)
		defer out.Free()
		if err := kernel(t, m, "cluster_rank").Launch(nil, LaunchConfig{Grid: Dim3{X: 8}, Block: Dim3{X: 32}, Cluster: Dim3{X: 2}}, out); err != nil {
			t.Fatal(err)
		}
		got, _ := out.ToHost()
		for i, r := range got {
			if r != uint32(i%2) {
				t.Errorf("cluster ranks %v, want 0 1 0 1 ...", got)
				break
			}
		}
	}
	// Cooperative launch of a grid that fits.
	if err := kernel(t, m, "empty").Launch(nil, LaunchConfig{Grid: Dim3{X: 2}, Block: Dim3{X: 64}, Cooperative: true}); err != nil {
		t.Errorf("cooperative launch: %v", err)
	}
	// Dynamic shared memory beyond 48 KiB needs the attribute raised.
	k := kernel(t, m, "dynamic_smem")
	out, _ := AllocArray[int32](nil, 256)
	defer out.Free()
	big := LaunchConfig{Block: Dim3{X: 256}, SharedMem: 100 << 10}
	if err := k.Launch(nil, big, out); err == nil {
		t.Error("100 KiB of dynamic shared memory launched without the attribute")
	}
	if err := k.SetAttribute(d, KernelMaxDynamicSharedSize, 100<<10); err != nil {
		t.Fatal(err)
	}
	if err := k.Launch(nil, big, out); err != nil {
		t.Fatal(err)
	}
	got, _ := out.ToHost()
	if got[0] != 255 || got[255] != 0 {
		t.Errorf("dynamic_smem: %d ... %d", got[0], got[255])
	}
	a, err := k.Attributes(d)
	if err != nil || a.MaxDynamicSharedSize != 100<<10 || a.MaxThreadsPerBlock == 0 || a.NumRegs == 0 || a.BinaryVersion == 0 {
		t.Errorf("Attributes = %+v, %v", a, err)
	}
	if err := k.SetAttribute(d, KernelAttribute(cudadrv.FUNC_ATTRIBUTE_NUM_REGS), 8); !errors.Is(err, ErrInvalid) {
		t.Errorf("setting a read-only attribute: %v, want an error matching ErrInvalid", err)
	}
}

// TestGPULaunchDevices launches from many goroutines on every device's
// streams and checks each result: no launch goes to the wrong GPU.
func TestGPULaunchDevices(t *testing.T) {
	gpu(t)
	m := testModule(t)
	n, _ := DeviceCount()
	c, _ := Compile(testKernels, &CompileOptions{Name: "test.cu", NameExpressions: []string{"fill<int>"}})
	k := kernel(t, m, c.LoweredNames["fill<int>"])
	var wg sync.WaitGroup
	errs := make(chan error, 16*n)
	for g := range 16 * n {
		d := Device(g % n)
		wg.Go(func() {
			s, err := NewStream(d, nil)
			if err != nil {
				errs <- err
				return
			}
			defer s.Close()
			p, err := d.Alloc(4 * 256)
			if err != nil {
				errs <- err
				return
			}
			defer p.Memory().free()
			for i := range 50 {
				if err := k.Launch(s, LaunchConfig{Block: Dim3{X: 256}}, p, int32(g*1000+i), int32(256)); err != nil {
					errs <- err
					return
				}
			}
			s.Synchronize()
			var out [256]int32
			if err := p.CopyToHostPointer(unsafe.Pointer(&out[0]), 4*256); err != nil {
				errs <- err
				return
			}
			if out[0] != int32(g*1000+49) || out[255] != out[0] {
				errs <- fmt.Errorf("goroutine %d on %v read %d", g, d, out[0])
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestGPUKernelFault runs a kernel that writes out of bounds in a child
// process, since the error spoils the device's context for the rest of the
// process, and checks what the child saw.
func TestGPUKernelFault(t *testing.T) {
	gpu(t)
	if os.Getenv("HL_FAULT_CHILD") == "1" {
		kernelFaultChild(t)
		return
	}
	if os.Getenv("HL_SANITIZER") != "" {
		t.Skip("the deliberate fault would count as a memcheck error")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestGPUKernelFault$", "-test.v")
	cmd.Env = append(os.Environ(), "HL_FAULT_CHILD=1")
	out, err := cmd.CombinedOutput()
	t.Logf("child:\n%s", out)
	if err != nil {
		t.Fatalf("child: %v", err)
	}
}

func kernelFaultChild(t *testing.T) {
	d := Device(0)
	m := testModule(t)
	p, _ := d.Alloc(4)
	n, _ := DeviceCount()
	if n > 1 { // device 1's context is made before the fault
		if _, err := Device(1).Alloc(4); err != nil {
			t.Fatal(err)
		}
	}
	// Blocks write terabytes past 4 bytes: an illegal address.
	if err := kernel(t, m, "fault").Launch(nil, LaunchConfig{Grid: Dim3{X: 1 << 12}, Block: Dim3{X: 256}}, p); err != nil {
		t.Fatalf("the launch itself failed: %v", err)
	}
	// An address past the allocation, or outside the global address space
	// (a kernel error the driver reports either way).
	err := d.Synchronize()
	if !errors.Is(err, cudart.ErrorIllegalAddress) && !errors.Is(err, cudart.ErrorInvalidAddressSpace) {
		t.Fatalf("Synchronize after the fault = %v, want cudaErrorIllegalAddress or cudaErrorInvalidAddressSpace", err)
	}
	t.Logf("Synchronize: %v", err)
	// The error is sticky: the device's context is unusable from now on.
	_, err = d.Alloc(4)
	t.Logf("Malloc afterwards: %v", err)
	if err == nil {
		t.Error("Malloc after the fault succeeded")
	}
	// What does not need a context still works: compiling.
	if _, err := Compile("extern \"C\" __global__ void k() {}", &CompileOptions{Arch: "sm_90"}); err != nil {
		t.Errorf("Compile after the fault: %v", err)
	}
	// Another device, whose context was made before the fault: the run
	// logs whether it still works (on the driver seen, the sticky error
	// also came back from calls for it).
	if n > 1 {
		_, err := Device(1).Alloc(4)
		t.Logf("device 1 Malloc afterwards: %v", err)
	}
}

func TestGPUOccupancyCUDA(t *testing.T) {
	d := gpu(t)
	m := testModule(t)
	k := kernel(t, m, "saxpy")
	blocks, err := k.MaxActiveBlocksPerSM(d, 256, 0)
	if err != nil || blocks < 1 {
		t.Fatalf("MaxActiveBlocksPerSM = %d, %v", blocks, err)
	}
	grid, block, err := k.MaxPotentialBlockSize(d, 0, 0)
	if err != nil || block < 32 || block > 1024 || grid < 1 {
		t.Errorf("MaxPotentialBlockSize = %d, %d, %v", grid, block, err)
	}
	if _, b, _ := k.MaxPotentialBlockSize(d, 0, 128); b > 128 {
		t.Errorf("block size limit 128 gave %d", b)
	}
}

func TestGPUProfile(t *testing.T) {
	gpu(t)
	want := errors.New("from fn")
	ran := false
	if err := Profile(func() error { ran = true; return want }); !errors.Is(err, want) || !ran {
		t.Errorf("Profile = %v (ran %v)", err, ran)
	}
}

// TestGPULaunchArgumentSizes launches kernels whose parameters take 64
// bytes, passed by value, and 168 and 808, passed in the kernel's spare
// buffer, from goroutines at once, so that launches also find the spare
// taken.
func TestGPULaunchArgumentSizes(t *testing.T) {
	gpu(t)
	m := testModule(t)
	for _, tt := range []struct {
		n    int
		args func(v []int64) any
	}{
		{7, func(v []int64) any { return [7]int64(v) }},
		{20, func(v []int64) any { return [20]int64(v) }},
		{100, func(v []int64) any { return [100]int64(v) }},
	} {
		k := kernel(t, m, fmt.Sprint("weigh", tt.n))
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				s, err := NewStream(0, nil)
				if err != nil {
					t.Error(err)
					return
				}
				defer s.Close()
				out, err := AllocArray[int64](nil, 1)
				if err != nil {
					t.Error(err)
					return
				}
				defer out.Free()
				v := make([]int64, tt.n)
				for rep := range 20 {
					var want int64
					for i := range v {
						v[i] = int64(g*1000 + rep*10 + i)
						want += v[i] * int64(i+1)
					}
					if err := k.Launch(s, LaunchConfig{}, tt.args(v), out); err != nil {
						t.Errorf("weigh%d: %v", tt.n, err)
						return
					}
					got := make([]int64, 1)
					if err := out.CopyToHostAsync(s, got); err != nil {
						t.Error(err)
						return
					}
					if err := s.Synchronize(); err != nil {
						t.Error(err)
						return
					}
					if got[0] != want {
						t.Errorf("weigh%d, goroutine %d, round %d: %d, want %d", tt.n, g, rep, got[0], want)
						return
					}
				}
			})
		}
		wg.Wait()
	}
}
