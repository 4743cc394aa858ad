package highlevel

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/gocuda/cuda/cudadrv"
	"github.com/gocuda/cuda/cudart"
	"github.com/gocuda/cuda/internal/dl"
)

// checkMessage checks the shape of an error of the package: it starts with
// the prefix, says it once, and names its operation (op).
func checkMessage(t *testing.T, name string, err error, op string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error", name)
		return
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "highlevel: ") || strings.Count(msg, "highlevel:") != 1 {
		t.Errorf("%s: %q: want one \"highlevel: \", at the start", name, msg)
	}
	if !strings.Contains(msg, op) {
		t.Errorf("%s: %q does not name the operation, %q", name, msg, op)
	}
}

// TestErrorMessages provokes the errors that need no GPU (nil, closed,
// bad sizes, sizes no device has) and checks their shape and what they
// match with errors.Is: refused input, and only that, matches ErrInvalid.
func TestErrorMessages(t *testing.T) {
	resetAllocators()
	t.Cleanup(resetAllocators)
	closedPool, err := NewMemoryPool(tagAllocator("upstream"))
	if err != nil {
		t.Fatal(err)
	}
	closedPool.Close()
	limited, err := NewMemoryPool(tagAllocator("upstream"))
	if err != nil {
		t.Fatal(err)
	}
	if err := limited.SetLimit(1000); err != nil {
		t.Fatal(err)
	}
	closedPinned := NewPinnedMemoryPool()
	closedPinned.Close()
	var nilStream *Stream
	var nilEvent *Event
	var nilMemory *Memory
	var nilPool *MemoryPool
	var nilAsync *MemoryAsyncPool
	const huge = 1 << 57
	for _, tc := range []struct {
		name string
		err  error
		op   string // a part of the message naming the operation
		is   error  // what errors.Is must match, if not nil
	}{
		{"Alloc(0)", second(Device(0).Alloc(0)), "alloc 0 bytes on device 0: size 0", ErrInvalid},
		{"Alloc(-1)", second(Device(1).Alloc(-1)), "alloc -1 bytes on device 1", ErrInvalid},
		{"Alloc(2^57)", second(Device(1).Alloc(huge)), "alloc 144115188075855872 bytes on device 1: out of memory", cudart.ErrorMemoryAllocation},
		{"Managed(0).Alloc(2^57)", second(Managed(0).Alloc(huge)), "bytes of managed memory on device 0", cudadrv.ERROR_OUT_OF_MEMORY},
		{"AllocPinnedUnpooled(2^57)", second(AllocPinnedUnpooled(huge)), "bytes of pinned memory: out of memory", cudart.ErrorMemoryAllocation},
		{"AllocPinned(-1)", second(AllocPinned(-1)), "alloc -1 bytes of pinned memory", ErrInvalid},
		{"AllocArray 2^60", second(AllocArray[float64](nil, 1<<60)), "alloc array of 1152921504606846976 float64: out of memory", cudart.ErrorMemoryAllocation},
		{"AllocArray -1", second(AllocArray[int32](nil, -1)), "alloc array of -1 int32: length -1", ErrInvalid},
		{"AllocArray of pointers", second(AllocArray[*int](nil, 1)), "alloc array of 1 *int", ErrInvalid},
		{"AllocArray from a pool over 2^57", second(AllocArray[byte](limited, huge)), "alloc array of 144115188075855872 uint8: out of memory", cudart.ErrorMemoryAllocation},
		{"pool limit", second(limited.Alloc(2000)), "alloc 2000 bytes from a memory pool: out of memory: the pool's limit is 1000 bytes", cudart.ErrorMemoryAllocation},
		{"pool upstream", second(AllocArray[byte](limited, 10)), "alloc array of 10 uint8: alloc 10 bytes from a memory pool: upstream", nil},
		{"pool SetLimit(-1)", limited.SetLimit(-1), "set the limit of a memory pool: limit -1", ErrInvalid},
		{"pool SetLimitFraction", limited.SetLimitFraction(0.5), "set the limit of a memory pool: by fraction", ErrInvalid},
		{"async pool SetLimit(-1)", nilAsync.SetLimit(-1), "set the limit of a memory async pool: limit -1", ErrInvalid},
		{"async pool Close", nilAsync.Close(), "close memory async pool: nil object", ErrNil},
		{"closed pinned pool FreeAllBlocks", closedPinned.FreeAllBlocks(), "free the blocks of a pinned memory pool: use of closed object", ErrClosed},
		{"closed pool Close", closedPool.Close(), "close memory pool: use of closed object", ErrClosed},
		{"nil pinned memory Free", (*PinnedMemory)(nil).Free(), "free pinned memory: nil object", ErrNil},
		{"closed pool", second(closedPool.Alloc(10)), "alloc 10 bytes from a memory pool: use of closed object", ErrClosed},
		{"closed pinned pool", second(closedPinned.Alloc(10)), "alloc 10 bytes from a pinned memory pool", ErrClosed},
		{"nil pool", second(nilPool.Alloc(1)), "alloc 1 bytes from a memory pool", ErrNil},
		{"nil async pool", second(nilAsync.AllocAsync(nil, 1)), "alloc 1 bytes async from a memory async pool", ErrNil},
		{"nil stream", nilStream.Synchronize(), "nil *Stream", ErrNil},
		{"nil event Record", nilEvent.Record(nil), "record event of device 0: nil object", ErrNil},
		{"nil event Close", nilEvent.Close(), "close event: nil object", ErrNil},
		{"nil event Wait", nilEvent.Wait(context.Background()), "wait for event of device 0: nil object", ErrNil},
		{"nil Memory Free", nilMemory.free(), "free memory: nil object", ErrNil},
		{"copy to no memory", CopyFromHost(MemoryPointer{}, []float32{1}), "copy 4 bytes to device memory: nil object: zero MemoryPointer", ErrNil},
		{"copy from no memory", CopyToHost(make([]int64, 2), MemoryPointer{}), "copy 16 bytes from device memory: nil object: zero MemoryPointer", ErrNil},
		{"copy from host nil", MemoryPointer{}.CopyFromHostPointer(nil, 8), "copy 8 bytes to device memory: nil host pointer", ErrInvalid},
		{"copy between no memory", MemoryPointer{}.CopyFromDevice(MemoryPointer{}, 8), "copy 8 bytes from device memory to device memory", ErrNil},
		{"OpenIPCEvent of nothing", second(OpenIPCEvent(0, IPCEventHandle{})), "open event handle on device 0: empty handle", ErrInvalid},
		{"OpenIPCMemory of nothing", second(OpenIPCMemory(1, IPCMemHandle{})), "open memory handle on device 1: empty handle", ErrInvalid},
		{"export no memory", second(MemoryPointer{}.IPCHandle()), "export device memory: nil object", ErrNil},
		{"export nil event", second(nilEvent.IPCHandle()), "export event of device 0: nil object", ErrNil},
		{"nil graph", second((*Graph)(nil).Instantiate(nil)), "instantiate graph: nil object", ErrNil},
		{"nil graph exec", (*GraphExec)(nil).Launch(nil), "launch graph: nil object", ErrNil},
		{"memset of no memory", MemoryPointer{}.MemsetAsync(nil, 0, 8), "memset 8 bytes of device memory", ErrNil},
		{"UnownedMemory(0)", second(UnownedMemory(nil, 0, nil)), "unowned memory of 0 bytes", ErrInvalid},
		{"interprocess event with timing", second(NewEvent(0, &EventOptions{Interprocess: true})), "new event on device 0: an interprocess event needs DisableTiming", ErrInvalid},
		{"LoadModule(nil)", second(LoadModule(nil)), "load module: empty image", ErrInvalid},
		{"Compile for no arch", second(Compile("x", &CompileOptions{Name: "x.cu", Arch: "x86"})), "compile x.cu: target \"x86\"", ErrInvalid},
		{"Compile with NUL", second(Compile("x\x00", &CompileOptions{Arch: "sm_90"})), "compile kernel.cu: NUL byte", ErrInvalid},
		{"Alloc(-5)", second(Alloc(-5)), "alloc -5 bytes: size -5: it must be positive", ErrInvalid},
		{"AllocAsync(-1)", second(AllocAsync(nil, -1)), "alloc -1 bytes async: size -1", ErrInvalid},
		{"bad size on a closed pool", second(closedPool.Alloc(-1)), "alloc -1 bytes from a memory pool: size -1", ErrInvalid},
		{"SetAllocator after use", func() error { SetAllocator(tagAllocator("x")); Alloc(1); return SetAllocator(nil) }(), "allocator already in use", ErrAllocatorInUse},
	} {
		checkMessage(t, tc.name, tc.err, tc.op)
		if tc.is != nil && !errors.Is(tc.err, tc.is) {
			t.Errorf("%s: %v does not match %v", tc.name, tc.err, tc.is)
		}
		if tc.is != ErrInvalid && errors.Is(tc.err, ErrInvalid) {
			t.Errorf("%s: %v matches ErrInvalid, kept for refused input", tc.name, tc.err)
		}
	}
}

