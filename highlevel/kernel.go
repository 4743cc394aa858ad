package highlevel

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gocuda/cuda/cudadrv"
)

// ErrArgument is wrapped by the errors of Kernel.Launch about its
// arguments: a wrong count, or a value whose type or size does not fit its
// parameter.
var ErrArgument = errors.New("highlevel: bad kernel argument")

// A Module is loaded device code (PTX, CUBIN or fatbin): a CUDA library,
// which belongs to no device. CUDA loads its code into a device's context
// when one of its kernels is first used there (Kernel.Launch, Attribute,
// the occupancy functions), so one Module serves every device whose
// architecture its code fits. It is safe for use by several goroutines. A
// Module that is not closed stays loaded until the process exits.
//
// The zero value is not usable: make one with LoadModule or
// LoadModuleFile; its methods return an error wrapping ErrNil.
type Module struct {
	lib   C.uintptr_t
	image unsafe.Pointer // the C copy of the image, freed by Close
	life  life

	mu      sync.Mutex
	kernels map[string]*Kernel // nil in a zero Module

	holds holdCount // the graphs that launch its kernels, and whether Close came
}

// LoadModule loads device code: PTX (as NVRTC or nvcc -ptx writes it), a
// CUBIN or a fatbin, such as Compile returns. It concerns no device and
// makes no context: the code of a CUBIN compiled for one device (Compile
// with CompileOptions.Arch from Device.Arch) runs on the devices of that
// architecture, PTX on every device of its architecture or a later one.
func LoadModule(image []byte) (*Module, error) {
	if len(image) == 0 {
		return nil, opErr("load module", invalid("empty image"))
	}
	if err := initDevices(); err != nil {
		return nil, opErr("load module", err)
	}
	if isPTX(image) && image[len(image)-1] != 0 {
		image = append(image[:len(image):len(image)], 0) // PTX is read as a C string
	}
	m := &Module{image: C.CBytes(image), kernels: map[string]*Kernel{}}
	if err := check("cuLibraryLoadData", C.hl_library_load(nil, &m.lib, m.image)); err != nil {
		C.free(m.image)
		return nil, opErr("load module", err)
	}
	return m, nil
}

// isPTX reports whether an image is PTX text rather than an ELF CUBIN or a
// fatbin.
func isPTX(image []byte) bool {
	return !bytes.HasPrefix(image, []byte("\x7fELF")) && !bytes.HasPrefix(image, []byte{0x50, 0xed, 0x55, 0xba})
}

// LoadModuleFile loads the device code in the named file (.ptx, .cubin or
// .fatbin).
func LoadModuleFile(name string) (*Module, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, opErr("load module", err)
	}
	m, err := LoadModule(b)
	if err != nil {
		return nil, opErr("load module "+name, inner(err))
	}
	return m, nil
}

// Kernel returns the kernel of the module named name, as the device code
// spells it: the name given to extern "C" functions, or the lowered
// (mangled) name of others (Compiled.LoweredNames gives it). Its parameters
// are read in the context of the lowest-numbered device the program has
// used, or DefaultDevice's when it has used none, as host memory's are.
func (m *Module) Kernel(name string) (*Kernel, error) {
	if err := m.usable(); err != nil {
		return nil, err
	}
	if inCallback() { // before m.mu, held by calls that may wait for the callback
		return nil, ErrInCallback
	}
	if !m.life.Acquire() {
		return nil, ErrClosed
	}
	defer m.life.Release()
	m.mu.Lock()
	defer m.mu.Unlock()
	if k := m.kernels[name]; k != nil {
		return k, nil
	}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	n, err := DeviceCount()
	if err != nil {
		return nil, err
	}
	// The parameters' layout needs a context: the one host memory uses
	// (a device the program has used), not whichever the thread has.
	ctx, err := hostContext()
	if err != nil {
		return nil, err
	}
	k := &Kernel{m: m, name: name, funcs: make([]atomic.Uintptr, n)}
	op := fmt.Sprintf("kernel %q", name)
	if err := check(op, C.hl_library_get_kernel(ctx, &k.k, m.lib, cname)); err != nil {
		return nil, err
	}
	var offsets, sizes [maxParams]C.uint32_t
	var np C.int
	if err := check(op, C.hl_kernel_params(ctx, k.k, &offsets[0], &sizes[0], maxParams, &np)); err != nil {
		return nil, err
	}
	classes, ok := paramClasses(name)
	if !ok || len(classes) != int(np) {
		classes = nil
	}
	k.params = make([]param, np)
	for i := range k.params {
		k.params[i] = param{off: uint32(offsets[i]), size: uint32(sizes[i])}
		if classes != nil {
			k.params[i].class = classes[i]
		}
		k.size = max(k.size, int(offsets[i]+sizes[i]))
	}
	m.kernels[name] = k
	return k, nil
}

