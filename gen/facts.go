package main

// libraryFacts are what gen knows about a library's calls beyond their
// prototypes, from its documentation: whether they may call into the
// program, and which keep a pointer argument after they return. They decide
// the cgo annotations (see annotate.go and the package doc).
type libraryFacts struct {
	// callbacks are the calls that register a function of the program,
	// each with the calls that may then run it before they return; "*"
	// stands for every call of the library, and of the libraries that call
	// into it (a logger: any call may log).
	callbacks map[string][]string
	// calls are the packages whose libraries this one calls into, so that
	// what their callbacks may run inside their calls they may run inside
	// this one's.
	calls []string
	// keeps are the calls that use a pointer argument after they return.
	// It is complete only for the libraries where it is needed: where no
	// callback can run inside every call. Elsewhere no call is annotated
	// whatever it keeps.
	keeps []string
	// stringArrays are the parameters, as "function.parameter", that the
	// headers declare const char ** but that the call reads, arrays of
	// strings, not strings it sets (see stringOut).
	stringArrays []string
}

// every stands, in libraryFacts.callbacks, for every call.
const every = "*"

// facts are the libraries' facts, by the name of their generated package.
// A package that is not here gets no annotation.
var facts = map[string]libraryFacts{
	// The driver calls the logger that cuLogsRegisterCallback registers
	// when a call fails (on which thread, the header does not say: the
	// calling one is assumed), so every library that reaches the driver
	// (all but the compilers) may call back from any call. Stream
	// callbacks, host functions and user objects' destructors run on CUDA's
	// own threads, never inside the call that queues or releases them, so
	// they add nothing here.
	"cudadrv":  {callbacks: map[string][]string{"cuLogsRegisterCallback": {every}}},
	"cudart":   {callbacks: map[string][]string{"cudaLogsRegisterCallback": {every}}, calls: []string{"cudadrv"}},
	"cublas":   {callbacks: map[string][]string{"cublasSetLoggerCallback": {every}}, calls: []string{"cudart"}},
	"cublaslt": {callbacks: map[string][]string{"cublasLtLoggerSetCallback": {every}}, calls: []string{"cudart"}},
	"cusparse": {callbacks: map[string][]string{"cusparseLoggerSetCallback": {every}}, calls: []string{"cudart"}},
	"cusolver": {
		callbacks: map[string][]string{"cusolverDnLoggerSetCallback": {every}},
		calls:     []string{"cudart", "cublas", "cublaslt", "cusparse"},
	},
	"cufft":  {calls: []string{"cudart"}}, // cufftXtSetCallback's callbacks are device code
	"curand": {calls: []string{"cudart"}},
	"nccl":   {calls: []string{"cudart"}},
	// NVRTC and nvJitLink compile and link on the host and call no other
	// library; NVRTC runs the function nvrtcSetFlowCallback registers during
	// nvrtcCompileProgram only.
	"nvrtc": {
		callbacks: map[string][]string{"nvrtcSetFlowCallback": {"nvrtcCompileProgram"}},
		keeps: []string{
			"nvrtcSetFlowCallback", // payload, passed to the callback
		},
	},
	"nvjitlink": {
		// The header does not say that the inputs are copied.
		keeps: []string{"nvJitLinkCreate", "nvJitLinkAddData"},
		// CUDA 12's nvJitLinkCreate takes its options as const char **
		// (13's inline wrapper calls a symbol that takes const char *const *).
		stringArrays: []string{"nvJitLinkCreate.options"},
	},
}

// callsBack returns the calls of package pkg, by C name, that may run a
// function of the program before they return, with every for all of them.
func callsBack(pkg string) map[string]bool {
	r := map[string]bool{}
	seen := map[string]bool{}
	var walk func(pkg string, own bool)
	walk = func(pkg string, own bool) {
		if seen[pkg] {
			return
		}
		seen[pkg] = true
		f := facts[pkg]
		for _, run := range f.callbacks {
			for _, c := range run {
				if c == every || own {
					r[c] = true
				}
			}
		}
		for _, u := range f.calls {
			walk(u, false)
		}
	}
	walk(pkg, true)
	return r
}
