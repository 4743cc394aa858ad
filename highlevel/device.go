package highlevel

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gocuda/cuda/cudadrv"
	"github.com/gocuda/cuda/cudart"

	"github.com/gocuda/cuda/highlevel/internal/driver"
)

// A Device is a CUDA device, numbered from 0 as CUDA numbers them.
type Device int

// deviceState is what the package keeps of a device: its primary context,
// retained on first use, and what does not change: its name, its limits and
// its properties.
type deviceState struct {
	once   sync.Once
	ctx    unsafe.Pointer
	ready  atomic.Bool // ctx is retained
	name   string
	limits deviceLimits
	err    error

	propsOnce sync.Once // the properties, from libcudart
	props     DeviceProperties
	propsErr  error

	asyncOnce sync.Once // the default CUDA memory pool, for AllocAsync
	async     *MemoryAsyncPool
	asyncErr  error

	// attrs caches the attributes read so far, each as value<<1 | 1, so
	// that 0 means not read yet.
	attrs [deviceAttributeLimit]atomic.Int64

	// packOn is a Stream of the device for nothing but Kernel.pack, which
	// takes the device of a kernel node's arguments from it.
	packOn Stream

	// turns orders the launches of the device's graphs with conditional
	// nodes (condTurns).
	turns condTurns
}

// deviceLimits are the attributes of a device that a launch is checked
// against, and its compute capability.
type deviceLimits struct {
	major, minor       int32
	maxThreadsPerBlock int32
	maxBlock, maxGrid  [3]int32
	sharedMemOptin     int32 // the most shared memory a block may opt in to
}

// limitAttrs are the attributes state reads into deviceLimits, in the
// order of its fields.
var limitAttrs = [...]cudadrv.Device_attribute{
	cudadrv.DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, cudadrv.DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
	cudadrv.DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
	cudadrv.DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, cudadrv.DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, cudadrv.DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z,
	cudadrv.DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, cudadrv.DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, cudadrv.DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z,
	cudadrv.DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
}

// state returns d's state, retaining its primary context the first time.
func (d Device) state() (*deviceState, error) {
	if err := initDevices(); err != nil {
		return nil, err
	}
	if d < 0 || int(d) >= len(devices) {
		return nil, invalid("no %v: %w (%d devices)", d, driverStatus(cudadrv.ERROR_INVALID_DEVICE), len(devices))
	}
	s := &devices[d]
	s.once.Do(func() { s.err = s.init(d) })
	return s, s.err
}

// init retains d's primary context and reads its name and limits.
func (s *deviceState) init(d Device) error {
	var ctx unsafe.Pointer // not &s.ctx: see driver's package documentation
	if r := driver.PrimaryContext(int32(d), &ctx); r != 0 {
		return opErr(fmt.Sprintf("primary context of %v", d), statusError(r))
	}
	s.ctx = ctx
	s.ready.Store(true)
	s.packOn.dev, s.packOn.nodes = d, true
	var name [256]byte
	if err := check("cuDeviceGetName", driver.DeviceName(int32(d), &name[0], int32(len(name)))); err != nil {
		return err
	}
	s.name, _, _ = strings.Cut(string(name[:]), "\x00")
	var v [len(limitAttrs)]int32
	if err := check("cuDeviceGetAttribute", driver.DeviceAttributes(int32(d), (*int32)(&limitAttrs[0]), &v[0], int32(len(v)))); err != nil {
		return err
	}
	for i, a := range limitAttrs {
		s.attrs[a].Store(int64(v[i])<<1 | 1)
	}
	s.limits = deviceLimits{
		major: int32(v[0]), minor: int32(v[1]), maxThreadsPerBlock: int32(v[2]),
		maxBlock:       [3]int32{int32(v[3]), int32(v[4]), int32(v[5])},
		maxGrid:        [3]int32{int32(v[6]), int32(v[7]), int32(v[8])},
		sharedMemOptin: int32(v[9]),
	}
	return nil
}

// context returns d's primary context, for the shim.
func (d Device) context() (unsafe.Pointer, error) {
	s, err := d.state()
	if err != nil {
		return nil, err
	}
	return s.ctx, nil
}

