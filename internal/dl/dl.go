// Package dl opens shared libraries at run time and resolves their symbols
// lazily, so that the CUDA bindings build without a CUDA toolkit and report a
// missing library or symbol as an error instead of failing to start.
//
// # Where a library is looked for
//
// If the library's environment variable is set, the file it names is the
// only candidate. It must be an absolute path; failing to open it, because it
// is relative, does not exist or is not a library, is the error, which names
// the variable, and no other copy of the library is tried.
//
// Otherwise, in this order, each path once, the first that opens wins:
//
//  1. the file name, given to the system loader, which searches its path
//     (LD_LIBRARY_PATH, the ldconfig cache, /lib and /usr/lib). If an empty
//     or relative entry of LD_LIBRARY_PATH would make it take the library
//     from the working directory, the loader is not asked, and the absolute
//     entries of LD_LIBRARY_PATH are searched instead, then the paths the
//     loader's cache (/etc/ld.so.cache) gives for the name, the directories
//     of the loader's configuration (/etc/ld.so.conf and its includes) and
//     its trusted ones (/lib/<multiarch>, /usr/lib/<multiarch>, /lib64,
//     /usr/lib64, /lib, /usr/lib);
//  2. the active virtualenv's NVIDIA wheels: nvidia/cuX/lib, X being the
//     CUDA major the bindings are built for (cudaMajor), then the
//     library's own wheel's directory (nvidia/cuda_runtime/lib,
//     nvidia/cublas/lib, nvidia/nccl/lib, ...), in
//     $VIRTUAL_ENV/lib/python3.N/site-packages, the newest Python first;
//     then the same for the environment of the first python3 on $PATH (a
//     virtualenv whose bin is on the path without being activated);
//  3. the active conda environment: $CONDA_PREFIX/lib, then the NVIDIA wheels
//     in its site-packages;
//  4. the CUDA toolkits: lib64 and lib of $CUDA_PATH, of $CUDA_HOME, of
//     /usr/local/cuda (unless it links to a toolkit of another major), of
//     /usr/local/cuda-X and of each /usr/local/cuda-X.Y, the newest first;
//  5. the NVIDIA wheels of Python installations found without running Python:
//     the user's ($PYTHONUSERBASE, else ~/.local), then the system's
//     (/usr/local/lib/python3.N/dist-packages and site-packages).
//
// The driver's libraries (libcuda.so.1) come with the driver, not with a
// toolkit or a wheel (a toolkit has only a stub to link against), so they
// are looked for only by the system loader (1) and then in WSL's
// /usr/lib/wsl/lib.
//
// Before a file is given to the loader, it is checked: a file that is not a
// regular one (a named pipe would block the loader), not an ELF shared
// object of this process's class and machine, or truncated (the loader would
// map its segments past the end of the file, and the process die of SIGBUS)
// is refused with the reason, and the search goes on. So is a file that
// needs (DT_NEEDED) a library which the loader would open from the file's
// own directories, where the file there fails those checks or cannot be
// read: the directories of its DT_RUNPATH or, where it has none, of its
// DT_RPATH and of those of the libraries that need it, $ORIGIN expanded
// (NVIDIA's libraries find theirs beside them through $ORIGIN), and the same
// for each library it needs, in turn; the reason, a *DependencyError, names
// the broken file, the library that needs it and what is wrong, and nothing
// of the file is opened. A dependency that the loader finds elsewhere first
// (LD_LIBRARY_PATH comes before DT_RUNPATH) is left to it, and a file of
// another class or machine is passed over, as the loader passes over it. The
// libraries a file needs that sit beside it, or in its own directories, are
// opened first, by absolute path, so that the loader does not look for them
// elsewhere (the working directory, for an empty entry of LD_LIBRARY_PATH).
// Where such an entry holds a file named as a dependency that is not beside
// it and not open yet, the dependency is looked for where the loader looks
// after that entry and opened first from there; found nowhere else, the file
// is refused with that reason.
//
// Only absolute paths are tried: a variable that holds a relative path is
// not searched (the error lists it as such), and nothing is looked for in
// the working directory. Toolkit and wheel directories of another CUDA major
// (/usr/local/cuda-12.6 and nvidia/cu12/lib for CUDA 13) are not searched. The loader's
// path is the user's explicit choice and comes first; an environment the
// user activated comes before the system-wide toolkits; Python installations
// that are not active come last, as their wheels are often only some other
// package's dependencies. A library that is already open in the process
// (dlopen by another component) is used again when found by the same name or
// path. Path reports the file the loader actually opened; a *LibraryError
// lists every place tried, in order, with the reason each failed.
package dl

