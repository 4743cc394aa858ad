package highlevel

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"unsafe"

	"github.com/gocuda/cuda/highlevel/internal/driver"
	"github.com/gocuda/cuda/nvrtc"
)

// CompileOptions are the options of Compile. The zero value compiles to a
// CUBIN for DefaultDevice; Arch names another target.
type CompileOptions struct {
	// Name is the source's file name in the compiler's messages; the
	// default is "kernel.cu".
	Name string
	// Arch is the target: "sm_90" gives a CUBIN for compute capability 9.0,
	// "compute_90" PTX, which the driver compiles for any later device
	// too. Device.Arch gives a device's; the default is DefaultDevice's.
	Arch string
	// IncludePaths are searched by #include (-I), before the CUDA
	// toolkit's include directory, which is searched last where there is
	// one ($CUDA_HOME/include, $CUDA_PATH/include or
	// /usr/local/cuda/include), as CuPy does: for
	// cuda_device_runtime_api.h (cudaGraphSetConditional) and the
	// toolkit's other headers.
	IncludePaths []string
	// Defines are macros defined before the source (-D name=value; an
	// empty value defines name as 1).
	Defines map[string]string
	// NameExpressions are C++ names, such as "fill<float>", whose lowered
	// names Compiled.LoweredNames gives: template instances and functions
	// that are not extern "C".
	NameExpressions []string
	// Options are further NVRTC options as nvrtc takes them, such as
	// "--use_fast_math" or "-G".
	Options []string
}

// Compiled is device code compiled by Compile, to load with LoadModule. It
// is shared by the calls that Compile's cache answers: do not modify it.
type Compiled struct {
	Image []byte // a CUBIN, or PTX for a compute_ target
	Arch  string
	Log   string // the compiler's warnings, if any
	// LoweredNames maps each name expression to its lowered name, the
	// name to give Module.Kernel.
	LoweredNames map[string]string
}

// A CompileError is a failed compilation, with the compiler's log, which
// names the lines of the mistakes. It wraps NVRTC's status, such as
// nvrtc.ERROR_COMPILATION.
type CompileError struct {
	Name string
	Log  string
	Err  error
}

func (e *CompileError) Error() string {
	return fmt.Sprintf("%scompile %s: %v\n%s", prefix, e.Name, e.Err, strings.TrimSpace(e.Log))
}

func (e *CompileError) Unwrap() error { return e.Err }

// compileKey is what Compile's result depends on, NUL-separated lists
// included.
type compileKey struct{ source, name, arch, args, names string }

func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\x00")
}

// Compile compiles CUDA C++ source with NVRTC (libnvrtc.so.13, loaded at
// run time) for the target opts.Arch names, such as a device's:
//
//	arch, err := dev.Arch()
//	c, err := highlevel.Compile(source, &highlevel.CompileOptions{Arch: arch})
//
// opts may be nil: the target is then DefaultDevice's. Compiling for an
// explicit target concerns no device. Results are cached per source and
// options (and per default device, for the default target); ClearCaches
// empties the cache. A failed compilation returns a *CompileError holding
// the compiler's log.
func Compile(source string, opts *CompileOptions) (_ *Compiled, err error) {
	if opts == nil {
		opts = &CompileOptions{}
	}
	name := opts.Name
	if name == "" {
		name = "kernel.cu"
	}
	defer func() {
		var ce *CompileError
		if !errors.As(err, &ce) { // which names the operation
			wrap(&err, "compile", name)
		}
	}()
	var dev Device = -1 // no device: an explicit target
	arch := opts.Arch
	if arch == "" {
		d, err := DefaultDevice()
		if err != nil {
			return nil, err
		}
		a, err := d.Arch()
		if err != nil {
			return nil, err
		}
		dev, arch = d, a
	}
	if !strings.HasPrefix(arch, "sm_") && !strings.HasPrefix(arch, "compute_") {
		return nil, invalid("target %q is neither sm_XY nor compute_XY", arch)
	}
	args := []string{"--gpu-architecture=" + arch}
	for _, p := range opts.IncludePaths {
		args = append(args, "-I"+p)
	}
	if inc := cudaInclude(); inc != "" {
		args = append(args, "-I"+inc)
	}
	macros := make([]string, 0, len(opts.Defines))
	for m, v := range opts.Defines {
		if v != "" {
			m += "=" + v
		}
		macros = append(macros, "-D"+m)
	}
	sort.Strings(macros) // one cache key for one set of macros
	args = append(append(args, macros...), opts.Options...)
	for _, s := range append(append([]string{source, name}, args...), opts.NameExpressions...) {
		if strings.IndexByte(s, 0) >= 0 {
			return nil, invalid("NUL byte in the source or an option")
		}
	}
	return compiled.Get(dev, compileKey{source, name, arch, strings.Join(args, "\x00"), strings.Join(opts.NameExpressions, "\x00")})
}

