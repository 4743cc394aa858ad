package highlevel

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/gocuda/cuda/cudadrv"

	"github.com/gocuda/cuda/highlevel/internal/driver"
)

// A Kernel is a function of a Module that the host launches (a __global__
// function). It is safe for use by several goroutines.
//
// The zero value is not usable: get one with Module.Kernel; its methods
// return an error wrapping ErrNil, or a zero value.
type Kernel struct {
	m      *Module // nil in a zero Kernel
	k      uintptr
	name   string
	params []param
	size   int                   // of the parameter buffer
	funcs  []atomic.Uintptr      // by device: the kernel's CUfunction in its primary context, once looked up
	shape  atomic.Pointer[shape] // of the first launch whose arguments had one
	// spare is the parameter buffer of launches whose parameters do not
	// fit in driver.Args, taken by one launch at a time: launches at once get
	// their own.
	spare atomic.Pointer[[]byte]
}

// A param is a kernel's parameter: where its argument goes in the
// parameter buffer, and the class of its C++ type, from the kernel's
// mangled name (paramUnknown for extern "C" kernels). It is laid out as
// driver.Param, which driver.Launch reads the offsets from.
type param struct {
	off, size uint32
	class     paramClass
}

// param and driver.Param have the same size.
var (
	_ [unsafe.Sizeof(param{}) - unsafe.Sizeof(driver.Param{})]struct{}
	_ [unsafe.Sizeof(driver.Param{}) - unsafe.Sizeof(param{})]struct{}
)

// usable returns the error of a method called on a nil or zero Kernel; nil
// for a Kernel the package made.
func (k *Kernel) usable() error {
	if k == nil {
		return nilError("Kernel")
	}
	if k.m == nil {
		return zeroError("Kernel", "Module.Kernel")
	}
	return nil
}

// Name returns the kernel's name in its module; "" for a nil Kernel.
func (k *Kernel) Name() string {
	if k == nil {
		return ""
	}
	return k.name
}

// NumParams returns the number of the kernel's parameters; 0 for a nil
// Kernel.
func (k *Kernel) NumParams() int {
	if k == nil {
		return 0
	}
	return len(k.params)
}

// Dim3 is a size in up to three dimensions. A zero component counts as 1,
// so Dim3{X: n} is n.
type Dim3 struct{ X, Y, Z int }

func (d Dim3) dims() (x, y, z int) {
	return max(d.X, 1), max(d.Y, 1), max(d.Z, 1)
}

// negative reports whether a dimension is negative: whether their bits
// together have the sign bit set, cheaper than comparing each.
func (d Dim3) negative() bool { return d.X|d.Y|d.Z < 0 }

// String returns the dimensions as a launch takes them, "(256, 1, 1)": a
// zero dimension is 1, and a negative one, which a launch refuses, is
// shown as it is.
func (d Dim3) String() string {
	one := func(n int) int {
		if n == 0 {
			return 1
		}
		return n
	}
	return fmt.Sprintf("(%d, %d, %d)", one(d.X), one(d.Y), one(d.Z))
}

// LaunchConfig is how a kernel is launched.
type LaunchConfig struct {
	Grid  Dim3 // blocks in the grid
	Block Dim3 // threads in a block
	// SharedMem is the dynamic shared memory of a block, in bytes. Beyond
	// 48 KiB the kernel must allow it first:
	// SetAttribute(d, KernelMaxDynamicSharedSize, n).
	SharedMem int
	// Cluster is the size of a thread block cluster (compute capability 9.0
	// and later); the zero value launches without clusters.
	Cluster Dim3
	// Cooperative launches the grid cooperatively: all its blocks run at
	// once and can synchronize (cooperative_groups::grid_group::sync).
	Cooperative bool
}