// usable returns the error of a method called on a nil or zero Module; nil
// for a Module the package made.
func (m *Module) usable() error {
	if m == nil {
		return nilError("Module")
	}
	if m.kernels == nil {
		return zeroError("Module", "LoadModule")
	}
	return nil
}

// maxParams bounds the parameters of a kernel; CUDA's 32764 bytes of
// parameters hold at most 8191 of 4 bytes.
const maxParams = 8191

// Close unloads the module. Launches and other operations in progress
// finish first; later ones return ErrClosed, and so does a second Close.
// Kernels of the module already queued run to their end: Close waits for
// the devices that launched them. While a stream capture is in progress,
// that wait would invalidate it: Close returns ErrCapturing and leaves the
// module open. A module whose kernels a Graph or GraphExec launches
// (captured launches) is unloaded once the last of them is closed and the
// work queued until then has run.
func (m *Module) Close() error {
	if err := m.usable(); err != nil {
		return err
	}
	if err := lockDevices(); err != nil {
		return opErr("close module", err)
	}
	defer unlockDevices()
	if err := closing(&m.life); err != nil {
		return err
	}
	if m.holds.release() { // graphs launch its kernels: the last to let go unloads it
		return nil
	}
	var errs []error
	m.mu.Lock()
	for d := range m.launchedOn() {
		if ctx, err := d.context(); err == nil {
			errs = append(errs, check("cuCtxSynchronize", C.hl_ctx_synchronize(ctx)))
		}
	}
	m.mu.Unlock()
	return join(append(errs, m.unload())...)
}

// hold records that a graph launches the module's kernels; Close then
// leaves the module to the last unhold. It is called during a launch, which
// Close waits for, so never after Close.
func (m *Module) hold() { m.holds.add() }

// unhold ends a hold. The last one after Close unloads the module, as lost
// memory is freed, once the work queued so far has run.
func (m *Module) unhold() {
	if m.holds.done() {
		lostMemory{module: m}.lose()
	}
}

// unload unloads the module, once its kernels have run.
func (m *Module) unload() error {
	err := check("cuLibraryUnload", C.hl_library_unload(nil, m.lib))
	C.free(m.image)
	return err
}

// launchedOn returns the devices that the module's kernels were looked up
// for, and so may have been launched on; m.mu is held.
func (m *Module) launchedOn() map[Device]bool {
	devs := map[Device]bool{}
	for _, k := range m.kernels {
		for d := range k.funcs {
			if k.funcs[d].Load() != 0 {
				devs[Device(d)] = true
			}
		}
	}
	return devs
}

// A Kernel is a function of a Module that the host launches (a __global__
// function). It is safe for use by several goroutines.
//
// The zero value is not usable: get one with Module.Kernel; its methods
// return an error wrapping ErrNil, or a zero value.
type Kernel struct {
	m      *Module // nil in a zero Kernel
	k      C.uintptr_t
	name   string
	params []param
	size   int                   // of the parameter buffer
	funcs  []atomic.Uintptr      // by device: the kernel's CUfunction in its primary context, once looked up
	shape  atomic.Pointer[shape] // of the first launch whose arguments had one
	// spare is the parameter buffer of launches whose parameters do not
	// fit in hl_args, taken by one launch at a time: launches at once get
	// their own.
	spare atomic.Pointer[[]byte]
}

// A param is a kernel's parameter: where its argument goes in the
// parameter buffer, and the class of its C++ type, from the kernel's
// mangled name (paramUnknown for extern "C" kernels). It is laid out as
// the shim's hl_param, which hl_launch reads the offsets from.
type param struct {
	off, size uint32
	class     paramClass
}