/*
#cgo LDFLAGS: -ldl
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>

// gocuda_dlopen opens name. On success *path is the file the loader opened;
// on failure *msg is dlerror's text, copied here before another dl call can
// replace it. The caller frees both; either may be NULL.
static void *gocuda_dlopen(const char *name, char **path, char **msg) {
	*path = NULL;
	*msg = NULL;
	void *h = dlopen(name, RTLD_NOW | RTLD_GLOBAL);
	if (h == NULL) {
		const char *e = dlerror();
		*msg = strdup(e != NULL ? e : "dlopen failed");
		return NULL;
	}
	struct link_map *lm = NULL;
	if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm != NULL && lm->l_name != NULL) {
		*path = strdup(lm->l_name);
	}
	return h;
}

// gocuda_names collects the names of the objects loaded, each followed by
// a newline.
struct gocuda_names {
	char *buf;
	size_t len, cap;
};

static int gocuda_name(struct dl_phdr_info *info, size_t size, void *data) {
	struct gocuda_names *n = data;
	const char *s = info->dlpi_name;
	if (s == NULL || *s == 0) {
		return 0;
	}
	size_t l = strlen(s);
	if (n->len + l + 2 > n->cap) {
		size_t c = (n->cap + l + 2) * 2;
		char *b = realloc(n->buf, c);
		if (b == NULL) {
			return 1;
		}
		n->buf = b;
		n->cap = c;
	}
	memcpy(n->buf + n->len, s, l);
	n->len += l;
	n->buf[n->len++] = '\n';
	n->buf[n->len] = 0;
	return 0;
}

// gocuda_loaded returns the paths of the objects loaded in the process, each
// followed by a newline, for the caller to free; NULL if there are none.
static char *gocuda_loaded(void) {
	struct gocuda_names n = {0};
	dl_iterate_phdr(gocuda_name, &n);
	return n.buf;
}

// gocuda_dlsym looks up name in h. On failure *msg is dlerror's text, copied
// as in gocuda_dlopen, for the caller to free.
static void *gocuda_dlsym(void *h, const char *name, char **msg) {
	*msg = NULL;
	dlerror();
	void *p = dlsym(h, name);
	if (p == NULL) {
		const char *e = dlerror();
		*msg = strdup(e != NULL ? e : "symbol resolves to NULL");
	}
	return p;
}
*/
import "C"

import (
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"unsafe"
)

// LibraryError reports that a shared library could not be opened. Tried lists
// every place looked at, in order, with the loader's reason for each.
type LibraryError struct {
	Name  string   // the library's file name, such as libcudart.so.13
	Env   string   // the environment variable that named the only file tried, or ""
	Tried []string // "path: reason" for each attempt
	// Override is the environment variable that names the file to load
	// instead of searching, such as GOCUDA_CUDART; the message says to set
	// it where it was not set.
	Override string

	errs []error // the errors behind the tries that have one, in order
}

func (e *LibraryError) Error() string {
	if e.Env != "" {
		return fmt.Sprintf("cannot load %s from $%s: %s", e.Name, e.Env, strings.Join(e.Tried, "; "))
	}
	set := ""
	if e.Override != "" {
		set = " (set $" + e.Override + " to its path)"
	}
	return fmt.Sprintf("cannot load %s%s; tried:\n\t%s", e.Name, set, strings.Join(e.Tried, "\n\t"))
}

// Unwrap returns the errors behind the tries that have one: a
// *DependencyError for a file refused because a library it needs is
// broken where the loader would open it.
func (e *LibraryError) Unwrap() []error { return e.errs }

// MajorError reports that a library reports another CUDA major than the
// bindings are built for: the structures the two share differ between
// majors (cudaDeviceProp is 1032 bytes in CUDA 12.6 and 1008 in 13.0), so
// none of its functions is called.
type MajorError struct {
	Name  string // the library's file name, such as libcudart.so.13
	Path  string // the file loaded
	Found string // the version it reports: a CUDA version, such as "12.6", or, where Versions is set, its own, such as "12.5.4"
	Want  int    // the CUDA major the bindings are built for
	// Versions is set for a library numbered otherwise than CUDA (cuSPARSE
	// 12.5.4 ships with CUDA 12.6, 12.6.3 with 13.0): the versions of it
	// that the releases of CUDA Want ship, such as "12.6.0 or newer".
	Versions string
}

