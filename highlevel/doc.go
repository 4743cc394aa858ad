// Package highlevel is the idiomatic way to use CUDA from Go: devices,
// device and pinned memory, caching pools, typed arrays, streams, events,
// graphs, and kernels compiled at run time, over the driver API. It must
// not let a program corrupt memory or crash the process, whatever its
// goroutines, the collector and the GPU do: each type's documentation
// states its rules, each one tested.
//
//	a, err := highlevel.ArrayFrom(nil, []float32{1, 2, 3}) // nil: the default allocator
//	if err != nil {
//		return err
//	}
//	defer a.Free()
//	v, err := a.ToHost()
//
// # One language
//
// highlevel, highlevel/linalg and highlevel/collective name each thing one
// way. A call that queues work on a stream takes the *Stream first (after
// a context.Context where it has one) and returns once the work is queued:
// x.FillAsync(s, v), k.Launch(s, cfg, args...), e.Record(s),
// linalg.MatMul(s, ...), collective.AllReduce(s, c, ...). A nil *Stream is
// the legacy default stream of the device involved. The call without Async
// (Fill, CopyFromHost) returns once the device has done it. Memory comes
// from Alloc on an Allocator: a Device (unpooled cuMemAlloc), a
// MemoryPool, a MemoryAsyncPool, Managed(d); stream-ordered memory from
// AllocAsync(s, n); arrays from AllocArray[T](a, n), ArrayFrom(a, slice)
// (a nil a: the default allocator, see SetAllocator) and
// AllocArrayAsync[T](s, a, n); pinned memory from AllocPinned or a
// PinnedMemoryPool. docs/one-way.md in the repository gives the one way
// to do each task, README.md beside this file CuPy's and PyCUDA's names.
//
// # Free and Close
//
// Memory is freed with Free (MemoryPointer, Array, PinnedMemory), objects
// with Close (Stream, Event, Graph, GraphExec, Module, the pools). As with
// os.File, the operations in progress finish first, and no CUDA call ever
// reaches a destroyed handle. A second Free returns ErrFreed, a second
// Close ErrClosed, as do later operations on the object. A nil pointer's
// methods return an error wrapping ErrNil, and so do a zero value's where
// a function makes the type's values (each type says what its zero value
// does). Device memory dropped without Free is given back once the GPU's
// work that may use it is done.
//
// # Errors
//
// An error says "highlevel: ", the operation, its size and device where it
// has them, then why: "highlevel: new stream on device 1: cuStreamCreate:
// ...". Sentinels (ErrClosed, ErrFreed, ErrNil, ErrInvalid, ErrCapturing)
// and CUDA's statuses stay errors.Is-able, as both their cudadrv.Result and
// the cudart.Error of the same value; typed errors (*OutOfMemoryError,
// *PanicError, *CompileError) errors.As-able. Where the driver logs why it
// refused a call (CUDA 12.9), the error ends with its lines, which
// DriverLog returns; SetLogger sends all of the driver's lines to a
// *slog.Logger (docs/logging.md). An *OutOfMemoryError's Report says what
// the pools hold, and with StartMemoryProfile on, which stacks hold it
// (docs/memory-profiling.md).
//
// # Devices and goroutines
//
// Every object remembers its device, and each operation makes that
// device's context current, does its work and puts the previous one back
// in one cgo call: goroutines, which move between OS threads, never send
// work to the wrong GPU, and the package never relies on a current device.
// Streams, events, modules, kernels, pools and GraphExecs are safe for
// use by several goroutines. For code that calls cudart or cudadrv
// directly, Device.Do runs a function with a device current (CuPy's "with
// Device(n):").
//
// # Other CUDA libraries
//
// To call another library (cuRAND, cuDNN, your own C) on a stream and
// memory of the package's, Stream.Borrow(d, mems...) lends them: until
// Borrow.Return, Close of the stream and Free of the memory wait, so the
// library's work never reaches a destroyed stream or freed memory. Queue
// the work with s.Handle() and the memory's Ptr inside Device.Do, then
// Return; Borrow.Keep makes a capture hold the library's handle for its
// graph, BorrowAll lends several streams at once. linalg and collective
// are built this way.
//
// docs/tutorial.md is a tutorial, and docs/highlevel.md the rest of the
// design: values and zero values, the driver API, waiting, callbacks,
// captures and graphs, cleanups, sharing between processes.
package highlevel