// param and hl_param have the same size.
var (
	_ [unsafe.Sizeof(param{}) - C.sizeof_hl_param]struct{}
	_ [C.sizeof_hl_param - unsafe.Sizeof(param{})]struct{}
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

func (d Dim3) String() string {
	x, y, z := d.dims()
	return fmt.Sprintf("(%d, %d, %d)", x, y, z)
}

// LaunchConfig is how a kernel is launched.
type LaunchConfig struct {
	Grid  Dim3 // blocks in the grid
	Block Dim3 // threads in a block
	// SharedMem is the dynamic shared memory of a block, in bytes. Beyond
	// 48 KiB the kernel must allow it first:
	// SetAttribute(d, cudadrv.FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, n).
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
// The arguments and dimensions go to C by value (hl_args, hl_dims), copied
// onto C's stack: hl_launch calls into the driver, whose logger (registered
// with cudadrv.LogsRegisterCallback) may call back into Go during the call,
// so it cannot be marked #cgo nocallback, and without it (noescape works
// only with it) memory passed by address escapes, so would have to come
// from the heap or a pool. Arguments that do not fit in hl_args' 64 bytes
// go in the kernel's spare buffer, from the heap once.
func (k *Kernel) launch(s *Stream, cfg *LaunchConfig, args []any) error {
	var small C.hl_args
	var buf []byte
	var big *C.char // small escapes if big may point into it
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
		buf, big = *b, (*C.char)(unsafe.Pointer(&(*b)[0]))
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
func (k *Kernel) queue(d Device, s *Stream, cfg *LaunchConfig, args []any, small *C.hl_args, big *C.char) error {
	st := s.deviceState()
	if st == nil {
		var err error
		if st, err = d.state(); err != nil {
			return err
		}
	}
	var dims C.hl_dims
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
	var params *C.hl_param
	if len(k.params) > 0 {
		params = (*C.hl_param)(unsafe.Pointer(&k.params[0]))
	}
	if launchHook != nil {
		launchHook()
	}
	// The context goes as an integer: cgo checks every void * argument for
	// Go pointers, on every call.
	r := C.hl_launch(C.uintptr_t(uintptr(st.ctx)), f, dims, C.uint32_t(cfg.SharedMem), h, cbool(cfg.Cooperative),
		*small, big, params, C.int(len(k.params)))
	if r != 0 {
		return check("launching "+k.name, r)
	}
	return nil
}

// launchHook, set by tests, runs just before a launch's call into the
// shim.
var launchHook func()

// function returns the kernel's CUfunction in device d's primary context
// ctx, looking it up the first time.
func (k *Kernel) function(d Device, ctx unsafe.Pointer) (C.uintptr_t, error) {
	if f := k.funcs[d].Load(); f != 0 {
		return C.uintptr_t(f), nil
	}
	var f C.uintptr_t
	if err := check("cuKernelGetFunction "+k.name, C.hl_kernel_function(ctx, &f, k.k)); err != nil {
		return 0, err
	}
	k.funcs[d].Store(uintptr(f))
	return f, nil
}

// check checks the configuration against the limits of device d, l, and
// writes the grid, block and cluster dimensions for the shim to dims.
func (cfg *LaunchConfig) check(d Device, l *deviceLimits, dims *C.hl_dims) error {
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
	dims.grid = [3]C.uint32_t{C.uint32_t(gx), C.uint32_t(gy), C.uint32_t(gz)}
	dims.block = [3]C.uint32_t{C.uint32_t(bx), C.uint32_t(by), C.uint32_t(bz)}
	if cfg.Cluster != (Dim3{}) {
		cx, cy, cz := cfg.Cluster.dims()
		dims.cluster = [3]C.uint32_t{C.uint32_t(cx), C.uint32_t(cy), C.uint32_t(cz)}
	}
	return nil
}

// pack writes the arguments into buf at the parameters' offsets, and
// returns the device the launch goes to: s's, or for a nil s the device of
// the first memory argument (managed memory aside), or DefaultDevice when
// there is none. Every memory argument must be usable there. Without an
// error, it holds the memory of every argument that is memory (an
// operation in progress on it, which Free waits for) until releaseArgs.
//
// Arguments of the types of the kernel's shape take packShape; the rest
// take putArg, one by one, and the first launch whose arguments have a
// shape records it.
func (k *Kernel) pack(buf []byte, args []any, s *Stream) (Device, error) {
	sh := k.shape.Load()
	if sh != nil {
		if d, ok := packShape(buf, args, s, *sh); ok {
			return d, nil
		}
	}
	if len(args) != len(k.params) {
		return 0, invalid("%w: %s takes %d arguments, got %d", ErrArgument, k.name, len(k.params), len(args))
	}
	d, chosen := Device(0), false
	if s != nil {
		d, chosen = s.dev, true
	}
	bad, badDev := -1, Device(0) // the first memory argument d cannot use
	for i, a := range args {
		p := &k.params[i]
		dev, err := putArg(buf[p.off:p.off+p.size], a, p.class)
		switch {
		case err != nil:
			k.releaseArgs(args[:i])
			return 0, invalid("%w: %s argument %d: %v", ErrArgument, k.name, i, err)
		case dev < 0:
		case !chosen:
			d, chosen = dev, true
		case bad < 0 && dev != d && !d.canAccess(dev):
			bad, badDev = i, dev
		}
	}
	var err error
	switch {
	case bad >= 0 && s == nil:
		err = invalid("%w: %s argument %d is memory of %v, the arguments before it of %v", ErrArgument, k.name, bad, badDev, d)
	case bad >= 0:
		err = invalid("%w: %s argument %d is memory of %v, launched on %v without peer access to it", ErrArgument, k.name, bad, badDev, d)
	case !chosen:
		d, err = DefaultDevice()
	}
	if err != nil {
		k.releaseArgs(args)
		return 0, err
	}
	if sh == nil {
		if sh := k.newShape(args); sh != nil {
			k.shape.CompareAndSwap(nil, sh)
		}
	}
	return d, nil
}

// A shape is the types of the arguments of a launch that putArg accepted,
// when each was a number of 4 or 8 bytes or an Array, with their
// parameters' offsets. A launch whose arguments have the same types takes
// packShape: putArg's checks of them would give the same answers again,
// and what it would write is the number's bytes or the Array's address.
type shape []shapeArg

type shapeArg struct {
	word uintptr      // the type word of the argument, as typeWord reads it
	typ  reflect.Type // its type, which keeps word's alive
	off  uint32       // its parameter's offset
	kind uint32       // shape4, shape8 or shapeArray
}

const (
	shape4     = iota // a number of 4 bytes, which an interface holds by address
	shape8            // a number of 8 bytes
	shapeArray        // an *Array[T]
)

// newShape returns the shape of args, which putArg accepted, or nil when
// they have none.
func (k *Kernel) newShape(args []any) *shape {
	for i, a := range args {
		if _, ok := shapeKind(a, k.params[i].size); !ok {
			return nil
		}
	}
	sh := make(shape, len(args))
	for i := range args {
		kind, _ := shapeKind(args[i], k.params[i].size)
		sh[i] = shapeArg{word: typeWord(&args[i]), typ: reflect.TypeOf(args[i]), off: k.params[i].off, kind: kind}
	}
	return &sh
}

// shapeKind returns the kind of shape argument a is, for a parameter of
// size bytes.
func shapeKind(a any, size uint32) (uint32, bool) {
	if _, ok := a.(anyArray); ok {
		return shapeArray, true
	}
	switch reflect.TypeOf(a).Kind() {
	case reflect.Int, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint32, reflect.Uint64,
		reflect.Uintptr, reflect.Float32, reflect.Float64:
		switch size {
		case 4:
			return shape4, true
		case 8:
			return shape8, true
		}
	}
	return 0, false
}

// packShape is pack for arguments of the types of sh. It reports false, for
// pack to take them with its errors, when a type differs, an Array's memory
// is freed or one the launch's device cannot use, or for a nil s no
// argument is device memory.
func packShape(buf []byte, args []any, s *Stream, sh shape) (Device, bool) {
	if len(args) != len(sh) {
		return 0, false
	}
	d, chosen := s.Device(), s != nil
	// buf holds every parameter at its offset.
	base := unsafe.Pointer(unsafe.SliceData(buf))
	for i := range args {
		a, sa := &args[i], &sh[i]
		if typeWord(a) != sa.word {
			return 0, false
		}
		dst, v := unsafe.Add(base, sa.off), anyData(a)
		switch sa.kind {
		case shape4:
			*(*uint32)(dst) = *(*uint32)(v)
		case shape8:
			*(*uint64)(dst) = *(*uint64)(v)
		default:
			// Every Array[T] starts with its MemoryPointer.
			mp := (*MemoryPointer)(v)
			if mp == nil || mp.mem == nil || !mp.mem.life.Acquire() {
				releaseShaped(args[:i], sh)
				return 0, false
			}
			switch m := mp.mem; {
			case m.managed:
			case !chosen:
				d, chosen = m.dev, true
			case m.dev != d && !d.canAccess(m.dev):
				releaseShaped(args[:i+1], sh)
				return 0, false
			}
			*(*uint64)(dst) = uint64(uintptr(mp.Ptr()))
		}
	}
	if !chosen {
		releaseShaped(args, sh)
	}
	return d, chosen
}

// releaseShaped ends the hold packShape took on the memory of args, whose
// types are those of sh.
func releaseShaped(args []any, sh shape) {
	for i := range args {
		if sh[i].kind == shapeArray {
			(*MemoryPointer)(anyData(&args[i])).mem.life.Release()
		}
	}
}

// releaseArgs ends the hold pack took on the memory of args.
func (k *Kernel) releaseArgs(args []any) {
	var sh shape
	if p := k.shape.Load(); p != nil {
		sh = *p
	}
	for i := range args {
		if m := shapedMemory(&args[i], i, sh); m != nil {
			m.life.Release()
		}
	}
}

// forArgMemory calls fn with the memory of each of args that pack took
// hold of.
func (k *Kernel) forArgMemory(args []any, fn func(*Memory)) {
	var sh shape
	if p := k.shape.Load(); p != nil {
		sh = *p
	}
	for i := range args {
		if m := shapedMemory(&args[i], i, sh); m != nil {
			fn(m)
		}
	}
}

// shapedMemory returns the memory of argument i, a, that pack took hold
// of, or nil: for an argument of the type of the kernel's shape sh, as
// releaseShaped finds it, for the others through argMemory.
func shapedMemory(a *any, i int, sh shape) *Memory {
	if i < len(sh) && typeWord(a) == sh[i].word {
		if sh[i].kind == shapeArray {
			return (*MemoryPointer)(anyData(a)).mem
		}
		return nil
	}
	return argMemory(a)
}

// argMemory returns the memory an argument putArg accepted is, or nil.
func argMemory(a *any) *Memory {
	switch v := (*a).(type) {
	case MemoryPointer:
		return v.mem
	case *Memory:
		return v
	case anyArray:
		if p := (*MemoryPointer)(anyData(a)); p != nil {
			return p.mem
		}
	}
	return nil
}

// putArg writes a, which must be exactly len(dst) bytes and fit a
// parameter of the given class, and returns the device of a's memory when
// a is device memory, else -1 (managed memory included). Without an error,
// it holds a's memory when a is memory (argMemory). It never lets a
// escape, so that the caller's conversions to any stay on its stack.
func putArg(dst []byte, a any, class paramClass) (dev Device, err error) {
	var mem *Memory
	var kind paramClass // what a is, to compare with class
	switch v := a.(type) {
	case int:
		kind, err = paramSigned, put64(dst, uint64(v), "int")
	case uint:
		kind, err = paramUnsigned, put64(dst, uint64(v), "uint")
	case int8:
		kind, err = paramSigned, put8(dst, uint8(v), "int8")
	case uint8:
		kind, err = paramUnsigned, put8(dst, v, "uint8")
	case bool:
		var b uint8
		if v {
			b = 1
		}
		kind, err = paramBool, put8(dst, b, "bool")
	case int16:
		kind, err = paramSigned, put16(dst, uint16(v), "int16")
	case uint16:
		kind, err = paramUnsigned, put16(dst, v, "uint16")
		if class == paramHalf {
			kind = paramHalf // the bits of a __half or __nv_bfloat16
		}
	case int32:
		kind, err = paramSigned, put32(dst, uint32(v), "int32")
	case uint32:
		kind, err = paramUnsigned, put32(dst, v, "uint32")
	case float32:
		kind, err = paramFloat, put32(dst, math.Float32bits(v), "float32")
	case int64:
		kind, err = paramSigned, put64(dst, uint64(v), "int64")
	case uint64:
		kind, err = paramUnsigned, put64(dst, v, "uint64")
	case float64:
		kind, err = paramDouble, put64(dst, math.Float64bits(v), "float64")
	case uintptr:
		kind, err = paramPointer, put64(dst, uint64(v), "uintptr")
		if class == paramSigned || class == paramUnsigned {
			kind = class // an address as an integer
		}
	case unsafe.Pointer:
		kind, err = paramPointer, put64(dst, uint64(uintptr(v)), "unsafe.Pointer")
	case cudadrv.Deviceptr:
		kind, err = paramPointer, put64(dst, uint64(v), "cudadrv.Deviceptr")
	case MemoryPointer:
		kind, err, mem = paramPointer, putMemory(dst, v, reflect.TypeOf(a)), v.mem
	case *Memory:
		kind, mem = paramPointer, v
		if err = v.live(); err != nil {
			err = fmt.Errorf("*Memory: %w", err)
		} else {
			err = put64(dst, uint64(uintptr(v.ptr)), "*Memory")
		}
	case anyArray:
		// Every Array[T] starts with its MemoryPointer. A call of a method
		// of v would make a escape, and the caller's conversions to any
		// with it.
		data := anyData(&a)
		if data == nil {
			return -1, fmt.Errorf("nil %v", reflect.TypeOf(a))
		}
		p := *(*MemoryPointer)(data)
		kind, err, mem = paramPointer, putMemory(dst, p, reflect.TypeOf(a)), p.mem
	case nil:
		return -1, errors.New("nil")
	default:
		t := reflect.TypeOf(a)
		data := anyData(&a)
		switch kindOf(t) {
		case argValue:
			if int(t.Size()) != len(dst) {
				return -1, fmt.Errorf("%v is %d bytes, the parameter %d", t, t.Size(), len(dst))
			}
			kind = paramUnknown
			if class == paramHalf {
				kind = paramHalf // a struct of the half's bits
			}
			copy(dst, unsafe.Slice((*byte)(data), len(dst)))
		default:
			return -1, fmt.Errorf("%v cannot be passed to a kernel", t)
		}
	}
	if err != nil {
		return -1, err
	}
	if !fits(kind, class) {
		return -1, fmt.Errorf("%v cannot be passed for a %v parameter", reflect.TypeOf(a), class)
	}
	switch {
	case mem == nil:
		return -1, nil
	case !mem.life.Acquire(): // freed since its check
		return -1, fmt.Errorf("%v: %w", reflect.TypeOf(a), ErrFreed)
	case mem.managed:
		return -1, nil
	}
	return mem.dev, nil
}

// anyData returns the value word of *a: the pointer an interface holds, or
// the address of its copy of a value that is not a pointer.
func anyData(a *any) unsafe.Pointer { return (*[2]unsafe.Pointer)(unsafe.Pointer(a))[1] }

// typeWord returns the type word of *a, equal for values of one type, as
// an integer: a shape keeps it without keeping a.
func typeWord(a *any) uintptr { return uintptr((*[2]unsafe.Pointer)(unsafe.Pointer(a))[0]) }

// fits reports whether a Go argument of kind may be passed for a parameter
// of class: any where the class is unknown, and any integer for an integer.
func fits(kind, class paramClass) bool {
	switch {
	case class == paramUnknown || kind == class:
		return true
	case class == paramSigned || class == paramUnsigned:
		return kind == paramSigned || kind == paramUnsigned
	}
	return false
}

// putMemory writes the address of p, the memory of an argument of type t,
// which it names only in an error: a type's name costs time to format.
func putMemory(dst []byte, p MemoryPointer, t reflect.Type) error {
	if err := p.mem.live(); err != nil {
		return fmt.Errorf("%v: %w", t, err)
	}
	if len(dst) != 8 {
		return sizeError(t.String(), 8, len(dst))
	}
	binary.NativeEndian.PutUint64(dst, uint64(uintptr(p.Ptr())))
	return nil
}

// anyArray is every *Array[T], which Launch recognizes by this method rather
// than by reflection.
type anyArray interface{ isArray() }

func sizeError(what string, size, want int) error {
	return fmt.Errorf("%s is %d bytes, the parameter %d", what, size, want)
}

func put8(dst []byte, v uint8, what string) error {
	if len(dst) != 1 {
		return sizeError(what, 1, len(dst))
	}
	dst[0] = v
	return nil
}

func put16(dst []byte, v uint16, what string) error {
	if len(dst) != 2 {
		return sizeError(what, 2, len(dst))
	}
	binary.NativeEndian.PutUint16(dst, v)
	return nil
}

func put32(dst []byte, v uint32, what string) error {
	if len(dst) != 4 {
		return sizeError(what, 4, len(dst))
	}
	binary.NativeEndian.PutUint32(dst, v)
	return nil
}

func put64(dst []byte, v uint64, what string) error {
	if len(dst) != 8 {
		return sizeError(what, 8, len(dst))
	}
	binary.NativeEndian.PutUint64(dst, v)
	return nil
}

// An argKind is how putArg passes a type it has no case for.
type argKind int

const (
	argInvalid argKind = iota
	argValue           // a struct or array without pointers
)

var argKinds sync.Map // reflect.Type -> argKind

func kindOf(t reflect.Type) argKind {
	if k, ok := argKinds.Load(t); ok {
		return k.(argKind)
	}
	k := argInvalid
	if t.Kind() == reflect.Struct || t.Kind() == reflect.Array {
		if !hasPointers(t) && t.Size() > 0 {
			k = argValue
		}
	}
	argKinds.Store(t, k)
	return k
}

// KernelAttributes are a kernel's attributes on a device
// (cuKernelGetAttribute).
type KernelAttributes struct {
	MaxThreadsPerBlock      int // the most threads a block can have, given the kernel's resources
	NumRegs                 int // registers per thread
	SharedSizeBytes         int // static shared memory per block
	ConstSizeBytes          int
	LocalSizeBytes          int // local memory per thread
	MaxDynamicSharedSize    int // the dynamic shared memory a launch may ask for
	PTXVersion              int // major*10 + minor
	BinaryVersion           int // major*10 + minor
	PreferredSharedCarveout int // percent, or -1 for no preference
}

// Attributes returns the kernel's attributes on device d.
func (k *Kernel) Attributes(d Device) (KernelAttributes, error) {
	var a KernelAttributes
	if err := k.usable(); err != nil {
		return a, err
	}
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
		{cudadrv.FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, &a.PreferredSharedCarveout},
	} {
		v, err := k.Attribute(d, f.attr)
		if err != nil {
			return a, err
		}
		*f.v = v
	}
	return a, nil
}

// Attribute returns one of the kernel's attributes on device d.
func (k *Kernel) Attribute(d Device, attr cudadrv.Function_attribute) (int, error) {
	return k.attribute(d, false, attr, 0)
}

// SetAttribute sets one of the kernel's attributes on device d, where CUDA
// allows it: FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
// FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, the required cluster
// size, and the cluster scheduling policy.
func (k *Kernel) SetAttribute(d Device, attr cudadrv.Function_attribute, value int) error {
	_, err := k.attribute(d, true, attr, value)
	return err
}

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
	v := C.int(value)
	op := "cuKernelGetAttribute " + attr.String()
	if set {
		op = "cuKernelSetAttribute " + attr.String()
	}
	err = check(op, C.hl_kernel_attribute(ctx, cbool(set), &v, C.int(attr), k.k, C.int(d)))
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
	var n C.int
	err = check("cuOccupancyMaxActiveBlocksPerMultiprocessor", C.hl_occupancy_blocks(ctx, &n, k.k, C.int(blockSize), C.size_t(dynamicSharedMem)))
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
	var g, b C.int
	err = check("cuOccupancyMaxPotentialBlockSize", C.hl_occupancy_block_size(ctx, &g, &b, k.k, C.size_t(dynamicSharedMem), C.int(blockSizeLimit)))
	return int(g), int(b), err
}