// TestOutOfMemoryError checks that every allocation path refuses sizes
// beyond 2^56 bytes with an *OutOfMemoryError of its size and device,
// which matches the runtime's and the driver's out-of-memory statuses, and
// which the out-of-memory hook sees once, its report filled in.
func TestOutOfMemoryError(t *testing.T) {
	const huge = 1<<56 + 1
	pool, err := NewMemoryPool(Device(1))
	if err != nil {
		t.Fatal(err)
	}
	var seen []*OutOfMemoryError
	SetOutOfMemoryHook(func(e *OutOfMemoryError) { seen = append(seen, e) })
	defer SetOutOfMemoryHook(nil)
	for _, tc := range []struct {
		name string
		err  error
		size int
		dev  Device
	}{
		{"Device.Alloc", second(Device(1).Alloc(huge)), huge, 1},
		{"Managed(d).Alloc", second(Managed(0).Alloc(huge)), huge, 0},
		{"MemoryPool.Alloc", second(pool.Alloc(huge)), huge, 1},
		{"MemoryAsyncPool.AllocAsync", second((&MemoryAsyncPool{dev: 1, ctx: standInCtx}).AllocAsync(nil, huge)), huge, 1},
		{"AllocPinnedUnpooled", second(AllocPinnedUnpooled(huge)), huge, CPUDevice},
		{"AllocPinned", second(AllocPinned(huge)), huge, CPUDevice},
		{"PinnedMemoryPool.Alloc", second(NewPinnedMemoryPool().Alloc(huge)), huge, CPUDevice},
		{"AllocArray", second(AllocArray[int32](Device(1), huge)), huge * 4, 1},
		{"AllocArray, overflowing", second(AllocArray[int64](pool, 1<<61)), 1<<63 - 1, 1},
	} {
		if !checkOutOfMemory(t, tc.name, tc.err, tc.size, tc.dev) {
			continue
		}
		var oom *OutOfMemoryError
		errors.As(tc.err, &oom)
		if n := len(slices.DeleteFunc(slices.Clone(seen), func(e *OutOfMemoryError) bool { return e != oom })); n != 1 || !oom.reported {
			t.Errorf("%s: the hook saw the error %d times, want once, its report filled in", tc.name, n)
		}
		if errors.Is(tc.err, cudart.ErrorInvalidValue) {
			t.Errorf("%s: %v matches cudart.ErrorInvalidValue", tc.name, tc.err)
		}
		checkMessage(t, tc.name, tc.err, "out of memory")
	}
}