// Launch queues the kernel on stream s with the given arguments, one per
// parameter. A nil s is the legacy default stream of the device of the
// memory arguments (they must agree), or of DefaultDevice when there are
// none. Memory arguments must belong to the stream's device, or to a device
// it has peer access to (Device.EnablePeerAccess); managed memory goes
// anywhere.
//
// What each parameter takes:
//
//   - Go integers of the parameter's size: int8 and uint8 for 1 byte, int16
//     and uint16 for 2, int32 and uint32 for 4, int64, uint64, int and uint
//     for 8. An int is 8 bytes: a 4-byte int parameter needs int32(n);
//   - float32 for 4 bytes, float64 for 8, bool for 1;
//   - device pointers, for 8 bytes: MemoryPointer, *Memory, *Array[T],
//     unsafe.Pointer, uintptr and cudadrv.Deviceptr;
//   - structs and arrays without Go pointers, laid out as in C, of the
//     parameter's size.
//
// CUDA gives every kernel's parameter sizes, and those are always checked.
// C++ kernels (not extern "C") carry their parameter types in their names,
// as Compiled.LoweredNames gives them: then the Go kind must fit the C++
// type too, so that a float parameter takes only a float32 (not an int32
// of the same size, nor the untyped constant 2, which Go makes an int), a
// pointer only a device pointer, an integer only a Go integer, and a bool
// only a bool; a uint16 fits __half and __nv_bfloat16, as their bits.
// extern "C" kernels carry no types: a float32 passed for an int parameter
// of the same size is not caught there.
//
// A launch holds the memory its arguments name until it is queued, as a
// copy does: a Free of that memory in another goroutine waits for it, so
// the memory cannot be handed out again before the kernel is queued on it.
//
// Anything else is an error wrapping ErrArgument that names the argument
// and its type, and nothing is launched. So is a block or grid the device
// cannot run, or too much shared memory. A launch allocates nothing, but
// for a kernel whose parameters take more than 64 bytes when another launch
// of it is under way: that one gets a buffer of its own. Errors of the
// kernel itself (an invalid address) show at the next call that
// synchronizes with it.
func (k *Kernel) Launch(s *Stream, cfg LaunchConfig, args ...any) error {
	if k == nil || k.m == nil {
		return k.usable()
	}
	if s != nil && s.state == nil { // a zero Stream, refused before launch looks up its device
		return s.usable()
	}
	if !k.m.life.Acquire() {
		return ErrClosed
	}
	defer k.m.life.Release()
	return k.launch(s, &cfg, args)
}

// launch is Launch on an open module. Its defers and Launch's stay
// open-coded (a function with more returns times defers than the compiler
// allows gets slower ones), as launches are the hottest path of the package.
//
// The arguments and dimensions go to C by value (driver.Args, driver.Dims),
// copied onto C's stack: driver.Launch calls into the driver, whose logger (registered
// with cudadrv.LogsRegisterCallback) may call back into Go during the call,
// so it cannot be marked #cgo nocallback, and without it (noescape works
// only with it) memory passed by address escapes, so would have to come
// from the heap or a pool. Arguments that do not fit in driver.Args' 64 bytes
// go in the kernel's spare buffer, from the heap once.
func (k *Kernel) launch(s *Stream, cfg *LaunchConfig, args []any) error {
	var small driver.Args
	var buf []byte
	var big *byte // small escapes if big may point into it
	if k.size <= int(unsafe.Sizeof(small)) {
		buf = unsafe.Slice((*byte)(unsafe.Pointer(&small)), unsafe.Sizeof(small))
	} else {
		b := k.spare.Swap(nil)
		if b == nil {
			b = new([]byte)
			*b = make([]byte, k.size)
		}
		// The driver has copied the arguments when the launch returns.
		defer k.spare.Store(b)
		buf, big = *b, (*byte)(unsafe.Pointer(&(*b)[0]))
	}
	d, err := k.pack(buf, args, s)
	if err != nil {
		return err
	}
	// pack took hold of the arguments' memory, as a copy does: Free waits
	// until the launch is queued, and the memory stays reachable until
	// then (a cleanup would free the memory whose address it passes).
	defer k.releaseArgs(args)
	return k.queue(d, s, cfg, args, &small, big)
}

// queue launches the kernel on s, for device d, with the arguments pack
// wrote to small or big from args.
func (k *Kernel) queue(d Device, s *Stream, cfg *LaunchConfig, args []any, small *driver.Args, big *byte) error {
	st := s.deviceState()
	if st == nil {
		var err error
		if st, err = d.state(); err != nil {
			return err
		}
	}
	var dims driver.Dims
	if err := cfg.check(d, &st.limits, &dims); err != nil {
		return fmt.Errorf("highlevel: launching %s: %w", k.name, err)
	}
	f, err := k.function(d, st.ctx)
	if err != nil {
		return err
	}
	h, err := s.enter(d)
	if err != nil {
		return err
	}
	defer s.leave()
	if s != nil && s.inCapture() { // the launch is a node of the graph
		k.forArgMemory(args, func(m *Memory) { s.keep(m) })
		s.capture.keep(k.m)
	}
	var params *driver.Param
	if len(k.params) > 0 {
		params = (*driver.Param)(unsafe.Pointer(&k.params[0]))
	}
	if launchHook != nil {
		launchHook()
	}
	// The context goes as an integer: cgo checks every void * argument for
	// Go pointers, on every call.
	r := driver.Launch(uintptr(st.ctx), f, dims, uint32(cfg.SharedMem), h, cbool(cfg.Cooperative),
		*small, big, params, int32(len(k.params)))
	if r != 0 {
		return check("launching "+k.name, r)
	}
	return nil
}