// hostContext returns a context for calls that concern no device (host
// memory, which the shim allocates and registers portable, for every
// context): that of the lowest-numbered device the program has used, or,
// when it has used none, DefaultDevice's. So a program that uses only
// device 1 never makes a context on device 0.
func hostContext() (unsafe.Pointer, error) {
	if err := initDevices(); err != nil {
		return nil, err
	}
	for i := range devices {
		if devices[i].ready.Load() {
			return devices[i].ctx, nil
		}
	}
	d, err := DefaultDevice()
	if err != nil {
		return nil, err
	}
	return d.context()
}

// usedContexts returns the contexts of the devices the program has used.
func usedContexts() []unsafe.Pointer {
	var ctxs []unsafe.Pointer
	for i := range devices {
		if devices[i].ready.Load() {
			ctxs = append(ctxs, devices[i].ctx)
		}
	}
	return ctxs
}

// afterGlobalCaptures calls destroy, or, when the shim refuses it during a
// capture in CaptureGlobal mode, leaves it to captureEnded; it returns
// destroy's status, 0 when it waits.
func afterGlobalCaptures(destroy func() int32) int32 {
	r := destroy()
	if r == driver.Capturing {
		globalDestroys.Lock()
		globalDestroys.later = append(globalDestroys.later, destroy)
		globalDestroys.Unlock()
		return 0
	}
	return r
}

// captureEnded counts a capture, global or not, as ended in the shim, and
// makes the destroys that waited for the global captures, unless another
// one still refuses them.
func captureEnded(global bool) {
	driver.CaptureEnd(cbool(global))
	if !global {
		return
	}
	staging.Lock()
	staging.global--
	staging.Unlock()
	globalDestroys.Lock()
	later := globalDestroys.later
	globalDestroys.later = nil
	globalDestroys.Unlock()
	for _, destroy := range later {
		afterGlobalCaptures(destroy)
	}
}

// ErrCapturing is returned by operations that must wait for a whole device,
// such as Device.Synchronize and Module.Close, while a stream capture the
// package started is in progress: the wait would invalidate the capture.
// It is also returned, without reaching CUDA, by waits for captured work
// (Stream.Wait, Event.Wait, ...), by the operations on the legacy default
// stream during a capture (Stream.BeginCapture says why), by the calls a
// capture in CaptureGlobal mode refuses (see CaptureGlobal), and by copies
// with pageable memory on a capturing stream (see Graph).
var ErrCapturing = errors.New("highlevel: a stream capture is in progress")

// errCapturedWork is the error of a wait for work that a stream capture
// took into its graph (Stream.Wait on a capturing stream, Event.Wait for a
// Record made while capturing): it runs only when the graph is launched.
var errCapturedWork = fmt.Errorf("%w: the work waited for is captured into a graph, and runs when the graph is launched", ErrCapturing)

// errCapturedPageable is the error of a copy between device memory and
// pageable host memory (Go memory) on a capturing stream: the graph would
// copy at each launch, from or to memory that may have moved or been freed
// by then.
var errCapturedPageable = fmt.Errorf("%w: a graph copies only pinned host memory (PinnedMemory, HostRegister), not pageable memory", ErrCapturing)

// lockDevices makes way for a device-wide wait: it waits for another such
// wait to end, and returns ErrCapturing while a capture is in progress. In
// a stream callback, which that other wait may be waiting for, it returns
// ErrInCallback at once. unlockDevices ends the wait.
func lockDevices() error {
	if inCallback() {
		return ErrInCallback
	}
	waitMu.Lock()
	if !captureMu.TryLock() {
		waitMu.Unlock()
		return ErrCapturing
	}
	return nil
}

func unlockDevices() {
	captureMu.Unlock()
	waitMu.Unlock()
}

// synchronizeAll waits until every device the program has used has
// finished its work. While a stream captures, it returns ErrCapturing and
// waits for nothing: the caller tries again later.
func synchronizeAll() error {
	if err := lockDevices(); err != nil {
		return err
	}
	defer unlockDevices()
	var errs []error
	for _, ctx := range usedContexts() {
		errs = append(errs, check("cuCtxSynchronize", driver.CtxSynchronize(ctx)))
	}
	return join(errs...)
}

// primaryContextActive reports whether d's primary context is active,
// without making it (cuDevicePrimaryCtxGetState).
func (d Device) primaryContextActive() (bool, error) {
	if err := initDevices(); err != nil {
		return false, err
	}
	var active int32
	err := check("cuDevicePrimaryCtxGetState", driver.PrimaryContextActive(int32(d), &active))
	return active != 0, err
}

