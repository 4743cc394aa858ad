// Package dl opens shared libraries at run time and resolves their symbols
// lazily, so that the CUDA bindings build without a CUDA toolkit and report a
// missing library or symbol as an error instead of failing to start.
package dl

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>

static void *gocuda_dlopen(const char *name, char **msg) {
	void *h = dlopen(name, RTLD_NOW | RTLD_GLOBAL);
	if (h == NULL) {
		*msg = dlerror();
	}
	return h;
}

static void *gocuda_dlsym(void *h, const char *name, char **msg) {
	dlerror();
	void *p = dlsym(h, name);
	if (p == NULL) {
		*msg = dlerror();
	}
	return p;
}
*/
import "C"

import (
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
	Tried []string // "path: reason" for each attempt
}

func (e *LibraryError) Error() string {
	return fmt.Sprintf("cannot load %s; tried:\n\t%s", e.Name, strings.Join(e.Tried, "\n\t"))
}

// SymbolError reports that an opened library lacks a function, typically
// because the installed library is older than the headers.
type SymbolError struct {
	Symbol  string // the C function name
	Library string // the path the library was opened from
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
	started   bool // Load has begun: the symbol choice is fixed
	perThread bool // look up the per-thread default stream variants

	once sync.Once
	h    unsafe.Pointer
	path string
	err  error
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

// New returns a Library for the file name, such as "libcudart.so.13". It is
// opened on first use, searching in this order: the file named by the
// environment variable env (if set); the system loader's search path
// (LD_LIBRARY_PATH, the ldconfig cache); then the lib64 and lib directories of
// $CUDA_PATH, $CUDA_HOME and /usr/local/cuda.
func New(env, name string) *Library {
	return &Library{name: name, env: env}
}

// Candidates returns the paths Load tries, in order.
func (l *Library) Candidates() []string {
	var c []string
	if l.env != "" {
		if p := os.Getenv(l.env); p != "" {
			c = append(c, p)
		}
	}
	c = append(c, l.name)
	for _, root := range []string{os.Getenv("CUDA_PATH"), os.Getenv("CUDA_HOME"), "/usr/local/cuda"} {
		if root != "" {
			c = append(c, filepath.Join(root, "lib64", l.name), filepath.Join(root, "lib", l.name))
		}
	}
	return c
}

// Load opens the library if it is not open yet and reports whether that
// succeeded. The outcome of the first call is kept.
func (l *Library) Load() error {
	l.once.Do(l.load)
	return l.err
}

// Path returns the path the library was opened from, or "" if it is not open.
func (l *Library) Path() string {
	if l.Load() != nil {
		return ""
	}
	return l.path
}

func (l *Library) load() {
	l.mu.Lock()
	l.started = true
	l.mu.Unlock()
	var tried []string
	for _, p := range l.Candidates() {
		cs := C.CString(p)
		var msg *C.char
		h := C.gocuda_dlopen(cs, &msg)
		C.free(unsafe.Pointer(cs))
		if h != nil {
			l.h, l.path = h, p
			return
		}
		// dlerror's message starts with the path already.
		tried = append(tried, p+": "+strings.TrimPrefix(C.GoString(msg), p+": "))
	}
	l.err = &LibraryError{Name: l.name, Tried: tried}
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
	if err := p.lib.Load(); err != nil {
		p.err = err
		return
	}
	name := p.name
	if p.lib.perThread && p.perThread != "" {
		name = p.perThread
	}
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	var msg *C.char
	p.addr = C.gocuda_dlsym(p.lib.h, cs, &msg)
	if p.addr == nil {
		p.err = &SymbolError{Symbol: name, Library: p.lib.path, Reason: C.GoString(msg)}
	}
}
