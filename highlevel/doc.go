// Package highlevel is the idiomatic way to use CUDA from Go: devices,
// device and pinned memory, caching pools, typed arrays, streams, events,
// graphs, and kernels compiled at run time, over the generated cudadrv and
// nvrtc packages.
//
//	a, err := highlevel.ArrayFrom([]float32{1, 2, 3})
//	if err != nil {
//		return err
//	}
//	defer a.Free()
//	v, err := a.ToHost()
//
// # Conventions
//
// Every type of the package follows the same rules.
//
// Values and pointers. Device and MemoryPointer are small values, copied
// freely. A MemoryPointer is like a slice header: it has no exported
// fields (Memory and Offset are methods), and Add returns a new one rather
// than moving it. What owns a resource is a pointer: *Memory, *Array,
// *PinnedMemory, *Stream, *Event, *Graph, *GraphExec, *Module and the
// pools.
//
// Releasing. Memory is freed with Free (Memory, Array, PinnedMemory),
// objects are closed with Close (Stream, Event, Graph, GraphExec, Module,
// MemoryPool, MemoryAsyncPool, PinnedMemoryPool), a HostRegistration ends
// with Unregister. A release happens once, as os.File's Close: a second
// Free returns ErrFreed, a second Close or Unregister returns ErrClosed,
// and so do later operations on the object. Every method on a nil pointer
// returns an error wrapping ErrNil (or a zero value where it returns no
// error).
//
// Zero values. A type whose values a function of the package makes
// (NewStream, NewEvent, LoadModule, NewMemoryPool, an allocation, ...) has
// a zero value that is not usable: its methods, and the operations given
// it, return an error wrapping ErrNil that names the function making one
// ("highlevel: nil object: zero Stream (make one with NewStream)"), and
// never call CUDA. Each type's documentation says what its zero value
// does: an Array's is an empty view, a Dim3's is 1 in each dimension, a
// CaptureMode's is CaptureRelaxed.
//
// Go memory is typed. Go slices go to and from the device through
// CopyFromHost and CopyToHost (and their Async forms), Array's methods of
// the same names, and PinnedSlice for a []T view of pinned memory; element
// types hold no Go pointers, which is checked. The methods that take an
// unsafe.Pointer and a byte count (MemoryPointer.CopyFromHostPointer,
// CopyToHostPointer) are for C interop. Copies name one direction one way:
// FromHost to the device, ToHost from it, FromDevice between devices.
//
// Allocation is explicit where it matters. An Allocator (a Device for
// unpooled cuMemAlloc, a MemoryPool, a MemoryAsyncPool) allocates through
// its Malloc, and NewArrayOn and ArrayFromOn make Arrays from the one
// named; ArrayOf makes an Array view of memory allocated elsewhere. Alloc,
// NewArray and ArrayFrom use the process's default allocator, for the
// simple case. Go has no thread-local state, so CuPy's per-thread
// allocator is per process here, and to make it impossible to change under
// goroutines that allocate, it is fixed at its first use: SetAllocator
// (and SetPinnedMemoryAllocator) may be called before, and return
// ErrAllocatorInUse after. There is no UsingAllocator: a function that
// swaps the allocator of every goroutine at once is the bug it would
// invite.
//
// Statistics never fail. The pools' counts (UsedBytes, FreeBytes,
// TotalBytes, NFreeBlocks, ActiveBlocks, Limit, ReleaseThreshold) return an
// int, 0 for a nil pool; what sets something (SetLimit, SetLimitFraction,
// SetReleaseThreshold) returns an error.
//
// Streams. Copies and memsets come in two forms, the second named ...Async
// and taking the *Stream it queues on last; every operation that takes a
// *Stream takes nil as the legacy default stream of the device involved.
//
// Errors. Every error of the package says "highlevel: " once, then the
// operation that failed, with its size and device where it has them, then
// why: "highlevel: new stream on device 1: cuStreamCreate: ...". The
// sentinel errors (ErrClosed, ErrFreed, ErrNil, ErrInCallback,
// ErrCapturing, ...) and CUDA's statuses inside stay errors.Is-able, and
// the typed errors (*OutOfMemoryError, *CompileError, *PanicError,
// *DriverVersionError) errors.As-able. A status of the driver matches both
// its cudadrv.Result and the cudart.Error of the same value, which CUDA
// gives the same meaning (CUDA_ERROR_ILLEGAL_ADDRESS is
// cudaErrorIllegalAddress), so code written for the runtime's statuses
// keeps working. Every allocation that does not fit returns an
// *OutOfMemoryError, which matches cudart.ErrorMemoryAllocation and
// cudadrv.ERROR_OUT_OF_MEMORY; so does a size beyond 2^56 bytes. Where
// CUDA's libraries cannot be loaded, the error lists where they were
// looked for and names the variable that overrides the search
// ($GOCUDA_CUDA, $GOCUDA_CUDART).
//
// One name for each thing: no aliases.
//
// # The driver API
//
// The package calls the driver API (libcuda.so.1), as NVIDIA's cuda.core
// does, and not the runtime: one program runs on every driver from CUDA
// 12.0 on, whichever CUDA version it was built for, and needs no
// libcudart. Its C shim (package internal/driver, its only cgo) takes
// each driver function once, from cuGetProcAddress, in the form the
// function has at CUDA 12.0 (for example cuMemAlloc as CUDA 3.2 made it,
// cuMemAlloc_v2), so it behaves the same on every driver. A few operations need a later driver: on an
// older one they return a *DriverVersionError that names the function and
// the CUDA version it needs (Module.Kernel needs CUDA 12.4's
// cuKernelGetParamInfo), and the rest work. Two functions have no driver
// form and load libcudart, on their first call: Device.Properties
// (cudaGetDeviceProperties) and RuntimeVersion; where libcudart cannot be
// loaded they return an error that says so. Name, ComputeCapability,
// Attribute and NewDeviceData read the same facts from the driver.
//
// The exported API speaks the driver's types (package cudadrv), as its
// calls do: Stream.Handle is a cudadrv.Stream, Event.Handle a
// cudadrv.Event, Graph.Handle and GraphExec.Handle a cudadrv.Graph and
// cudadrv.GraphExec, Device.Attribute takes a cudadrv.Device_attribute and
// Kernel.Attribute a cudadrv.Function_attribute. Only Device.Properties,
// the runtime's cudaGetDeviceProperties, returns the runtime's
// cudart.DeviceProp. The runtime's handles are the same values: the
// libraries (cuBLAS, NCCL, ...) take a cudart.Stream, which a Stream's
// handle converts to, cudart.Stream(s.Handle()).
//
// # Devices and goroutines
//
// CUDA's current device belongs to the OS thread, and a goroutine may move
// to another thread between any two calls. So the package never relies on
// it: every object (Memory, Stream, Event, Graph, pools) remembers its
// device, and each operation makes that device's primary context current,
// does its work and puts the previous context back, all in one cgo call
// into a small C shim over the driver. (A thread that had no context keeps
// the device's: making one current and undoing it costs about 0.3 µs a
// call.) A goroutine cannot send work to the wrong GPU, and no executor
// goroutine sits in the way. The thread's current device is the device of
// its current context, as it is for cudaGetDevice: CurrentDevice reports
// it (device 0 where the thread has none), Device.Use makes the device's
// primary context current, as cudaSetDevice does, and Device.Do, for code
// that calls cudart or cudadrv directly and wants a current device, runs a
// function on a locked OS thread with the device current.
//
// # Lifetimes, closing and waiting
//
// The package must not let a program corrupt memory or crash the process,
// whatever its goroutines, the garbage collector and the GPU do, in any
// order. These are its rules; each is checked by a test.
//
// Closing. Stream, Event, Graph, GraphExec, Module, MemoryPool,
// MemoryAsyncPool and PinnedMemoryPool follow os.File and database/sql: an operation in progress
// on an object finishes before Close destroys it, every later operation
// returns ErrClosed, and so does a second Close. No CUDA call is ever made
// with a destroyed handle. Memory.Free likewise waits for the operations
// in progress on the memory (copies, memsets, kernel launches and linalg's
// calls that name it, until they have queued their work), and later
// operations return ErrFreed. Every method on a nil pointer, or on a zero
// value that is not usable, returns an error wrapping ErrNil (methods that
// return no error return a zero value). Close, Free and Unregister called
// from a stream callback return ErrInCallback before they change anything,
// and so do the pools' FreeAllBlocks and StopHolding: the object stays as
// it was, and the same call from a goroutine releases it later; the
// operations that take a lock CUDA calls may hold while CUDA waits for the
// callback refuse there too. Module.Close waits for the devices that
// ran the module's kernels; while a stream capture is in progress that wait
// would spoil it, so Close returns ErrCapturing and the module stays open.
//
// Captures. A capture takes the work queued on its streams into a graph:
// that work runs when the graph is launched, not before. A stream closed
// while it captures (BeginCapture, or joined to another stream's capture
// by WaitEvent) is destroyed once the capture ends, never inside it;
// EndCapture on it ends the capture, discards the graph and returns
// ErrClosed. Waiting for captured work returns ErrCapturing: Stream.Wait
// and Done while the stream captures, and Event.Wait, Done, Synchronize
// and Query for a Record made while its stream captured (Done's channel is
// closed at once), until the event is recorded again outside a capture.
// CUDA's captures are not safe for calls from several threads at once
// (driver 580 corrupts its heap), so the package makes the calls on the
// streams of a capture one at a time, whichever goroutines make them, and
// Stream.Synchronize, Query, Wait and Done refuse a stream that takes part
// in one. A stream taking part in a capture waits only for events recorded
// in it: WaitEvent refuses others with CUDA_ERROR_STREAM_CAPTURE_ISOLATION
// and leaves the capture as it was. The legacy default stream cannot be
// captured: BeginCapture on it returns CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED.
// The legacy default stream waits for every blocking stream, which CUDA
// forbids while one captures, and the driver crashed where such work raced
// a capture: so while a capture the package began is in progress, every
// operation on the legacy default stream (nil, LegacyDefaultStream, and
// the copies and memsets without Async) returns ErrCapturing without
// reaching CUDA. While a capture in CaptureGlobal mode is in progress, so
// do the calls CUDA forbids then (see CaptureGlobal), from every
// goroutine; Device.Synchronize and the package's device-wide waits refuse
// during any capture. Programs that capture while other goroutines work
// use non-blocking streams (StreamOptions.NonBlocking) and CaptureRelaxed
// or CaptureThreadLocal.
//
// Graphs. The Go functions of a graph's host nodes belong to CUDA user
// objects of the graph: they stay alive as long as the graph, its
// instantiations or any launch of them, so a GraphExec may be closed or
// updated right after Launch. A host function queued on a stream that
// joined another stream's capture belongs to the graph being captured. A
// graph holds the device memory its captured work names (copies, memsets,
// kernel arguments, linalg's calls, prefetches, launches of other graphs)
// and the modules whose kernels it launches, and so do its
// instantiations: Free of such memory, or Close of such a module, makes
// it unusable at once, and gives it back once the last Graph and
// GraphExec that use it are closed and their launches have run, as for
// memory dropped without Free. Host memory is not held: a capture refuses
// copies with pageable (Go) memory, which the graph would copy at each
// launch, with ErrCapturing, and pinned memory a graph copies must stay
// allocated while the graph may be launched.
//
// Memory. A MemoryPointer, and so an Array and its slices, keeps its
// Memory reachable; the address Ptr returns does not. Device memory
// dropped without Free is taken back by the next allocation of its kind,
// and only after every device the program used has finished the work
// queued so far, on every stream (while a stream captures, a device-wide
// wait would spoil the capture, so that waits for a later allocation):
// memory is never handed out again while a kernel or a copy queued before
// the drop may still use it. A MemoryAsyncPool is destroyed only once the
// frees of its last allocations have run, on every stream: after a
// device-wide wait, or, while a stream captures, by a later allocation.
// Memory of a MemoryAsyncPool freed after its stream's Close is freed at
// once, since Close waited for the stream's work. Pinned
// memory is C memory the collector cannot track, so its views (Bytes,
// PinnedSlice, Ptr) are valid until Free, as syscall.Mmap's are; pinned memory dropped
// without Free is never reused. A HostRegistration dropped without
// Unregister is unregistered later, once the devices are idle. A
// MemoryPool reuses a block only on the stream it was freed for (a Stream
// object, never a handle value that CUDA may hand out again); it refuses
// closed streams, streams of another device and the per-thread default
// stream, and closing a stream it allocated for waits for the stream's work
// so that its blocks can serve every stream.
//
// Sizes. Sizes, offsets and counts are checked for sign and overflow
// before anything else but a nil or zero receiver (before closed pools and
// streams, and before the driver loads), with the pools' accounting
// unchanged; sizes beyond 2^56 bytes are out of memory. Refused input,
// sizes and everything else, matches ErrInvalid, in linalg and collective
// too. Empty is a no-op:
// NewArray(0), copies and memsets of 0 bytes.
//
// Contexts. Every call names its device's context; host memory (pinned
// allocations, registrations, the staging buffers) is allocated portable in
// the context of a device the program already uses, and Device.Do restores
// the thread's previous context, or none. A program that uses only device
// 1 never makes a context on device 0.
//
// Panics. A panic in a function given to AddCallback or LaunchHostFunc (a
// graph's host node included), or its call of runtime.Goexit (t.FailNow
// calls it), is recovered and returned, as a *PanicError (Goexit set for
// runtime.Goexit), by the next Synchronize, Wait or Query of the stream
// that queued or captured it: the function runs on a goroutine of the
// package's, locked to its thread, which CUDA's thread waits for, so
// runtime.Goexit ends that goroutine alone. A panic in a Memo's function is
// returned by Get, to every caller waiting on it; after runtime.Goexit,
// which ends the calling goroutine, the waiting callers get a *PanicError,
// and nothing is cached. A MemoryPool whose upstream Allocator panics keeps
// its counts as they were, and the panic goes on to the caller of Malloc.
//
// Plain operations. A copy or memset without Async returns once the
// device has done it; it is ordered on the legacy default stream, after
// the work queued on it and on blocking streams.
//
// Streams and waiting. Every asynchronous operation takes a *Stream; nil
// means the legacy default stream of the device of the memory or object
// involved. Event.Wait and Stream.Wait take a context; they and Done wait
// without a thread, lock or helper stream shared with the waiters of other
// streams and events: the waiting goroutine queries the event in steps,
// each a short sleep in C, then a query. A wait like the stream's or
// event's earlier ones sleeps until shortly before it is due and spins on
// the event across its end, which matches cuEventSynchronize's latency for
// a fraction of its CPU; a wait with nothing learned spins for 20 µs, then
// polls at an eighth of its age, and a wait later than the earlier ones at
// a quarter of how late it is; unless the earlier waits agreed, no sleep
// is longer than twice the wait's age. A step holds an OS thread while it
// sleeps or spins in C: at most the larger of 64 and four per GOMAXPROCS
// waiters sleep there at once (the others, and sleeps of milliseconds, use
// Go's timers), at most half of GOMAXPROCS spin, and while more than half
// of GOMAXPROCS sleep there, a sleep under 500 µs first yields the
// processor to the runnable goroutines. An event recorded again while goroutines wait
// for its earlier Record hands them over to a helper stream that waits for
// that Record. Done's channel is closed when the work is done or the wait
// fails; Err then reports why. Stream.Done returns the same channel while
// no operation of the package queues more work on a stream NewStream made.
// Functions queued with Stream.AddCallback and Stream.LaunchHostFunc run
// for a CUDA thread, which waits for them, and must not call CUDA: the
// package's functions return ErrInCallback there.
//
// # Kernels
//
// Compile turns CUDA C++ in a Go string into device code with NVRTC (no
// nvcc needed), LoadModule loads it, Module.Kernel finds a kernel, and
// Kernel.Launch queues it with typed Go arguments, checked against the
// kernel's parameters before anything is launched:
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
// An event created with EventOptions.Interprocess and device memory from
// cuMemAlloc (Device.Malloc, or a MemoryPool's block over it) can be opened
// by another process of the machine: IPCHandle exports a handle of plain
// bytes (MarshalBinary), which the other process opens with OpenIPCEvent
// or OpenIPCMemory. The package cannot see into other processes: the
// exporter keeps its event open and its memory unfreed until the others
// have closed and freed theirs, and the processes order their work on the
// memory with the event (Stream.WaitEvent).
//
// # Linear algebra
//
// Package highlevel/linalg holds each device's cuBLAS, cuSOLVER and
// cuSPARSE handles (BLASOf, SolverOf, SparseOf) and typed cuBLAS calls on
// row-major arrays: MatMul, Gemm, GemmStridedBatched, Gemv, Axpy, Dot. It
// is a package of its own so that programs that do not use these libraries
// do not build them; ClearCaches destroys its handles.
//
// # Coming from CuPy and PyCUDA
//
// README.md beside this package's files maps CuPy's (cupy.cuda) and
// PyCUDA's names to the package's.
//
// Freeing is explicit: CuPy frees when the last reference goes, Go has no
// reference counts, so Free (Close for streams, events, graphs, modules and
// pools) does it, with cleanups as a safety net.
package highlevel