// DeviceCount returns the number of CUDA devices. CUDA counts them once, at
// initialization: after the first call the answer comes from a cache.
func DeviceCount() (int, error) {
	if err := initDevices(); err != nil {
		return 0, opErr("device count", err)
	}
	return len(devices), nil
}

// initDevices counts the devices, once, and makes their states.
func initDevices() error {
	devicesOnce.Do(func() {
		n, err := deviceCount()
		devices, devicesErr = make([]deviceState, n), err
	})
	return devicesErr
}

func deviceCount() (int, error) {
	if err := load(); err != nil {
		return 0, err
	}
	var n int32
	if err := check("cuDeviceGetCount", driver.DeviceCount(&n)); err != nil {
		return 0, err
	}
	return int(n), nil
}

// IsAvailable reports whether CUDA can be used: the driver loads and has at
// least one device. It is false both where the machine has no GPU and where
// its driver fails (too old for this package, or broken), which
// DeviceCount tells apart: where there is no GPU, its error is a
// *cudadrv.LibraryError (libcuda.so.1 cannot be loaded: it lists where the
// library was looked for, and names $GOCUDA_CUDA, which overrides the
// search) or matches cudadrv.ERROR_NO_DEVICE (the driver reports no
// device), or it counts none; any other error is the driver's failure.
func IsAvailable() bool {
	n, err := DeviceCount()
	return err == nil && n > 0
}

// RuntimeVersion returns the version of the CUDA runtime, 1000*major +
// 10*minor (13000 for CUDA 13.0). It is one of the few functions of the
// package that load libcudart, and returns an error that says so where it
// cannot, as Device.Properties does: the rest call the driver only.
func RuntimeVersion() (int, error) {
	if err := runtimeAPI("cudaRuntimeGetVersion"); err != nil {
		return 0, opErr("runtime version", err)
	}
	var v int32
	if err := cudart.RuntimeGetVersion(&v); err != nil {
		return 0, opErr("runtime version", err)
	}
	return int(v), nil
}

// DriverVersion returns the latest CUDA version the driver supports, in the
// form of RuntimeVersion.
func DriverVersion() (int, error) {
	if err := load(); err != nil {
		return 0, opErr("driver version", err)
	}
	var v int32
	if err := check("cuDriverGetVersion", driver.DriverVersion(&v)); err != nil {
		return 0, opErr("driver version", err)
	}
	return int(v), nil
}

// CurrentDevice returns the calling OS thread's current device, as
// cudaGetDevice does: the device of the thread's current CUDA context (the
// one Use, Do, cudaSetDevice or cuCtxSetCurrent made current), or device
// 0 when the thread has none. A goroutine may change OS threads between
// any two calls, so the answer is only meaningful inside Device.Do or on a
// goroutine locked with runtime.LockOSThread.
func CurrentDevice() (_ Device, err error) {
	defer wrap(&err, "current device")
	if err := initDevices(); err != nil { // which initializes the driver
		return 0, err
	}
	var d int32
	if err := check("cuCtxGetDevice", driver.CurrentDevice(&d)); err != nil {
		return 0, err
	}
	return Device(max(d, 0)), nil
}

// ID returns the device's number.
func (d Device) ID() int { return int(d) }

// String returns "device N".
func (d Device) String() string { return "device " + strconv.Itoa(int(d)) }

// Properties returns the device's properties, read once and cached. The
// runtime API gives them (cudaGetDeviceProperties), so Properties loads
// libcudart, and returns an error that says so where it cannot, listing
// where it was looked for and naming $GOCUDA_CUDART, which overrides the
// search; Name, ComputeCapability, Attribute and NewDeviceData need only
// the driver. The attributes CUDA 13 took out of cudaGetDeviceProperties'
// answer, such as DeviceClockRate, DeviceMemoryClockRate and
// DeviceComputeMode, are Attribute's alone.
func (d Device) Properties() (_ DeviceProperties, err error) {
	defer func() {
		if err != nil {
			wrap(&err, "properties of", d)
		}
	}()
	s, err := d.state()
	if err != nil {
		return DeviceProperties{}, err
	}
	s.propsOnce.Do(func() {
		if s.propsErr = runtimeAPI("cudaGetDeviceProperties"); s.propsErr == nil {
			// Into a value of its own: cgo checks all of the object an
			// unsafe.Pointer argument points into, and s holds Go pointers.
			var p cudart.DeviceProp
			if s.propsErr = cudart.GetDeviceProperties(&p, int32(d)); s.propsErr == nil {
				s.props = propertiesOf(&p)
			}
		}
	})
	return s.props, s.propsErr
}

