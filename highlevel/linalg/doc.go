// Package linalg is linear algebra on highlevel's devices, streams and
// arrays: each device's cuBLAS, cuSOLVER (dense) and cuSPARSE handles, and
// typed cuBLAS calls on row-major highlevel.Array[T] of float32 or float64:
// MatMul, Gemm, GemmStridedBatched, Gemv, Axpy and Dot. It is a package of
// its own so that a program that does not use these libraries does not
// build their bindings.
//
//	err := linalg.MatMul(stream, a, b, c, m, n, k) // c = a·b, c m×n, a m×k
//
// # Handles
//
// BLASOf, SolverOf and SparseOf return a device's handle of each library,
// created on first use and shared by the whole program, as CuPy's
// get_cublas_handle and its siblings do. highlevel.ClearCaches destroys
// the libraries' handles they hold, once no call of the library on the
// device is in progress and no stream capture is (a destroy synchronizes
// the device, which would invalidate the capture: it waits for the
// captures to end); the next call creates another. So a ClearCaches never
// fails a call, whatever goroutines do meanwhile, and a BLAS, Solver or
// Sparse taken before it goes on working: only the cost of the new handle
// shows. A call captured into a graph uses its handle's workspace each
// time the graph runs, so the Graph and its GraphExecs hold the handle: a
// ClearCaches meanwhile sets it aside (the calls after it create another)
// and it is destroyed once they are all closed (highlevel's Borrow.Keep).
// The libraries' handles are not safe for concurrent use; BLAS, Solver and
// Sparse are: Do runs one call of a handle at a time, with the handle's
// device current on the calling OS thread and the handle's stream set to
// the one asked for, so that the generated packages' functions (cublas,
// cusolver, cusparse) can be called on it directly.
//
// # Matrices
//
// Matrices are row-major, as a Go [][]T flattened row by row: an m×n
// matrix holds element (i, j) at i·n+j. Sizes come in BLAS's order, m, n,
// k: c is m×n and the inner dimension is k, in MatMul as in Gemm. cuBLAS is
// column-major; the functions pass each product the other way round
// (cᵀ = bᵀ·aᵀ), which needs no copy. Each function checks its sizes (0 to
// 2³¹-1), strides and the arrays' lengths, then that the arrays are on one
// device, the stream's, before any call (a refusal matches
// highlevel.ErrInvalid, a nil array highlevel.ErrNil); the arrays' memory
// and the stream are held while the call queues its work (Stream.Borrow),
// so that a Free or Close in another goroutine waits for it. The stream
// comes first, as in every call of highlevel's that queues work; the work
// runs on it (nil: the legacy default stream of the arrays' device),
// ordered with the rest of the stream's work, and nothing waits for it.
//
// # Logs
//
// SetLogger sends cuBLAS's, cuBLASLt's and cuSPARSE's log messages to a
// *slog.Logger, at slog's levels, asking each library for what the
// logger enables; highlevel.SetLogger does the same for the driver's, and
// docs/logging.md in the repository says what each logs.
//
// # Coming from CuPy
//
//	CuPy                                    Go
//	cupy.cuda.device.get_cublas_handle      BLASOf(dev), BLAS.Do(stream, fn)
//	cupy.cuda.device.get_cusolver_handle    SolverOf(dev), Solver.Do(stream, fn)
//	cupy.cuda.device.get_cusparse_handle    SparseOf(dev), Sparse.Do(stream, fn)
//	cupy.matmul (2-D), a @ b                MatMul(stream, a, b, c, m, n, k)
//	cupy.matmul (3-D, batched)              GemmStridedBatched
//	cupy.cublas.gemm(transa, transb, ...)   Gemm(stream, transA, transB, m, n, k, alpha, a, b, beta, c)
//	cupy.cublas.gemv(transa, alpha, ...)    Gemv(stream, trans, m, n, alpha, a, x, beta, y)
//	cupy.cublas.axpy(alpha, x, y)           Axpy(stream, alpha, x, y)
//	cupy.cublas.dot(x, y, out)              Dot(stream, x, y, result)
package linalg