// checkOutOfMemory checks that err is an *OutOfMemoryError for size bytes
// on dev that matches both CUDA APIs' out-of-memory errors; false when it is
// no *OutOfMemoryError at all.
func checkOutOfMemory(t *testing.T, name string, err error, size int, dev Device) bool {
	t.Helper()
	var oom *OutOfMemoryError
	if !errors.As(err, &oom) {
		t.Errorf("%s: %v, want an *OutOfMemoryError", name, err)
		return false
	}
	if oom.Size != size || oom.Device != dev {
		t.Errorf("%s: %d bytes on %v, want %d on %v", name, oom.Size, oom.Device, size, dev)
	}
	if !errors.Is(err, cudart.ErrorMemoryAllocation) || !errors.Is(err, cudadrv.ERROR_OUT_OF_MEMORY) {
		t.Errorf("%s: %v does not match cudart.ErrorMemoryAllocation and cudadrv.ERROR_OUT_OF_MEMORY", name, err)
	}
	return true
}

// TestNoLibraryErrors checks, where CUDA's libraries cannot be loaded (the
// CPU test machine), that the operations that need them name themselves
// once, then the library and the variable that overrides its path.
func TestNoLibraryErrors(t *testing.T) {
	var le *dl.LibraryError
	if !errors.As(load(), &le) {
		t.Skip("CUDA's libraries load here")
	}
	pool, err := NewMemoryPool(Device(0))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		err  error
		op   string
	}{
		{"NewStream", second(NewStream(1, nil)), "new stream on device 1: "},
		{"StreamPriorityRange", func() error { _, _, err := StreamPriorityRange(1); return err }(), "stream priority range of device 1: "},
		{"ExternalStream", second(ExternalStream(0, 1)), "stream of device 1: "},
		{"NewEvent", second(NewEvent(0, nil)), "new event on device 0: "},
		{"ArrayFrom", second(ArrayFrom(nil, []float32{1})), "alloc array of 1 float32: default allocator: new memory pool: default device: "},
		{"ArrayFrom", second(ArrayFrom(Device(1), []int32{1, 2})), "alloc array of 2 int32: alloc 8 bytes on device 1: "},
		{"AllocArray a pool", second(AllocArray[float32](pool, 4)), "alloc array of 4 float32: alloc 16 bytes from a memory pool of device 0: "},
		{"LoadModule", second(LoadModule([]byte("x"))), "load module: "},
		{"Compile", second(Compile("x", nil)), "compile kernel.cu: default device: "},
		{"Device.Alloc", second(Device(0).Alloc(10)), "alloc 10 bytes on device 0: "},
		{"AllocAsync", second(AllocAsync(nil, 10)), "alloc 10 bytes async: default device: "},
		{"NewMemoryAsyncPool", second(NewMemoryAsyncPool(1)), "new memory async pool on device 1: "},
		{"DeviceMemoryAsyncPool", second(DeviceMemoryAsyncPool(1)), "memory async pool of device 1: "},
		{"AllocPinnedUnpooled", second(AllocPinnedUnpooled(10)), "alloc 10 bytes of pinned memory: "},
		{"AllocPinned", second(AllocPinned(10)), "alloc 10 bytes from a pinned memory pool: "},
		{"DefaultDevice", second(DefaultDevice()), "default device: "},
		{"DeviceCount", second(DeviceCount()), "device count: "},
		{"Properties", second(Device(1).Properties()), "properties of device 1: "},
		{"Name", second(Device(1).Name()), "name of device 1: "},
		{"Arch", second(Device(1).Arch()), "arch of device 1: "},
		{"MemInfo", func() error { _, _, err := Device(1).MemInfo(); return err }(), "memory info of device 1: "},
		{"Synchronize", Device(1).Synchronize(), "synchronize device 1: "},
		{"Do", Device(1).Do(func() error { return nil }), "make device 1 current: "},
		{"NewMemoryPool", second(NewMemoryPool(nil)), "new memory pool: default device: "},
	} {
		checkMessage(t, tc.name, tc.err, tc.op)
		if msg := tc.err.Error(); strings.Count(msg, "loading CUDA: cannot load "+le.Name) != 1 || strings.Count(msg, "(set $"+le.Override+" to its path)") != 1 {
			t.Errorf("%s: %q: want the library and $%s named once", tc.name, msg, le.Override)
		}
		if !errors.As(tc.err, new(*dl.LibraryError)) {
			t.Errorf("%s: %v is no *dl.LibraryError", tc.name, tc.err)
		}
	}
	// The runtime's version is the runtime's: it names libcudart.
	err = second(RuntimeVersion())
	checkMessage(t, "RuntimeVersion", err, "runtime version: cudaRuntimeGetVersion needs the CUDA runtime, libcudart: ")
	if msg := err.Error(); strings.Count(msg, "cannot load libcudart.so.") != 1 || strings.Count(msg, "(set $GOCUDA_CUDART to its path)") != 1 {
		t.Errorf("RuntimeVersion: %q: want libcudart and $GOCUDA_CUDART named once", msg)
	}
}

