// Package dl opens shared libraries at run time and resolves their symbols
// lazily, so that the CUDA bindings build without a CUDA toolkit and report a
// missing library or symbol as an error instead of failing to start.
//
// A Library is looked for in one of two ways. If its environment variable is
// set, the file it names is the only candidate: failing to open it, because it
// does not exist or is not a library, is the error, which names the variable,
// and no other copy of the library is tried. Otherwise the library's file name
// is handed to the system loader, which searches its path (LD_LIBRARY_PATH, the
// ldconfig cache), and then the lib64 and lib directories of $CUDA_PATH,
// $CUDA_HOME and /usr/local/cuda are tried, each path once. Path reports the
// file the loader actually opened.
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
}

func (e *LibraryError) Error() string {
	if e.Env != "" {
		return fmt.Sprintf("cannot load %s from $%s: %s", e.Name, e.Env, strings.Join(e.Tried, "; "))
	}
	return fmt.Sprintf("cannot load %s; tried:\n\t%s", e.Name, strings.Join(e.Tried, "\n\t"))
}

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
// opened on first use. If the environment variable env is set, the file it
// names is the only one tried, and failing to open it is the error. Otherwise
// the name is looked for in the system loader's search path (LD_LIBRARY_PATH,
// the ldconfig cache), then in the lib64 and lib directories of $CUDA_PATH,
// $CUDA_HOME and /usr/local/cuda.
func New(env, name string) *Library {
	return &Library{name: name, env: env}
}

// Candidates returns the paths Load tries, in order, each once: the file named
// by the environment variable alone if it is set, else the file name and then
// the CUDA directories.
func (l *Library) Candidates() []string {
	c, _ := l.candidates()
	return c
}

// candidates returns the paths to try and whether the environment variable
// named them.
func (l *Library) candidates() ([]string, bool) {
	if l.env != "" {
		if p := os.Getenv(l.env); p != "" {
			return []string{p}, true
		}
	}
	c := []string{l.name}
	add := func(p string) {
		for _, q := range c {
			if q == p {
				return
			}
		}
		c = append(c, p)
	}
	for _, root := range []string{os.Getenv("CUDA_PATH"), os.Getenv("CUDA_HOME"), "/usr/local/cuda"} {
		if root != "" {
			add(filepath.Join(root, "lib64", l.name))
			add(filepath.Join(root, "lib", l.name))
		}
	}
	return c, false
}

// Load opens the library if it is not open yet and reports whether that
// succeeded. The outcome of the first call is kept.
func (l *Library) Load() error {
	l.once.Do(l.load)
	return l.err
}

// Path returns the file the library was opened from, as the dynamic loader
// reports it (for a bare file name, where the loader's search found it), or ""
// if it is not open.
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
	paths, fromEnv := l.candidates()
	var tried []string
	for _, p := range paths {
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
	e := &LibraryError{Name: l.name, Tried: tried}
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
	defer C.free(unsafe.Pointer(msg))
	if p.addr == nil {
		// dlerror's message may start with the library's path.
		reason := strings.TrimPrefix(C.GoString(msg), p.lib.path+": ")
		p.err = &SymbolError{Symbol: name, Library: p.lib.path, Reason: reason}
	}
}
