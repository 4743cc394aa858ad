package cudadrv

import (
	"bytes"
	"crypto/rand"
	_ "embed"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/gocuda/cuda/cudart"
	"github.com/gocuda/cuda/internal/dl"
	"github.com/gocuda/cuda/internal/gpuprobe"
)

//go:embed testdata/fill.ptx
var fillPTX string

// requireGPU ends the test as gpuprobe.Require does where the driver has no
// device or fails, fails it where the package cannot use the driver that
// has one, and makes device 0's primary context current on the test's OS
// thread.
func requireGPU(t *testing.T) Device {
	t.Helper()
	gpuprobe.Require(t)
	check(t, "Init", Init(0))
	var n int32
	if err := DeviceGetCount(&n); err != nil || n == 0 {
		t.Fatalf("DeviceGetCount = %d, %v, where the driver has a device", n, err)
	}
	// The current context is per OS thread: keep this goroutine on one.
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	var dev Device
	check(t, "DeviceGet", DeviceGet(&dev, 0))
	var ctx Context
	check(t, "DevicePrimaryCtxRetain", DevicePrimaryCtxRetain(&ctx, dev))
	t.Cleanup(func() { DevicePrimaryCtxRelease(dev) })
	check(t, "CtxSetCurrent", CtxSetCurrent(ctx))
	return dev
}