// compile runs NVRTC once.
func compile(source, name, arch string, args, names []string) (_ *Compiled, err error) {
	var prog nvrtc.Program
	if err := nvrtc.CreateProgram(&prog, source, name, 0, nil, nil); err != nil {
		return nil, err
	}
	defer nvrtc.DestroyProgram(&prog)
	for _, n := range names {
		if err := nvrtc.AddNameExpression(prog, n); err != nil {
			return nil, fmt.Errorf("name expression %q: %w", n, err)
		}
	}
	copts := make([]*byte, len(args))
	for i, a := range args {
		copts[i] = driver.CString(a)
		defer driver.CFree(unsafe.Pointer(copts[i]))
	}
	cerr := nvrtc.CompileProgram(prog, int32(len(copts)), unsafe.SliceData(copts))
	log, err := programLog(prog)
	if err != nil {
		return nil, err
	}
	if cerr != nil {
		return nil, &CompileError{Name: name, Log: log, Err: cerr}
	}
	c := &Compiled{Arch: arch, Log: log, LoweredNames: map[string]string{}}
	if c.Image, err = programImage(prog, strings.HasPrefix(arch, "compute_")); err != nil {
		return nil, err
	}
	for _, n := range names {
		lowered, err := nvrtc.GetLoweredName(prog, n)
		if err != nil {
			return nil, fmt.Errorf("lowered name of %q: %w", n, err)
		}
		c.LoweredNames[n] = lowered
	}
	return c, nil
}

func programLog(prog nvrtc.Program) (string, error) {
	var n uint64
	if err := nvrtc.GetProgramLogSize(prog, &n); err != nil {
		return "", err
	}
	if n <= 1 {
		return "", nil
	}
	b := make([]byte, n)
	if err := nvrtc.GetProgramLog(prog, &b[0]); err != nil {
		return "", err
	}
	return strings.TrimRight(string(b), "\x00"), nil
}

func programImage(prog nvrtc.Program, ptx bool) ([]byte, error) {
	size, get := nvrtc.GetCUBINSize, nvrtc.GetCUBIN
	if ptx {
		size, get = nvrtc.GetPTXSize, nvrtc.GetPTX
	}
	var n uint64
	if err := size(prog, &n); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, errors.New("the compiler produced no code")
	}
	b := make([]byte, n)
	if err := get(prog, &b[0]); err != nil {
		return nil, err
	}
	return b, nil
}

// cudaInclude returns the CUDA toolkit's include directory, which Compile
// searches last: $CUDA_HOME/include, else $CUDA_PATH/include, else
// /usr/local/cuda/include, the first that holds cuda.h; "" where none
// does (NVRTC's built-in headers still serve).
var cudaInclude = sync.OnceValue(func() string {
	for _, dir := range []string{os.Getenv("CUDA_HOME"), os.Getenv("CUDA_PATH"), "/usr/local/cuda"} {
		if dir == "" {
			continue
		}
		inc := filepath.Join(dir, "include")
		if _, err := os.Stat(filepath.Join(inc, "cuda.h")); err == nil {
			return inc
		}
	}
	return ""
})