// second returns the error of a function's two results.
func second[T any](_ T, err error) error { return err }

// TestJoinedErrors checks that several errors of the package joined say
// the prefix once, inside an operation's error too, and match each.
func TestJoinedErrors(t *testing.T) {
	if err := join(nil, nil); err != nil {
		t.Errorf("join of nils = %v", err)
	}
	if err := join(nil, ErrClosed); err != ErrClosed {
		t.Errorf("join of one = %v, want it", err)
	}
	a := opErr("cuCtxSynchronize", cudart.ErrorLaunchFailure)
	for _, err := range []error{join(a, ErrFreed), opErr("synchronize", join(a, ErrFreed))} {
		checkMessage(t, "joined", err, "2 errors:\n\tcuCtxSynchronize: ")
		if !errors.Is(err, cudart.ErrorLaunchFailure) || !errors.Is(err, ErrFreed) {
			t.Errorf("%v does not match both errors", err)
		}
	}
}

// TestDriverStatus checks that a status of the driver matches, with
// errors.Is and errors.As, its cudadrv.Result and the cudart.Error of the
// same value, through an operation's error, and no other status; and that
// the driver's statuses the runtime lacks match no cudart.Error.
func TestDriverStatus(t *testing.T) {
	for _, tc := range []struct {
		drv cudadrv.Result
		rt  cudart.Error
	}{
		{cudadrv.ERROR_INVALID_VALUE, cudart.ErrorInvalidValue},
		{cudadrv.ERROR_OUT_OF_MEMORY, cudart.ErrorMemoryAllocation},
		{cudadrv.ERROR_NOT_INITIALIZED, cudart.ErrorInitializationError},
		{cudadrv.ERROR_NO_DEVICE, cudart.ErrorNoDevice},
		{cudadrv.ERROR_INVALID_DEVICE, cudart.ErrorInvalidDevice},
		{cudadrv.ERROR_INVALID_CONTEXT, cudart.ErrorDeviceUninitialized},
		{cudadrv.ERROR_INVALID_HANDLE, cudart.ErrorInvalidResourceHandle},
		{cudadrv.ERROR_NOT_READY, cudart.ErrorNotReady},
		{cudadrv.ERROR_ILLEGAL_ADDRESS, cudart.ErrorIllegalAddress},
		{cudadrv.ERROR_LAUNCH_FAILED, cudart.ErrorLaunchFailure},
		{cudadrv.ERROR_PEER_ACCESS_ALREADY_ENABLED, cudart.ErrorPeerAccessAlreadyEnabled},
		{cudadrv.ERROR_STREAM_CAPTURE_WRONG_THREAD, cudart.ErrorStreamCaptureWrongThread},
		{errCallRequiresNewerDriver, cudart.ErrorCallRequiresNewerDriver},
	} {
		err := opErr("op", driverStatus(tc.drv))
		if !errors.Is(err, tc.drv) || !errors.Is(err, tc.rt) {
			t.Errorf("%v does not match %v and %v", err, tc.drv, tc.rt)
		}
		if errors.Is(err, tc.drv+1) || errors.Is(err, tc.rt+1) || errors.Is(err, ErrClosed) {
			t.Errorf("%v matches another status", err)
		}
		var r cudadrv.Result
		var e cudart.Error
		if !errors.As(err, &r) || r != tc.drv || !errors.As(err, &e) || e != tc.rt {
			t.Errorf("errors.As(%v) gives %v and %v, want %v and %v", err, r, e, tc.drv, tc.rt)
		}
		if want := "highlevel: op: " + tc.drv.Error(); err.Error() != want {
			t.Errorf("message %q, want %q", err, want)
		}
	}
	for _, r := range []cudadrv.Result{cudadrv.ERROR_CONTEXT_ALREADY_CURRENT, cudadrv.Result(12345)} {
		var e cudart.Error
		if errors.As(driverStatus(r), &e) {
			t.Errorf("%v matches %v", r, e)
		}
	}
}

