// Command gen generates Go bindings from CUDA's C headers.
//
// It parses the headers with modernc.org/cc/v4 into a plain model (see
// model.go; -model prints it as JSON), then emits Go with
// github.com/dave/jennifer, formatted once by go/format, with the imports
// grouped as goimports groups them. Its output depends only on the headers,
// the packages' configuration and the CUDA majors' data files. It stops,
// naming the file and line, where #include nests more than 200 levels deep
// (GCC's limit: a header that includes itself without a guard), or
// brackets and prefix operators more than 256 (as clang's -fbracket-depth),
// which would exhaust its memory or its stack.
//
// Each generated package runs gen from its //go:generate line, which names
// it and nothing more:
//
//	//go:generate go run ../gen -pkg cublas
//
// make generate runs them all in one process instead, concurrently,
// parsing the headers of each package once for it and for the packages
// that use it:
//
//	go run ./gen -all .
//
// A run writes its files only once every package and major it generates
// has been generated, and then all or none: each to a temporary file
// beside it (.NAME.PID-N.gentmp, which Go's tools ignore), renamed over it
// once every one is complete. A run that fails writes nothing: not where a
// write fails (a full disk, a file size limit), nor where an output path is
// a directory, which gen finds before it writes. Killed, it leaves no file
// empty or cut short, only temporaries, which the next run removes.
//
// # Configuration
//
// A package's configuration is its section of gen/packages.txt, the one
// place that says what gen generates for it, whatever the CUDA major: the
// headers it binds, its names, its library, its guide and its library's
// facts. gen reads the gen/packages.txt of the current directory or the
// nearest directory above it that has one (-config names another file).
// Like the majors' data files (see CUDA majors), it is lines of a key and
// its values, separated by spaces, and a # that starts a word starts a
// comment. Paths are relative to the file. Its first line names the
// directory of the majors' data files; then each package's section runs
// from its package line to the next:
//
//	majors ../headers                  the directory of the majors' data files, cuda*.txt
//
//	package cublas                     the package's name, as -pkg names it
//	dir ../cublas                      its directory
//	include cublas_v2.h cublas_api.h   the headers whose functions it binds
//	types library_types.h              headers included for their types and constants only (cudart's)
//	prefix cublas CUBLAS_              the C name prefixes to drop (see Naming)
//	omit pnccl                         prefixes of the C names of declarations to leave out (nccl's)
//	error cublasStatus_t               the status type, whose values are errors
//	perthread MACRO                    see Per-thread default stream
//	lib GOCUDA_CUBLAS                  the variable that may name the library's path, by
//	                                   which each major's data file names its file
//	use cudart                         see Packages that use other packages
//	from nccl                          the key of the majors' headers lines whose directory
//	                                   it binds (nccl's; cuda by default)
//	guide URL TITLE...                 see Documentation
//	sections [FAMILY...]
//	calls [PKG...]                     its library's facts: see cgo annotations
//	callback REG CALL...|*
//	keeps FUNC...
//	stringarrays FUNC.PARAM...         see Functions
//	getattr FUNC ATTR VALUE [SIZE]     see Functions
//	setattr FUNC ATTR VALUE [SIZE]
//	getattrs FUNC ONE
//	headers DIR                        a header directory of its own instead of the majors'
//	handwritten cflags major tests symbols shim
//	                                   a hand-written package: see CUDA majors
//	procbase 12000                     with symbols: see CUDA majors
//	proc cuInit
//
// A generated package's section needs dir, include and lib; a hand-written
// package's has dir, handwritten and maybe from, procbase and proc, and no
// other key. callback, getattr, setattr, getattrs and proc may be given
// once for each function they name, every other key at most once. gen
// refuses a file that names an unknown key or a package twice, a section
// that lacks a key it needs, and a use or calls line that names no package
// of the file, saying where: the file, the line and the package.
//
// # CUDA majors
//
// The one place that names a CUDA version is its major's data file,
// headers/cuda13.txt or headers/cuda12.txt (the configuration's majors line
// names their directory): lines of a key and its values.
//
//	build !cuda12                     the build constraint of its files
//	suffix cuda13                     their names' suffix
//	version 13.0                      the headers' CUDA version
//	driver 580                        the oldest Linux driver release that runs it
//	headers cuda cuda-13.0            a header directory by key, relative to the file
//	headers nccl nccl-2.28.3          (a package's from line picks its own; cuda is the default)
//	lib GOCUDA_CUDART libcudart.so.13 a library's file name, by the variable of its package's lib line
//	funcs cudart 312                  the functions a package's coverage test counts
//	versions GOCUDA_CUSPARSE 12.6     a library numbered otherwise than CUDA: the first
//	                                  version this major ships and, if known, the next
//	                                  major's first (12.0 12.6 for CUDA 12)
//
// gen generates a package once for each major, each time from the major's
// header directory (with from nccl, NCCL's, and CUDA's on the include path
// too) and for its library file name, into files whose names carry the
// major's suffix and whose sources carry its build constraint:
// ztypes_cuda13.go builds by default, ztypes_cuda12.go with -tags cuda12,
// as golang.org/x/sys/unix keeps one set of files per platform. With no tag
// set exactly one major's constraint must hold, and with each tag the
// constraints name set alone at most one, or gen stops. A package whose
// section has a headers line (and lib ENV FILE, which names the library's
// file too), such as a golden test's, is generated once, from that
// directory, into files of the plain names, with no constraint.
//
// A hand-written package that needs the major gets small files instead, as
// its section's handwritten line names them: with cflags, zcflags_cuda13.go
// puts the major's CUDA headers on cgo's include path, for the package's C
// code (highlevel/internal/driver, nvtx); with major, zmajor_cuda13.go declares
// cudaMajor, MinDriver and releases, the versions lines (internal/dl); with
// tests, zversion_cuda13_test.go declares testCUDA and testHeaders for its
// tests (highlevel, bench); with symbols, zsymbols.h, a C header of no
// major, lists the driver functions the package's C calls through
// cuGetProcAddress, in the order of its proc lines, each with the version
// it asks for: that of its latest typedef in the major's cudaTypedefs.h and
// cudaProfilerTypedefs.h (PFN_cuMemAlloc_v3020) no later than procbase, or
// the first of a function that came after it (highlevel's shim.c). Every
// major must give the same list, or gen stops. With shim (and cflags),
// zshim.go, of no major either, binds the package's own C code declared in
// its shim.h, which gen parses with the major's CUDA headers on the include
// path, as cgo compiles it: a Go function for each function shim.h declares
// (hl_mem_info as MemInfo), with the C types of its parameters and result
// mapped to Go (int to int32, size_t to uintptr, void * to unsafe.Pointer, a
// pointer to a scalar or a struct to a Go pointer converted through
// unsafe.Pointer, a const char * result to a string); a Go type of the same
// layout for each struct (hl_dims as Dims), whose size is checked against
// C's at compile time; and a constant for each enumerator (HL_IN_CALLBACK as
// InCallback). A parameter keeps its C name, with _ appended where it is
// a Go keyword or a name the function's body uses (r, C, unsafe, _, the Go
// types of the mapping and of shim.h's structs). gen stops at a C type
// outside the mapping, naming the declaration and the type; at names that
// would give Go two of one name (fields r and R, parameters type and
// type_), none (hl_, a field _) or C, cgo's, naming shim.h's line; and
// where the majors would give different files (the driver's shim.h uses
// its own types alone).
//
// # Files
//
// In the output directory, each name with the major's suffix before .go or
// _test.go: ztypes.go (enums, structs, unions, typedefs), zconsts.go
// (#define constants), zfuncs.go (the functions), zlayout_test.go and
// internal/ctest/zlayout.go (the Go and C sides of the tests that compare
// layouts, values and symbols with C, run by internal/ccheck; the C side
// also asserts at compile time that each function's prototype in the
// headers is the one gen binds, so a wrong type fails the test's build),
// zloader.go: the library (lib), opened at run time by internal/dl, with
// Load, LibraryPath and, with perthread, UsePerThreadDefaultStream; and,
// for a major, zversion_test.go: what the major's data file says that the
// package's tests check (testCUDA, testHeaders, testLibrary, testFuncs).
// The #cgo CFLAGS of zfuncs.go hold for the whole package, so the
// package's hand-written cgo files include the major's headers too.
//
// # Platforms
//
// The packages are for linux/amd64 and linux/arm64, and gen writes one set
// of files for both (for each CUDA major). It parses each package with the
// host C compiler's predefined macros and include paths and with a
// platform's C ABI, which lays the types out and makes char signed (amd64)
// or unsigned (arm64): with linux/amd64's, whatever the machine gen runs
// on. The code is emitted from the model alone, and Go aligns alike on
// both platforms, so where arm64's C ABI gives the same model, the files
// are right for both. -check-targets proves it: gen then parses each
// package once for each platform (and major), fails where the models
// differ, naming the declarations that would differ (an enumerator or
// constant (char)255 is -1 on amd64 and 255 on arm64), and otherwise
// writes the same files and reports "the same code for linux/amd64 and
// linux/arm64". make generate parses for amd64 alone, in a third less
// time; make test checks, as golden's TestRegenerate runs gen -all
// -check-targets, so no committed file differs between the platforms. No
// CUDA header gives different code: they declare no long double, bit-field
// or va_list, and none of their C declarations depends on an architecture
// macro. make test also runs each package's layout tests on both platforms
// (arm64 cross-built, under qemu-user), comparing the one set of files with
// C as each platform's compiler sees the headers.
//
// # Naming
//
// A C name can be found in Go without searching:
//
//   - The first matching package prefix (prefix, longest first) is dropped
//     when what remains starts with a letter; the rest is kept as written,
//     with its first letter upper-cased: cudaMalloc -> Malloc,
//     cudaMemcpyHostToDevice -> MemcpyHostToDevice, CUDART_VERSION -> VERSION,
//     dim3 -> Dim3.
//   - Type names also drop a _t or _st suffix: cudaStream_t -> Stream.
//     A struct, union or enum defined in a typedef takes the typedef's name,
//     the one C code writes (typedef struct CUDA_MEMCPY2D_st {...}
//     CUDA_MEMCPY2D_v2 -> MEMCPY2D_v2); otherwise it is named by its tag,
//     also when the tag is defined inside another struct. Every other
//     typedef becomes a Go alias (CUDA_MEMCPY2D -> MEMCPY2D = MEMCPY2D_v2).
//     An anonymous type takes its typedef's name, or, nested, its parent's
//     name and its field's: cudaResourceDesc.res -> ResourceDescRes. An
//     anonymous struct member is embedded under the name <Parent>Anon<N>, so
//     its members are promoted as in C. The members of an anonymous union
//     are its parent's own, as in C: in a struct the first is a field and
//     the others are methods (see Types). So a field that a later header
//     moves into an anonymous union as its first member keeps its Go
//     spelling: CUmemLocation.id, a field in CUDA 13.0, the only member of
//     an anonymous union in 13.2 and the first of two in 13.4 (beside
//     localized), is loc.Id with each, in composite literals too, and
//     localized is loc.Localized().
//   - A function is named as C code calls it. That is the name the
//     header's declaration spells, before macros: cuMemAlloc, which the
//     header's macro turns into the symbol cuMemAlloc_v2, is MemAlloc and
//     calls cuMemAlloc_v2; a name declared with its version
//     (cuCtxGetDevice_v2) keeps it (CtxGetDevice_v2). Unless a macro of the
//     headers renames the declared name: cublas_api.h declares
//     cublasSgemm_v2 and cublas_v2.h defines cublasSgemm as cublasSgemm_v2,
//     so the function is Sgemm and calls cublasSgemm_v2 (and
//     cublasSgemm_64, defined as cublasSgemm_v2_64, is Sgemm_64).
//     A static inline function of the headers whose body only returns a
//     call is named for itself and calls its callee: nvJitLinkCreate, which
//     returns __nvJitLinkCreate_13_0(...), is Create and calls
//     __nvJitLinkCreate_13_0.
//   - Struct fields are exported by upper-casing their first letter.
//     Parameters keep their C names, with _ appended where a name is a Go
//     keyword or predeclared identifier (type -> type_, error -> error_).
//
// When a type and an enumerator map to one Go name, the enumerator keeps it
// and the type gets its kind appended: Struct, Union, Enum, or Type for a
// typedef. Any other two C names that map to one Go name are reported and the
// second is skipped, so a clash can never produce code that does not compile.
//
// # Documentation
//
// A declaration's doc comment is the comment right above it in the header:
// Doxygen's (/** */, /*! */), converted to Go doc text with links to the
// package's names, or a plain /* */ or // comment with no blank line between
// (nccl.h documents its functions so), unless it heads a group of
// declarations (cusolverDn.h's /* LU solve */) or is a banner. A function
// the header does not document names where the library's guide documents
// it (the package's guide line): "See the NVRTC guide:" and its URL, or,
// where the guide has a section per function (sections), that section:
// cublasSgemm's doc says "See cublas<t>gemm() in the cuBLAS Library guide"
// and links #cublas-t-gemm, <t> standing for the type letter after the
// prefix of a family the sections line names. A deprecation macro in a function's declaration, such as
// CUSPARSE_DEPRECATED, CUSPARSE_DEPRECATED_REPLACE_WITH(f) or
// __CUDA_DEPRECATED, or a deprecated attribute, becomes a Deprecated:
// paragraph, naming the replacement or giving the message where there is one.
//
// # Types
//
// C arithmetic types map to Go's of the same size (char -> byte, int ->
// int32, size_t -> uint64, ...). Enums are Go types with String; the status
// enum (error) also implements error. Structs are Go structs with C's size
// and field offsets, padded explicitly where Go would lay them out
// differently. A union is raw storage of its size with one accessor per
// member, a method that returns a pointer to it. An anonymous union in a
// struct is laid out in place: its first member is a field, the union's
// bytes past it an unexported field (== compares them), and each other
// member an accessor of the struct. When the first member holds a Go
// pointer and shares its bytes with others, it is an accessor too and the
// union all bytes, so that nothing stored through another member is taken
// for a pointer by the garbage collector. The other way round, a Go pointer
// stored through an accessor is an integer to the collector and to cgo's
// pointer check, so each accessor whose member holds a pointer (at any
// depth of its Go fields) has a setter beside it that pins what the
// member's pointers point to with a runtime.Pinner, or refuses them without
// one (ErrNoPinner): GraphNodeParams.SetMemcpy(v MEMCPY_NODE_PARAMS, p
// *runtime.Pinner) error (see pointers.go). A struct's own pointer fields
// need none: the collector and cgo see them. Handles (pointers to opaque
// structs) and function pointers are uintptr-based types: Go never
// dereferences them. void * is unsafe.Pointer; const char * parameters are
// Go strings. Integer constants are untyped, so that they convert to the
// parameter they are passed as, like C's.
//
// # Functions
//
// Each function calls, through a small C trampoline, the address of its
// symbol as looked up on first use. A function returning the status enum
// returns error; one returning void returns error, which is non-nil only when
// the library or symbol cannot be loaded; one returning another value returns
// it and such an error.
//
// A const char ** parameter whose pointee is not const is a string the call
// sets (cuGetErrorString's pStr): it is not a parameter in Go, and the
// string is copied and returned before the other results, "" where the
// call fails: cudadrv.GetErrorString(error_ Result) (string, error). An
// array of strings the call reads is const char *const * and stays a
// pointer; the few declared const char ** are listed in the package's
// stringarrays line.
//
// A function that writes a string into a buffer the caller gives, a char *
// followed by its length as an int, has a companion named String that
// makes the buffer and returns the string: cudadrv.DeviceGetNameString(len_
// int32, dev Device) (string, error).
//
// A handle typedef to a const struct is an alias of the package's handle
// typedef to the same struct (cudaArray_const_t: Array_const = Array), so
// that a handle passes where C takes it const.
//
// A static inline function of the package's headers that only fills a
// local struct from its parameters and returns it is written in Go, with
// no call into C: cudart.Make_cudaExtent(w uint64, h uint64, d uint64)
// Extent, from driver_functions.h (see makers.go).
//
// Every enum E has EValues, its values in header order, each once:
// cudadrv.ResultValues() []Result.
//
// A function that gets or sets an attribute's value through void * (its
// package's getattr or setattr line names it, and its parameters of the
// attribute, the value and the value's size, if any) has a generic
// companion named Of that takes or returns the value as a T, and refuses a
// T that does not fit the attribute's value type with a *ValueTypeError
// before the call:
// cudadrv.MemPoolGetAttributeOf[T any](pool MemoryPool, attr
// MemPool_attribute) (T, error). The value types come from the headers'
// "(value type = cuuint64_t)" comments, and for the attributes whose types
// the headers give only in prose from attrs.go's valueTypes; the
// attribute enum's ValueType method returns them (nil where none is known).
// The doc of a function that gets several attributes at once (getattrs)
// names the companion of the one that gets one.
//
// # cgo annotations
//
// A trampoline marked #cgo noescape and nocallback lets a pointer argument
// stay on the caller's stack: var v int32; f(&v) allocates nothing, where
// it otherwise moves v to the heap, one allocation per call. cgo
// uses noescape only together with nocallback, and nocallback alone only
// adds a check, so gen marks a trampoline with both or with neither. Both
// are promises about the C function, and a broken one crashes the program
// (nocallback: "function marked with #cgo nocallback called back into Go")
// or corrupts it (noescape), so gen makes them only where facts prove them,
// never from a function's name. The facts are data, in each package's
// section of gen/packages.txt: the calls that register a function of the
// program and the calls that may then run it before they return
// (callback cuLogsRegisterCallback *, * for every call; callback
// nvrtcSetFlowCallback nvrtcCompileProgram), the packages whose libraries
// the library calls into (calls cudart), and the calls that keep a pointer
// argument after they return (keeps). A function is marked when no
// registered function can run inside it, it keeps no pointer argument, it
// takes no function pointer, and it takes a pointer or a struct (else there
// is nothing to save). A package whose section has no calls line, which
// says that gen knows its library's facts (calls with no package: it calls
// into none), gets no mark. A function the facts name that a major's
// headers lack (CUDA 12.6 has no cuLogsRegisterCallback) is reported, and
// its facts still hold, as the library loaded at run time may have it; one
// that every major's headers lack is an error.
//
// Every library that reaches the driver may call back from any call: the
// driver calls the logger that cuLogsRegisterCallback registers when a call
// fails (its header does not say on which thread, so gen assumes the
// calling one), the runtime has its own (cudaLogsRegisterCallback), and
// cuBLAS, cuBLASLt, cuSPARSE and cuSOLVER call theirs
// (cublasSetLoggerCallback, ...) from inside their other calls. So none of
// cudart, cudadrv, cublas, cublaslt, cusolver, cusparse, cufft, curand and
// nccl is marked. Stream callbacks, host functions and user objects'
// destructors run on CUDA's threads, not inside a call. NVRTC and nvJitLink
// call no other library; NVRTC runs the function nvrtcSetFlowCallback
// registers inside nvrtcCompileProgram only. Their getters are marked.
//
// # Packages that use other packages
//
// The libraries' headers include the runtime's. With use cudart, gen
// parses cudart's headers as cudart's section says, and leaves out of the
// package everything declared in cudart's files: the package refers to
// cudart.Stream, cudart.DataType and cudart.CuComplex instead of declaring
// types of its own, so a stream of cudart or highlevel passes straight to
// cublas.SetStream. use takes several packages (cusolver uses cudart and
// cublas). types names headers whose types and constants the package
// declares without binding their functions (cudart's library_types.h and
// cuComplex.h); from nccl binds NCCL's header directory, with CUDA's on the
// include path, whose declarations are not the package's (NCCL's headers
// include CUDA's); omit leaves out the declarations whose C names start with
// one of its prefixes: functions, types with their enumerators, enumerators
// and constants (NCCL's pnccl profiling aliases, and ncclRedOp_dummy_t,
// which nccl.h declares only to take its size).
//
// # Per-thread default stream
//
// With perthread MACRO, gen parses the headers a second time with MACRO
// defined, as C code built for the per-thread default stream sees them, and
// records the symbol each function's declaration then names
// (cuMemcpyHtoD_v2_ptds). The package's library looks those up instead once
// UsePerThreadDefaultStream is called. The file internal/ctest/zperthread.go
// compiles the headers the same way, so TestSymbols checks both tables
// against the C preprocessor. A per-thread name that the headers define
// inline instead of exporting is reported; its function keeps the default
// symbol.
//
// At the end gen prints what it emitted, renamed and skipped, and why.
package main