// Name returns the device's name, such as "NVIDIA H200".
func (d Device) Name() (_ string, err error) {
	defer func() {
		if err != nil {
			wrap(&err, "name of", d)
		}
	}()
	s, err := d.state()
	if err != nil {
		return "", err
	}
	return s.name, nil
}

// ComputeCapability returns the compute capability as CuPy spells it: "90"
// for 9.0.
func (d Device) ComputeCapability() (_ string, err error) {
	defer func() {
		if err != nil {
			wrap(&err, "compute capability of", d)
		}
	}()
	s, err := d.state()
	if err != nil {
		return "", err
	}
	return strconv.Itoa(int(s.limits.major)) + strconv.Itoa(int(s.limits.minor)), nil
}

// Arch returns the device's architecture as the compilers name it: "sm_90"
// for compute capability 9.0. Compile takes it as CompileOptions.Arch to
// make code for this device.
func (d Device) Arch() (string, error) {
	s, err := d.state()
	if err != nil {
		return "", opErr("arch of "+d.String(), err)
	}
	return "sm_" + strconv.Itoa(int(s.limits.major)) + strconv.Itoa(int(s.limits.minor)), nil
}

// Attribute returns one of the device's attributes, such as
// DeviceWarpSize; one that is yes or no is 1 or 0. They describe the
// hardware and its setup, which do not change while the process runs: each
// is read from CUDA once and then answered from a cache, with no cgo call.
// A value that is none of DeviceAttribute's constants is refused with an
// error matching ErrInvalid, before CUDA is called.
func (d Device) Attribute(attr DeviceAttribute) (_ int, err error) {
	defer func() {
		if err != nil {
			wrap(&err, "attribute", attr, "of", d)
		}
	}()
	if !attr.known() {
		return 0, invalid("unknown device attribute")
	}
	s, err := d.state()
	if err != nil {
		return 0, err
	}
	if v := s.attrs[attr].Load(); v != 0 {
		return int(v >> 1), nil
	}
	var v int32
	a := int32(attr)
	if err := check("cuDeviceGetAttribute", driver.DeviceAttributes(int32(d), &a, &v, 1)); err != nil {
		return 0, err
	}
	s.attrs[attr].Store(int64(v)<<1 | 1)
	return int(v), nil
}

// MemInfo returns the device's free and total memory in bytes.
func (d Device) MemInfo() (free, total int, err error) {
	defer func() {
		if err != nil {
			wrap(&err, "memory info of", d)
		}
	}()
	ctx, err := d.context()
	if err != nil {
		return 0, 0, err
	}
	var f, t uintptr
	if err := check("cuMemGetInfo", driver.MemInfo(ctx, &f, &t)); err != nil {
		return 0, 0, err
	}
	return int(f), int(t), nil
}

// Synchronize waits until the device has finished all its work. While a
// stream capture the package began is in progress, it returns ErrCapturing
// and waits for nothing: CUDA forbids the wait during a capture, which it
// would invalidate, and the driver crashed where the wait raced the
// capture's work on another thread.
func (d Device) Synchronize() (err error) {
	defer func() {
		if err != nil {
			wrap(&err, "synchronize", d)
		}
	}()
	ctx, err := d.context()
	if err != nil {
		return err
	}
	if err := lockDevices(); err != nil {
		return err
	}
	defer unlockDevices()
	return check("cuCtxSynchronize", driver.CtxSynchronize(ctx))
}

// Use makes d the current device of the calling OS thread, as cudaSetDevice
// does: it makes d's primary context current. The package's own operations
// do not depend on it: every object remembers its device. It matters to
// code that calls cudart or cudadrv directly, and only on a goroutine
// locked to its thread; Do is usually what you want.
func (d Device) Use() (err error) {
	defer func() {
		if err != nil {
			wrap(&err, "use", d)
		}
	}()
	ctx, err := d.context()
	if err != nil {
		return err
	}
	return check("cuCtxSetCurrent", driver.CtxSet(ctx))
}