func (e *MajorError) Error() string {
	if e.Versions != "" {
		return fmt.Sprintf("%s at %s is version %s, and these bindings are built for CUDA %d, whose %s is %s: load a CUDA %d copy",
			e.Name, e.Path, e.Found, e.Want, e.Name, e.Versions, e.Want)
	}
	return fmt.Sprintf("%s at %s is CUDA %s, and these bindings are built for CUDA %d: load a CUDA %d copy",
		e.Name, e.Path, e.Found, e.Want, e.Want)
}

// Name returns the library's file name, such as libcudart.so.13.
func (l *Library) Name() string { return l.name }

// SymbolError reports that an opened library lacks a function, typically
// because the installed library is older than the headers.
type SymbolError struct {
	Symbol  string // the C function name
	Library string // the file the library was opened from
	Reason  string // the loader's message
}

func (e *SymbolError) Error() string {
	return fmt.Sprintf("%s: symbol %s not found: %s", e.Library, e.Symbol, e.Reason)
}

// Library is a shared library opened on first use.
type Library struct {
	name string // file name to look for
	env  string // environment variable that may name the file

	mu        sync.Mutex
	started   bool // Load has begun: the symbol choice and check are fixed
	perThread bool // look up the per-thread default stream variants
	check     func() error
	exempt    map[string]bool // functions used without the check

	once sync.Once // opens the library
	h    unsafe.Pointer
	path string
	err  error

	checkOnce sync.Once // runs check
	checkErr  error
}

// UsePerThreadDefaultStream makes procedures that have a per-thread default
// stream variant look that variant up instead (see PerThreadProc). It must be
// called before the library is loaded, so that every procedure agrees; after
// that it returns an error.
func (l *Library) UsePerThreadDefaultStream() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.started {
		return fmt.Errorf("%s: the per-thread default stream must be chosen before the library is loaded", l.name)
	}
	l.perThread = true
	return nil
}

// SetCheck makes the library's first use run check once, after the library
// is opened and before any of its functions other than exempt (C names) is
// looked up: if check returns an error, Load and those functions' Addr
// return it. check may use Lookup, not Proc. It must be called before the
// library is loaded; after that it returns an error and changes nothing.
func (l *Library) SetCheck(check func() error, exempt ...string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.started {
		return fmt.Errorf("%s: the check must be set before the library is loaded", l.name)
	}
	l.check = check
	l.exempt = make(map[string]bool, len(exempt))
	for _, e := range exempt {
		l.exempt[e] = true
	}
	return nil
}

// New returns a Library for the file name, such as "libcudart.so.13". It is
// opened on first use, from the places, and in the order, that the package
// documentation lists.
func New(env, name string) *Library {
	return &Library{name: name, env: env}
}

// Candidates returns the paths Load tries, in order, each once: the file named
// by the environment variable alone if it is set (and absolute), else the
// file name for the system loader and then the absolute paths of the
// library in the places the package documentation lists.
func (l *Library) Candidates() []string {
	c, _ := l.candidates()
	var paths []string
	for _, c := range c {
		if c.skip == "" {
			paths = append(paths, c.path)
		}
	}
	return paths
}

// candidates returns the places to look and whether the environment
// variable named the only one.
func (l *Library) candidates() ([]candidate, bool) {
	if l.env != "" {
		if p := os.Getenv(l.env); p != "" {
			if !filepath.IsAbs(p) {
				return []candidate{{path: p, skip: "not an absolute path"}}, true
			}
			return []candidate{{path: p}}, true
		}
	}
	return find(l.name), false
}

// Load opens the library if it is not open yet, runs its check (see
// SetCheck) the first time, and reports whether both succeeded. The outcome
// of the first call is kept.
func (l *Library) Load() error {
	if err := l.open(); err != nil {
		return err
	}
	if l.check != nil {
		l.checkOnce.Do(func() { l.checkErr = l.check() })
	}
	return l.checkErr
}

// open opens the library once and reports whether that succeeded.
func (l *Library) open() error {
	l.once.Do(l.load)
	return l.err
}

// Path returns the file the library was opened from, as the dynamic loader
// reports it (for a bare file name, where the loader's search found it), or ""
// if it could not be opened.
func (l *Library) Path() string {
	if l.open() != nil {
		return ""
	}
	return l.path
}