// function returns the kernel's CUfunction in device d's primary context
// ctx, looking it up the first time.
func (k *Kernel) function(d Device, ctx unsafe.Pointer) (uintptr, error) {
	if f := k.funcs[d].Load(); f != 0 {
		return uintptr(f), nil
	}
	var f uintptr
	if err := check("cuKernelGetFunction "+k.name, driver.KernelFunction(ctx, &f, k.k)); err != nil {
		return 0, err
	}
	k.funcs[d].Store(uintptr(f))
	return f, nil
}

// check checks the configuration against the limits of device d, l, and
// writes the grid, block and cluster dimensions for the shim to dims.
func (cfg *LaunchConfig) check(d Device, l *deviceLimits, dims *driver.Dims) error {
	gx, gy, gz := cfg.Grid.dims()
	bx, by, bz := cfg.Block.dims()
	switch {
	case gx > int(l.maxGrid[0]) || gy > int(l.maxGrid[1]) || gz > int(l.maxGrid[2]) || cfg.Grid.negative():
		return invalid("grid %v is outside %v's limits (%v)", cfg.Grid, d, l.maxGrid)
	case bx > int(l.maxBlock[0]) || by > int(l.maxBlock[1]) || bz > int(l.maxBlock[2]) || cfg.Block.negative():
		return invalid("block %v is outside %v's limits (%v)", cfg.Block, d, l.maxBlock)
	case bx*by*bz > int(l.maxThreadsPerBlock):
		return invalid("block %v has %d threads, more than the %d of %v", cfg.Block, bx*by*bz, l.maxThreadsPerBlock, d)
	case cfg.SharedMem < 0 || cfg.SharedMem > int(l.sharedMemOptin):
		return invalid("%d bytes of shared memory: %v allows at most %d per block", cfg.SharedMem, d, l.sharedMemOptin)
	case cfg.Cluster.negative():
		return invalid("cluster %v is negative", cfg.Cluster)
	}
	dims.Grid = [3]uint32{uint32(gx), uint32(gy), uint32(gz)}
	dims.Block = [3]uint32{uint32(bx), uint32(by), uint32(bz)}
	if cfg.Cluster != (Dim3{}) {
		cx, cy, cz := cfg.Cluster.dims()
		dims.Cluster = [3]uint32{uint32(cx), uint32(cy), uint32(cz)}
	}
	return nil
}

// KernelAttributes are a kernel's attributes on a device
// (cuKernelGetAttribute). Those SetAttribute changes have a KernelAttribute
// of the same name.
type KernelAttributes struct {
	MaxThreadsPerBlock      int  // the most threads a block can have, given the kernel's resources
	NumRegs                 int  // registers per thread
	SharedSizeBytes         int  // static shared memory per block
	ConstSizeBytes          int  // constant memory
	LocalSizeBytes          int  // local memory per thread
	MaxDynamicSharedSize    int  // the dynamic shared memory a launch may ask for
	PTXVersion              int  // major*10 + minor
	BinaryVersion           int  // major*10 + minor
	CacheModeCA             bool // compiled with -Xptxas --dlcm=ca: global loads cached in L1
	PreferredSharedCarveout int  // percent, or -1 for no preference
	// ClusterSizeMustBeSet is true for a kernel that must be launched in
	// clusters (LaunchConfig.Cluster).
	ClusterSizeMustBeSet bool
	// RequiredClusterWidth, Height and Depth are the size in blocks of the
	// clusters the kernel must be launched with; 0 where it need not.
	RequiredClusterWidth, RequiredClusterHeight, RequiredClusterDepth int
	// NonPortableClusterSizeAllowed is true for a kernel that may launch
	// in clusters larger than the portable size.
	NonPortableClusterSizeAllowed bool
	// ClusterSchedulingPolicyPreference is how the blocks of a cluster are
	// placed: 0 the default, 1 spread, 2 load-balancing.
	ClusterSchedulingPolicyPreference int
}