// TestStatusValues checks what driverStatus relies on, in the headers the
// packages were generated from: where the driver's and the runtime's
// statuses share a value, their names say the same, word for word or as
// one of the pairs below, whose descriptions say the same.
func TestStatusValues(t *testing.T) {
	renamed := map[string]string{
		"CUDA_ERROR_OUT_OF_MEMORY":          "cudaErrorMemoryAllocation",
		"CUDA_ERROR_NOT_INITIALIZED":        "cudaErrorInitializationError",
		"CUDA_ERROR_DEINITIALIZED":          "cudaErrorCudartUnloading",
		"CUDA_ERROR_DEVICE_UNAVAILABLE":     "cudaErrorDevicesUnavailable",
		"CUDA_ERROR_INVALID_IMAGE":          "cudaErrorInvalidKernelImage",
		"CUDA_ERROR_INVALID_CONTEXT":        "cudaErrorDeviceUninitialized",
		"CUDA_ERROR_MAP_FAILED":             "cudaErrorMapBufferObjectFailed",
		"CUDA_ERROR_UNMAP_FAILED":           "cudaErrorUnmapBufferObjectFailed",
		"CUDA_ERROR_NO_BINARY_FOR_GPU":      "cudaErrorNoKernelImageForDevice",
		"CUDA_ERROR_CONTEXT_ALREADY_IN_USE": "cudaErrorDeviceAlreadyInUse",
		"CUDA_ERROR_INVALID_HANDLE":         "cudaErrorInvalidResourceHandle",
		"CUDA_ERROR_NOT_FOUND":              "cudaErrorSymbolNotFound",
		"CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE": "cudaErrorSetOnActiveProcess",
		"CUDA_ERROR_LAUNCH_FAILED":          "cudaErrorLaunchFailure",
	}
	words := strings.NewReplacer("CUDA_ERROR_", "", "cudaError", "", "_", "")
	shared := 0
	for v := 1; v < 1000; v++ {
		e, ok := driverStatus(v).runtime()
		drv := cudadrv.Result(v).String()
		if !ok || !strings.HasPrefix(drv, "CUDA_ERROR_") {
			continue
		}
		shared++
		if rt := e.String(); !strings.EqualFold(words.Replace(drv), words.Replace(rt)) && renamed[drv] != rt {
			t.Errorf("%d is %s and %s", v, drv, rt)
		}
	}
	if shared < 80 {
		t.Errorf("only %d values shared", shared)
	}
}