func (l *Library) load() {
	l.mu.Lock()
	l.started = true
	l.mu.Unlock()
	cands, fromEnv := l.candidates()
	var (
		tried []string
		errs  []error
	)
	for _, c := range cands {
		if c.skip != "" {
			tried = append(tried, c.path+": "+c.skip)
			continue
		}
		p := c.path
		if filepath.IsAbs(p) {
			if why := checkFile(p); why != "" {
				tried = append(tried, p+": "+why)
				continue
			}
			if err := openNeeded(p); err != nil {
				why := err.Error()
				if de, ok := err.(*DependencyError); ok && de.Library == p {
					why = de.needs()
				}
				tried = append(tried, p+": "+why)
				errs = append(errs, err)
				continue
			}
		}
		h, opened, msg := dlopen(p)
		if h != nil {
			l.h, l.path = h, opened
			if l.path == "" {
				l.path = p
			}
			if abs, err := filepath.Abs(l.path); err == nil {
				l.path = abs
			}
			return
		}
		// dlerror's message starts with the path already.
		tried = append(tried, p+": "+strings.TrimPrefix(msg, p+": "))
	}
	e := &LibraryError{Name: l.name, Tried: tried, Override: l.env, errs: errs}
	if fromEnv {
		e.Env = l.env
	}
	l.err = e
}

// dlopen opens name and returns its handle and the file the loader opened, or
// a nil handle and dlerror's text.
func dlopen(name string) (h unsafe.Pointer, path, msg string) {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	var cpath, cmsg *C.char
	h = C.gocuda_dlopen(cs, &cpath, &cmsg)
	path, msg = C.GoString(cpath), C.GoString(cmsg)
	C.free(unsafe.Pointer(cpath))
	C.free(unsafe.Pointer(cmsg))
	return h, path, msg
}

// loadedNames returns the names by which the loader finds the libraries
// open in the process: each one's file name and its DT_SONAME.
func loadedNames() map[string]bool {
	c := C.gocuda_loaded()
	list := C.GoString(c)
	C.free(unsafe.Pointer(c))
	names := map[string]bool{}
	for _, p := range strings.Split(list, "\n") {
		if p == "" {
			continue
		}
		names[filepath.Base(p)] = true
		if f, err := elf.Open(p); err == nil {
			if soname, _ := f.DynString(elf.DT_SONAME); len(soname) > 0 {
				names[soname[0]] = true
			}
			f.Close()
		}
	}
	return names
}

// Proc is a function of a Library, looked up on first use.
type Proc struct {
	lib       *Library
	name      string
	perThread string // the per-thread default stream variant, or ""

	once sync.Once
	addr unsafe.Pointer
	err  error
}

// Proc returns the function named symbol. Nothing is looked up until Addr.
func (l *Library) Proc(symbol string) *Proc {
	return &Proc{lib: l, name: symbol}
}

// PerThreadProc returns the function named symbol, whose per-thread default
// stream variant is named perThread (cuMemcpy and cuMemcpy_ptds): Addr looks
// that up instead if UsePerThreadDefaultStream was called.
func (l *Library) PerThreadProc(symbol, perThread string) *Proc {
	return &Proc{lib: l, name: symbol, perThread: perThread}
}

// Name returns the symbol's name.
func (p *Proc) Name() string { return p.name }

// PerThreadName returns the name of the per-thread default stream variant,
// or "" if there is none.
func (p *Proc) PerThreadName() string { return p.perThread }

// Addr returns the function's address, opening the library if needed. The
// error is a *LibraryError or a *SymbolError.
func (p *Proc) Addr() (unsafe.Pointer, error) {
	p.once.Do(p.find)
	return p.addr, p.err
}

func (p *Proc) find() {
	if err := p.lib.open(); err != nil {
		p.err = err
		return
	}
	if !p.lib.exempt[p.name] {
		if err := p.lib.Load(); err != nil {
			p.err = err
			return
		}
	}
	name := p.name
	if p.lib.perThread && p.perThread != "" {
		name = p.perThread
	}
	p.addr, p.err = p.lib.dlsym(name)
}

// Lookup returns the address of the library's function named symbol,
// opening the library if needed but without its check (see SetCheck). The
// error is a *LibraryError or a *SymbolError.
func (l *Library) Lookup(symbol string) (unsafe.Pointer, error) {
	if err := l.open(); err != nil {
		return nil, err
	}
	return l.dlsym(symbol)
}

// dlsym looks up symbol in the open library.
func (l *Library) dlsym(symbol string) (unsafe.Pointer, error) {
	cs := C.CString(symbol)
	defer C.free(unsafe.Pointer(cs))
	var msg *C.char
	addr := C.gocuda_dlsym(l.h, cs, &msg)
	defer C.free(unsafe.Pointer(msg))
	if addr == nil {
		// dlerror's message may start with the library's path.
		reason := strings.TrimPrefix(C.GoString(msg), l.path+": ")
		return nil, &SymbolError{Symbol: symbol, Library: l.path, Reason: reason}
	}
	return addr, nil
}