func check(t testing.TB, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// TestGPUSymbols looks up every function's symbol in the installed driver, by
// default and for the per-thread default stream: the generated table names
// only symbols that exist.
func TestGPUSymbols(t *testing.T) {
	requireGPU(t)
	var missing []string
	for _, s := range goSymbols {
		for _, name := range []string{s.Proc.Name(), s.Proc.PerThreadName()} {
			if name == "" {
				continue
			}
			if _, err := lib.Proc(name).Addr(); err != nil {
				missing = append(missing, name)
			}
		}
	}
	if len(missing) > 0 {
		t.Errorf("%s lacks %d of the symbols: %s", LibraryPath(), len(missing), strings.Join(missing, " "))
	}
	t.Logf("%d functions resolved in %s", len(goSymbols), LibraryPath())
}

func TestGPUDevice(t *testing.T) {
	dev := requireGPU(t)
	var v int32
	check(t, "DriverGetVersion", DriverGetVersion(&v))
	name := make([]byte, 256)
	check(t, "DeviceGetName", DeviceGetName(&name[0], int32(len(name)), dev))
	name = name[:bytes.IndexByte(name, 0)]
	var total uint64
	check(t, "DeviceTotalMem", DeviceTotalMem(&total, dev))
	var warp, major int32
	check(t, "DeviceGetAttribute", DeviceGetAttribute(&warp, DEVICE_ATTRIBUTE_WARP_SIZE, dev))
	check(t, "DeviceGetAttribute", DeviceGetAttribute(&major, DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev))
	t.Logf("driver %d; device 0: %s, %d MiB, compute capability %d, warp %d", v, name, total>>20, major, warp)
	if warp != 32 {
		t.Errorf("warp size %d, want 32", warp)
	}
	if major < 7 {
		t.Errorf("compute capability major %d: CUDA 13 needs 7.5 or later", major)
	}
	if err := DeviceGetAttribute(&warp, Device_attribute(-1), dev); err != ERROR_INVALID_VALUE {
		t.Errorf("DeviceGetAttribute(-1) = %v, want ERROR_INVALID_VALUE", err)
	}
	out, err := exec.Command("nvidia-smi", "--query-gpu=name", "--format=csv,noheader", "-i", "0").Output()
	if err != nil {
		t.Skipf("nvidia-smi: %v", err)
	}
	if want := strings.TrimSpace(string(out)); string(name) != want {
		t.Errorf("DeviceGetName = %q, nvidia-smi says %q", name, want)
	}
}

func TestGPUPrimaryContext(t *testing.T) {
	dev := requireGPU(t)
	var flags uint32
	var active int32
	check(t, "DevicePrimaryCtxGetState", DevicePrimaryCtxGetState(dev, &flags, &active))
	if active != 1 {
		t.Errorf("primary context active = %d after retain, want 1", active)
	}
	var cur Device = -1
	check(t, "CtxGetDevice", CtxGetDevice(&cur))
	if cur != dev {
		t.Errorf("CtxGetDevice = %d, want %d", cur, dev)
	}
	// The explicitly versioned name stays callable (cuStreamGetCtx_v2, in
	// CUDA 12 and 13 alike).
	var ctx Context
	check(t, "CtxGetCurrent", CtxGetCurrent(&ctx))
	var s Stream
	check(t, "StreamCreate", StreamCreate(&s, uint32(STREAM_NON_BLOCKING)))
	defer StreamDestroy(s)
	var sctx Context
	green := GreenCtx(1)
	check(t, "StreamGetCtx_v2", StreamGetCtx_v2(s, &sctx, &green))
	if sctx != ctx || green != 0 {
		t.Errorf("StreamGetCtx_v2 = context %#x, green context %#x; want %#x, 0", sctx, green, ctx)
	}
	// A second retain and its release balance.
	var again Context
	check(t, "DevicePrimaryCtxRetain", DevicePrimaryCtxRetain(&again, dev))
	if again != ctx {
		t.Errorf("second retain gave context %#x, want %#x", again, ctx)
	}
	check(t, "DevicePrimaryCtxRelease", DevicePrimaryCtxRelease(dev))
}

func TestGPUMemory(t *testing.T) {
	requireGPU(t)
	const n = 16 << 20
	src := make([]byte, n)
	rand.Read(src)
	var d Deviceptr
	check(t, "MemAlloc", MemAlloc(&d, n))
	defer MemFree(d)
	check(t, "MemcpyHtoD", MemcpyHtoD(d, unsafe.Pointer(&src[0]), n))
	dst := make([]byte, n)
	check(t, "MemcpyDtoH", MemcpyDtoH(unsafe.Pointer(&dst[0]), d, n))
	if !bytes.Equal(src, dst) {
		t.Fatal("16 MiB read back differ from what was written")
	}
	check(t, "MemsetD32", MemsetD32(d, 0xdeadbeef, n/4))
	check(t, "MemcpyDtoH", MemcpyDtoH(unsafe.Pointer(&dst[0]), d, n))
	for i := 0; i < n; i += 4 {
		if w := *(*uint32)(unsafe.Pointer(&dst[i])); w != 0xdeadbeef {
			t.Fatalf("word %d = %#x after MemsetD32, want 0xdeadbeef", i/4, w)
		}
	}
	var huge Deviceptr
	if err := MemAlloc(&huge, 1<<50); err != ERROR_OUT_OF_MEMORY {
		t.Errorf("MemAlloc(1 PiB) = %v, want ERROR_OUT_OF_MEMORY", err)
	}
}

// fill loads testdata/fill.ptx and returns its kernel.
func fill(t *testing.T) Function {
	t.Helper()
	image := append([]byte(fillPTX), 0)
	var mod Module
	check(t, "ModuleLoadData", ModuleLoadData(&mod, unsafe.Pointer(&image[0])))
	t.Cleanup(func() { ModuleUnload(mod) })
	var f, none Function
	check(t, "ModuleGetFunction", ModuleGetFunction(&f, mod, "fill"))
	if err := ModuleGetFunction(&none, mod, "nonesuch"); err != ERROR_NOT_FOUND {
		t.Errorf("ModuleGetFunction(nonesuch) = %v, want ERROR_NOT_FOUND", err)
	}
	return f
}

// kernelArgs is the argument block of fill, for n words at out: params points
// at each argument. The driver reads it through kernelParams, so it is
// pinned, and it holds no other Go pointer (cgo checks the whole object).
type kernelArgs struct {
	out     Deviceptr
	n, seed uint32
	params  [3]unsafe.Pointer
}

// newKernelArgs allocates out and makes the arguments; the test's cleanup
// frees and unpins them.
func newKernelArgs(t *testing.T, n, seed uint32) *kernelArgs {
	a := &kernelArgs{n: n, seed: seed}
	check(t, "MemAlloc", MemAlloc(&a.out, uint64(n)*4))
	t.Cleanup(func() { MemFree(a.out) })
	var pinner runtime.Pinner
	pinner.Pin(a)
	t.Cleanup(pinner.Unpin)
	a.params = [3]unsafe.Pointer{unsafe.Pointer(&a.out), unsafe.Pointer(&a.n), unsafe.Pointer(&a.seed)}
	return a
}

// checkFilled reads n words from d and checks them against fill's pattern.
func checkFilled(t *testing.T, d Deviceptr, n, seed uint32) {
	t.Helper()
	got := make([]uint32, n)
	check(t, "MemcpyDtoH", MemcpyDtoH(unsafe.Pointer(&got[0]), d, uint64(n)*4))
	for i, v := range got {
		if want := 3*uint32(i) + seed; v != want {
			t.Fatalf("out[%d] = %d, want %d", i, v, want)
		}
	}
}

func TestGPULaunchKernel(t *testing.T) {
	requireGPU(t)
	f := fill(t)
	const n = 1000
	args := newKernelArgs(t, n, 7)
	check(t, "LaunchKernel", LaunchKernel(f, (n+255)/256, 1, 1, 256, 1, 1, 0, 0, &args.params[0], nil))
	check(t, "CtxSynchronize", CtxSynchronize())
	checkFilled(t, args.out, n, 7)
}

func TestGPUMemoryPool(t *testing.T) {
	dev := requireGPU(t)
	var pool MemoryPool
	check(t, "DeviceGetDefaultMemPool", DeviceGetDefaultMemPool(&pool, dev))
	var s Stream
	check(t, "StreamCreate", StreamCreate(&s, uint32(STREAM_NON_BLOCKING)))
	defer StreamDestroy(s)
	used := func() uint64 {
		var v uint64
		check(t, "MemPoolGetAttribute", MemPoolGetAttribute(pool, MEMPOOL_ATTR_USED_MEM_CURRENT, unsafe.Pointer(&v)))
		return v
	}
	before := used()
	const size = 8 << 20
	var d Deviceptr
	check(t, "MemAllocFromPoolAsync", MemAllocFromPoolAsync(&d, size, pool, s))
	check(t, "MemsetD32Async", MemsetD32Async(d, 42, size/4, s))
	check(t, "StreamSynchronize", StreamSynchronize(s))
	if u := used(); u < before+size {
		t.Errorf("pool in use %d bytes after allocating %d, was %d", u, size, before)
	}
	var w uint32
	check(t, "MemcpyDtoH", MemcpyDtoH(unsafe.Pointer(&w), d+size-4, 4))
	if w != 42 {
		t.Errorf("last word = %d, want 42", w)
	}
	check(t, "MemFreeAsync", MemFreeAsync(d, s))
	check(t, "StreamSynchronize", StreamSynchronize(s))
	if u := used(); u != before {
		t.Errorf("pool in use %d bytes after freeing, want %d", u, before)
	}
}

func TestGPUGraphKernelNode(t *testing.T) {
	requireGPU(t)
	f := fill(t)
	const n = 4096
	args := newKernelArgs(t, n, 11)
	var g Graph
	check(t, "GraphCreate", GraphCreate(&g, 0))
	defer GraphDestroy(g)
	params := KERNEL_NODE_PARAMS{
		Func:         f,
		GridDimX:     n / 128,
		GridDimY:     1,
		GridDimZ:     1,
		BlockDimX:    128,
		BlockDimY:    1,
		BlockDimZ:    1,
		KernelParams: &args.params[0],
	}
	var node GraphNode
	check(t, "GraphAddKernelNode", GraphAddKernelNode(&node, g, nil, 0, &params))
	var got KERNEL_NODE_PARAMS
	check(t, "GraphKernelNodeGetParams", GraphKernelNodeGetParams(node, &got))
	if got.Func != f || got.GridDimX != n/128 || got.BlockDimX != 128 {
		t.Errorf("node params read back %+v", got)
	}
	var exec GraphExec
	check(t, "GraphInstantiate", GraphInstantiate(&exec, g, 0))
	defer GraphExecDestroy(exec)
	var s Stream
	check(t, "StreamCreate", StreamCreate(&s, 0))
	defer StreamDestroy(s)
	check(t, "GraphLaunch", GraphLaunch(exec, s))
	check(t, "StreamSynchronize", StreamSynchronize(s))
	checkFilled(t, args.out, n, 11)
}

// TestGPURuntimeInterop uses handles and memory from the runtime API with the
// driver API and back.
func TestGPURuntimeInterop(t *testing.T) {
	requireGPU(t)
	if err := cudart.Load(); err != nil {
		t.Skipf("no CUDA runtime: %v", err)
	}
	check(t, "cudart.SetDevice", cudart.SetDevice(0))
	var rs cudart.Stream
	check(t, "cudart.StreamCreate", cudart.StreamCreate(&rs))
	defer cudart.StreamDestroy(rs)
	var rid, did uint64
	check(t, "cudart.StreamGetId", cudart.StreamGetId(rs, &rid))
	check(t, "StreamGetId", StreamGetId(Stream(rs), &did))
	if rid != did {
		t.Errorf("stream id: runtime %d, driver %d", rid, did)
	}
	var ev Event
	check(t, "EventCreate", EventCreate(&ev, 0))
	defer EventDestroy(ev)
	check(t, "cudart.EventRecord", cudart.EventRecord(cudart.Event(ev), rs))
	check(t, "EventSynchronize", EventSynchronize(ev))

	const n = 1 << 20
	var p unsafe.Pointer
	check(t, "cudart.Malloc", cudart.Malloc(&p, n))
	defer cudart.Free(p)
	d := DeviceptrOf(p)
	if d.Pointer() != p {
		t.Fatalf("DeviceptrOf(%p).Pointer() = %p", p, d.Pointer())
	}
	check(t, "MemsetD8Async", MemsetD8Async(d, 0x5a, n, Stream(rs)))
	check(t, "cudart.StreamSynchronize", cudart.StreamSynchronize(rs))
	host := make([]byte, n)
	check(t, "cudart.Memcpy", cudart.Memcpy(unsafe.Pointer(&host[0]), d.Pointer(), n, cudart.MemcpyDeviceToHost))
	if i := bytes.IndexFunc(host, func(r rune) bool { return r != 0x5a }); i >= 0 {
		t.Fatalf("byte %d = %#x after the driver's memset, want 0x5a", i, host[i])
	}
}

// TestGPUPerThreadDefaultStream runs itself in a child process that selects
// the per-thread default stream before loading the driver, then launches and
// copies on stream 0, which now means the thread's own default stream.
func TestGPUPerThreadDefaultStream(t *testing.T) {
	if os.Getenv("GOCUDA_PERTHREAD_CHILD") == "" {
		requireGPU(t)
		cmd := exec.Command(os.Args[0], "-test.run=^TestGPUPerThreadDefaultStream$", "-test.v")
		cmd.Env = append(os.Environ(), "GOCUDA_PERTHREAD_CHILD=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestGPUPerThreadDefaultStream") {
			t.Errorf("child: %v\n%s", err, out)
		}
		return
	}
	check(t, "UsePerThreadDefaultStream", UsePerThreadDefaultStream())
	requireGPU(t)
	for _, p := range []*dl.Proc{procLaunchKernel, procMemcpyDtoH, procStreamSynchronize} {
		got, err := p.Addr()
		check(t, p.PerThreadName(), err)
		want, err := lib.Proc(p.PerThreadName()).Addr()
		check(t, p.PerThreadName(), err)
		if got != want {
			t.Errorf("%s resolves to %p, not %s at %p", p.Name(), got, p.PerThreadName(), want)
		}
	}
	f := fill(t)
	const n = 512
	args := newKernelArgs(t, n, 5)
	check(t, "LaunchKernel", LaunchKernel(f, n/128, 1, 1, 128, 1, 1, 0, 0, &args.params[0], nil))
	check(t, "StreamSynchronize", StreamSynchronize(0))
	checkFilled(t, args.out, n, 5)
}

// TestGPUGraphMemcpyNodeUnion adds a memcpy node through GraphNodeParams,
// whose union is integers to the garbage collector, with a Go host buffer
// as the source that nothing else references: SetMemcpy pins it, so the
// collections and allocations before the graph runs neither free nor reuse
// it, and the device receives its bytes. Stored through Memcpy() instead,
// the buffer was collected and its memory reused before the graph ran.
func TestGPUGraphMemcpyNodeUnion(t *testing.T) {
	requireGPU(t)
	const n = 1 << 20
	var d Deviceptr
	check(t, "MemAlloc", MemAlloc(&d, n))
	defer MemFree(d)
	// The pin outlives the graph: deferred first, it is undone last.
	var pinner runtime.Pinner
	defer pinner.Unpin()
	var ctx Context
	check(t, "CtxGetCurrent", CtxGetCurrent(&ctx))
	var g Graph
	check(t, "GraphCreate", GraphCreate(&g, 0))
	defer GraphDestroy(g)

	var params GraphNodeParams
	params.Type = GRAPH_NODE_TYPE_MEMCPY
	func() {
		src := make([]byte, n)
		for i := range src {
			src[i] = byte(i*7 + 3)
		}
		check(t, "SetMemcpy", params.SetMemcpy(MEMCPY_NODE_PARAMS{CopyCtx: ctx, CopyParams: MEMCPY3D{
			SrcMemoryType: MEMORYTYPE_HOST, SrcHost: unsafe.Pointer(&src[0]), SrcPitch: n, SrcHeight: 1,
			DstMemoryType: MEMORYTYPE_DEVICE, DstDevice: d, DstPitch: n, DstHeight: 1,
			WidthInBytes: n, Height: 1, Depth: 1,
		}}, &pinner))
	}()
	var node GraphNode
	check(t, "GraphAddNode", graphAddNode(&node, g, &params))
	// Collect, and fill the heap with other bytes, so that an unpinned
	// buffer would be freed and its memory written over.
	var junk [][]byte
	for range 64 {
		runtime.GC()
		b := make([]byte, n)
		for i := range b {
			b[i] = 0xee
		}
		junk = append(junk, b)
	}
	runtime.KeepAlive(junk)
	var exec GraphExec
	check(t, "GraphInstantiate", GraphInstantiate(&exec, g, 0))
	defer GraphExecDestroy(exec)
	var s Stream
	check(t, "StreamCreate", StreamCreate(&s, 0))
	defer StreamDestroy(s)
	check(t, "GraphLaunch", GraphLaunch(exec, s))
	check(t, "StreamSynchronize", StreamSynchronize(s))
	got := make([]byte, n)
	check(t, "MemcpyDtoH", MemcpyDtoH(unsafe.Pointer(&got[0]), d, n))
	for i, v := range got {
		if want := byte(i*7 + 3); v != want {
			t.Fatalf("device byte %d = %#x, want %#x: the host buffer was not kept", i, v, want)
		}
	}
}