// Attributes returns the kernel's attributes on device d.
func (k *Kernel) Attributes(d Device) (KernelAttributes, error) {
	var a KernelAttributes
	if err := k.usable(); err != nil {
		return a, err
	}
	var cacheModeCA, mustBeSet, nonPortable int
	for _, f := range []struct {
		attr cudadrv.Function_attribute
		v    *int
	}{
		{cudadrv.FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &a.MaxThreadsPerBlock},
		{cudadrv.FUNC_ATTRIBUTE_NUM_REGS, &a.NumRegs},
		{cudadrv.FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, &a.SharedSizeBytes},
		{cudadrv.FUNC_ATTRIBUTE_CONST_SIZE_BYTES, &a.ConstSizeBytes},
		{cudadrv.FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, &a.LocalSizeBytes},
		{cudadrv.FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, &a.MaxDynamicSharedSize},
		{cudadrv.FUNC_ATTRIBUTE_PTX_VERSION, &a.PTXVersion},
		{cudadrv.FUNC_ATTRIBUTE_BINARY_VERSION, &a.BinaryVersion},
		{cudadrv.FUNC_ATTRIBUTE_CACHE_MODE_CA, &cacheModeCA},
		{cudadrv.FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, &a.PreferredSharedCarveout},
		{cudadrv.FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET, &mustBeSet},
		{cudadrv.FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, &a.RequiredClusterWidth},
		{cudadrv.FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT, &a.RequiredClusterHeight},
		{cudadrv.FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH, &a.RequiredClusterDepth},
		{cudadrv.FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, &nonPortable},
		{cudadrv.FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE, &a.ClusterSchedulingPolicyPreference},
	} {
		v, err := k.attribute(d, false, f.attr, 0)
		if err != nil {
			return a, err
		}
		*f.v = v
	}
	a.CacheModeCA, a.ClusterSizeMustBeSet, a.NonPortableClusterSizeAllowed = cacheModeCA != 0, mustBeSet != 0, nonPortable != 0
	return a, nil
}

// SetAttribute sets one of the kernel's attributes on device d, as CUDA
// lets a program set them (cuKernelSetAttribute): the most dynamic shared
// memory a launch may ask for, the shared memory carveout, the required
// cluster size and the cluster scheduling policy. Attributes reads them
// back. An attr that is none of KernelAttribute's constants, or a value
// that does not fit in 32 bits, is refused with an error matching
// ErrInvalid, before CUDA is called.
func (k *Kernel) SetAttribute(d Device, attr KernelAttribute, value int) error {
	if err := k.usable(); err != nil {
		return err
	}
	if !attr.known() {
		return opErr("set "+attr.String()+" of kernel "+k.name, invalid("unknown kernel attribute"))
	}
	if int(int32(value)) != value {
		return opErr("set "+attr.String()+" of kernel "+k.name, invalid("%d does not fit in 32 bits", value))
	}
	_, err := k.attribute(d, true, cudadrv.Function_attribute(attr), value)
	return err
}

// attribute reads (set false) or sets the kernel's attribute attr on
// device d.
func (k *Kernel) attribute(d Device, set bool, attr cudadrv.Function_attribute, value int) (int, error) {
	if err := k.usable(); err != nil {
		return 0, err
	}
	if !k.m.life.Acquire() {
		return 0, ErrClosed
	}
	defer k.m.life.Release()
	ctx, err := d.context()
	if err != nil {
		return 0, err
	}
	v := int32(value)
	op := "cuKernelGetAttribute " + attr.String()
	if set {
		op = "cuKernelSetAttribute " + attr.String()
	}
	err = check(op, driver.KernelAttribute(ctx, cbool(set), &v, int32(attr), k.k, int32(d)))
	return int(v), err
}

// MaxActiveBlocksPerSM returns how many blocks of blockSize threads, each
// with dynamicSharedMem bytes of dynamic shared memory, can run at once on
// one multiprocessor of device d, as CUDA computes it
// (cuOccupancyMaxActiveBlocksPerMultiprocessor).
func (k *Kernel) MaxActiveBlocksPerSM(d Device, blockSize, dynamicSharedMem int) (int, error) {
	if err := k.usable(); err != nil {
		return 0, err
	}
	if !k.m.life.Acquire() {
		return 0, ErrClosed
	}
	defer k.m.life.Release()
	ctx, err := d.context()
	if err != nil {
		return 0, err
	}
	var n int32
	err = check("cuOccupancyMaxActiveBlocksPerMultiprocessor", driver.OccupancyBlocks(ctx, &n, k.k, int32(blockSize), uintptr(dynamicSharedMem)))
	return int(n), err
}

// MaxPotentialBlockSize returns the block size that gives the kernel the
// most occupancy on device d with dynamicSharedMem bytes of dynamic shared
// memory per block, and the smallest grid that fills the device at that
// size (cuOccupancyMaxPotentialBlockSize). blockSizeLimit caps the block
// size; 0 means none.
func (k *Kernel) MaxPotentialBlockSize(d Device, dynamicSharedMem, blockSizeLimit int) (minGridSize, blockSize int, err error) {
	if err := k.usable(); err != nil {
		return 0, 0, err
	}
	if !k.m.life.Acquire() {
		return 0, 0, ErrClosed
	}
	defer k.m.life.Release()
	ctx, err := d.context()
	if err != nil {
		return 0, 0, err
	}
	var g, b int32
	err = check("cuOccupancyMaxPotentialBlockSize", driver.OccupancyBlockSize(ctx, &g, &b, k.k, uintptr(dynamicSharedMem), int32(blockSizeLimit)))
	return int(g), int(b), err
}