// Do runs fn on a goroutine locked to its OS thread, with d as the thread's
// current device, and afterwards puts back the thread's previous context
// and unlocks the thread, also when fn panics. It is CuPy's "with
// Device(n):" in Go. A thread that had no context is left with d's, as
// after the package's other operations: it had no device of its own to
// keep, and a context that came and went around each call would slow the
// calls made in it. Do returns fn's error, or the error of making d current
// (then fn does not run).
func (d Device) Do(fn func() error) error { return d.do(fn, false) }

// do is Do; where restored, fn puts back the device it found current once
// it succeeds, and the thread's previous context is put back only where it
// was another device's, or fn failed or panicked (see DoRestoring).
func (d Device) do(fn func() error, restored bool) (err error) {
	// The operation's name is made only for an error, and the context
	// swapped in one call: do comes before every NCCL group of
	// collective's (DoRestoring).
	fail := func(err error) error { return opErr("make "+d.String()+" current", err) }
	ctx, err := d.context()
	if err != nil {
		return fail(err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	prev := driver.CtxSwap(ctx)
	if err := check("cuCtxSetCurrent", prev.R); err != nil {
		return fail(err)
	}
	// Whatever fn made current, the thread gets back its own context,
	// or keeps d's: swapped only where it differs. A restored fn that
	// succeeded left d's current, which the thread keeps where it had
	// d's or none.
	back := prev.Ctx
	if back == nil {
		back = ctx
	}
	done := false
	defer func() {
		if !done || !restored || back != ctx {
			driver.CtxSwap(back)
		}
	}()
	err = fn()
	done = err == nil
	return err
}

// EnablePeerAccess lets d's work read and write memory of device peer
// (cuCtxEnablePeerAccess): kernels launched on d may then take peer's
// memory as arguments. Enabling it twice is not an error.
func (d Device) EnablePeerAccess(peer Device) (err error) {
	defer func() {
		if err != nil {
			wrap(&err, "enable peer access of", d, "to", peer)
		}
	}()
	ctx, err := d.context()
	if err != nil {
		return err
	}
	pctx, err := peer.context()
	if err != nil {
		return err
	}
	r := driver.EnablePeerAccess(ctx, pctx)
	if err := check("cuCtxEnablePeerAccess", r); err != nil &&
		!errors.Is(err, cudadrv.ERROR_PEER_ACCESS_ALREADY_ENABLED) {
		return err
	}
	peers.Store([2]Device{d, peer}, struct{}{})
	return nil
}

// canAccess reports whether work on d may use memory of device m.
func (d Device) canAccess(m Device) bool {
	if d == m {
		return true
	}
	_, ok := peers.Load([2]Device{d, m})
	return ok
}

// DefaultDevice returns the device to use when the program names none, as
// PyCUDA's make_default_context chooses it: the number in $CUDA_DEVICE; else
// the number in the file ~/.cuda-device; else the first device whose primary
// context can be made. A value that is not a device number is an error
// that says where it came from. The choice is made once.
func DefaultDevice() (Device, error) {
	defaultOnce.Do(func() {
		home, _ := os.UserHomeDir()
		defaultDevice, defaultErr = chooseDevice(os.Getenv("CUDA_DEVICE"), filepath.Join(home, ".cuda-device"))
		defaultErr = opErr("default device", defaultErr)
	})
	return defaultDevice, defaultErr
}

// chooseDevice is DefaultDevice with its inputs as arguments.
func chooseDevice(env, file string) (Device, error) {
	if env != "" {
		return parseDevice(env, "$CUDA_DEVICE")
	}
	if b, err := os.ReadFile(file); err == nil {
		return parseDevice(string(b), file)
	} else if !errors.Is(err, os.ErrNotExist) {
		return 0, err
	}
	if err := initDevices(); err != nil {
		return 0, err
	}
	n := len(devices)
	var errs []error
	for d := range Device(n) {
		_, err := d.state()
		if err == nil {
			return d, nil
		}
		errs = append(errs, err)
	}
	err := join(errs...)
	if err == nil {
		err = errors.New("there are none")
	}
	return 0, opErr(fmt.Sprintf("no device of %d can be used", n), err)
}

func parseDevice(s, from string) (Device, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 {
		return 0, invalid("%s holds %q, not a device number", from, s)
	}
	d := Device(n)
	if _, err := d.state(); err != nil {
		return 0, fmt.Errorf("%v from %s: %w", d, from, err)
	}
	return d, nil
}
