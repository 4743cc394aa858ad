// Package highlevel is the idiomatic way to use CUDA from Go: devices,
// device and pinned memory, caching pools, typed arrays, streams, events,
// graphs, and kernels compiled at run time, over the generated cudadrv and
// nvrtc packages.
//
//	a, err := highlevel.ArrayFrom(nil, []float32{1, 2, 3})
//	if err != nil {
//		return err
//	}
//	defer a.Free()
//	v, err := a.ToHost()
//
// The package must not let a program corrupt memory or crash the process,
// whatever its goroutines, the collector and the GPU do, in any order: its
// types' and functions' documentation states the rules, each one tested.
//
// # Conventions
//
// Every type of the package follows the same rules, and each thing has one
// name: there are no aliases.
//
// Values and pointers. Device and MemoryPointer are small values, copied
// freely. A MemoryPointer is like a slice header: it has no exported
// fields (Memory and Offset are methods), and Add returns a new one rather
// than moving it. What owns a resource is a pointer: *Memory, *Array,
// *PinnedMemory, *Stream, *Event, *Graph, *GraphExec, *Module and the
// pools.
//
// Releasing. Memory is freed with Free (Memory, Array, PinnedMemory),
// objects are closed with Close (Stream, Event, Graph, GraphExec, Module
// and the pools), a HostRegistration ends with Unregister. As with os.File
// and database/sql, the operations in progress on an object finish before
// Close (or Memory's Free) releases it, and no CUDA call is ever made with
// a destroyed handle. A release happens once: a second Free returns
// ErrFreed, a second Close or Unregister ErrClosed, and so do later
// operations on the object. Every method on a nil pointer returns an error
// wrapping ErrNil (or a zero value where it returns no error).
//
// Zero values. A type whose values a function of the package makes
// (NewStream, LoadModule, an allocation, ...) has a zero value that is not
// usable: its methods, and the operations given it, return an error
// wrapping ErrNil that names that function, and never call CUDA. Each
// type's documentation says what its zero value does: an Array's is an
// empty view, a Dim3's is 1 in each dimension.
//
// Go memory is typed. Go slices go to and from the device through
// CopyFromHost and CopyToHost (and their Async forms), Array's methods of
// the same names, and PinnedSlice for a []T view of pinned memory; element
// types hold no Go pointers, which is checked. The methods that take an
// unsafe.Pointer and a byte count (MemoryPointer.CopyFromHostPointer,
// CopyToHostPointer) are for C interop. Copies name one direction one way:
// FromHost to the device, ToHost from it, FromDevice between devices.
//
// Streams. Copies and memsets come in two forms: the plain one returns
// once the device has done it, and the second, named ...Async, takes the
// *Stream it queues on last. Every operation that takes a *Stream takes
// nil as the legacy default stream of the device involved.
//
// Allocation is explicit where it matters. An Allocator (a Device for
// unpooled cuMemAlloc, a MemoryPool, a MemoryAsyncPool) allocates through
// its Malloc, and AllocArray and ArrayFrom make Arrays from the one
// named. Alloc, AllocArray and ArrayFrom use the process's default
// allocator, for the simple case: one per process, fixed at its first use
// (see SetAllocator).
//
// Errors. Every error of the package says "highlevel: " once, then the
// operation that failed, with its size and device where it has them, then
// why: "highlevel: new stream on device 1: cuStreamCreate: ...". Sentinel
// errors (ErrClosed, ErrNil, ...) and CUDA's statuses inside stay
// errors.Is-able, typed errors (*OutOfMemoryError, *PanicError, ...)
// errors.As-able. A status of the driver matches both its cudadrv.Result
// and the cudart.Error of the same value, which CUDA gives the same
// meaning (CUDA_ERROR_ILLEGAL_ADDRESS is cudaErrorIllegalAddress), so code
// written for the runtime's statuses keeps working. Refused input, such as
// a size out of range, matches ErrInvalid; an empty operation (AllocArray(nil, 0),
// a copy or memset of 0 bytes) does nothing. The pools' statistics never
// fail (see MemoryPool).
//
// # The driver API
//
// The package calls the driver API (libcuda.so.1), as NVIDIA's cuda.core
// does, and not the runtime: one program runs on every driver from CUDA
// 12.0 on, whichever CUDA version it was built for, and needs no
// libcudart. Its C shim (package internal/driver, its only cgo) takes each
// driver function from cuGetProcAddress in the form it has at CUDA 12.0
// (cuMemAlloc as CUDA 3.2 made it, cuMemAlloc_v2), so it behaves the same
// on every driver; the few operations that need a later driver return a
// *DriverVersionError on an older one. Only Device.Properties and
// RuntimeVersion, which have no driver form, load libcudart.
//
// The exported API speaks the driver's types (package cudadrv), as its
// calls do: Stream.Handle is a cudadrv.Stream, Event.Handle a
// cudadrv.Event, Device.Attribute takes a cudadrv.Device_attribute, and so
// on; only Device.Properties returns the runtime's cudart.DeviceProp. The
// runtime's handles are the same values: the libraries (cuBLAS, NCCL, ...)
// take a cudart.Stream, which a Stream's handle converts to.
//
// # Devices and goroutines
//
// CUDA's current device belongs to the OS thread, and a goroutine may move
// to another thread between any two calls. So the package never relies on
// it: every object remembers its device, and each operation makes that
// device's primary context current, does its work and puts the previous
// context back, all in one cgo call (a thread that had no context keeps
// the device's: making one current and undoing it costs about 0.3 µs). A
// goroutine cannot send work to the wrong GPU, and no executor goroutine
// sits in the way. Host memory (pinned, registered, staging buffers) is
// allocated portable, in the context of the lowest-numbered device the
// program has used: a program that uses only device 1 never makes a
// context on device 0. For code that calls cudart or cudadrv directly,
// CurrentDevice, Device.Use and Device.Do are cudaGetDevice, cudaSetDevice
// and CuPy's "with Device(n):".
//
// # Streams, waiting and callbacks
//
// The Synchronize methods wait holding an OS thread; Stream.Wait and
// Event.Wait take a context and, as the Done methods, hold none for long,
// so that any number of goroutines may wait at once (Stream.Wait says
// how). Functions queued with Stream.AddCallback and Stream.LaunchHostFunc
// run for a CUDA thread, which waits for them: they must not call CUDA
// (see ErrInCallback), and their panics come back as *PanicError.
//
// # Captures and graphs
//
// Capture, or Stream.BeginCapture and Stream.EndCapture, takes the work
// queued on a stream into a Graph, which Graph.Instantiate makes a
// GraphExec to launch. Stream.BeginCapture gives the rules a capture sets
// for the rest of the program, CaptureMode what each mode refuses,
// ErrCapturing what refuses to run during a capture, and Graph what a
// graph keeps alive.
//
// # Freeing memory
//
// Freeing is explicit: CuPy frees when the last reference goes, Go has no
// reference counts, so Free does it. Cleanups are a safety net: device
// memory dropped without Free is given back later, once the devices have
// done the work that may still use it (see Memory, MemoryPool and
// MemoryAsyncPool); PinnedMemory dropped without Free is never reused.
//
// # Kernels
//
// Compile turns CUDA C++ in a Go string into device code with NVRTC (no
// nvcc needed), LoadModule loads it, Module.Kernel finds a kernel, and
// Kernel.Launch queues it with typed Go arguments, checked before the launch:
//
//	c, err := highlevel.Compile(`extern "C" __global__ void scale(float a, float *y, int n) {
//		int i = blockIdx.x * blockDim.x + threadIdx.x;
//		if (i < n) y[i] *= a;
//	}`, nil)
//	m, err := highlevel.LoadModule(c.Image)
//	k, err := m.Kernel("scale")
//	err = k.Launch(stream, highlevel.LaunchConfig{Grid: highlevel.Dim3{X: (n + 255) / 256}, Block: highlevel.Dim3{X: 256}}, float32(2), y, int32(n))
//
// # Sharing between processes
//
// Event.IPCHandle and MemoryPointer.IPCHandle export an event and memory to
// other processes (OpenIPCEvent, OpenIPCMemory), and say what each keeps.
//
// # Linear algebra
//
// Package highlevel/linalg holds each device's cuBLAS, cuSOLVER and
// cuSPARSE handles and typed cuBLAS calls on row-major arrays (MatMul,
// Gemm, Gemv, ...). It is a package of its own so that programs that do
// not use these libraries do not build them.
//
// # Coming from CuPy and PyCUDA
//
// README.md beside this package's files maps CuPy's (cupy.cuda) and
// PyCUDA's names to the package's.
package highlevel
