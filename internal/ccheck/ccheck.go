// Package ccheck compares generated Go bindings with C's view of the same
// headers: the layout, value and symbol tests that gen emits call it with a
// Go table and the table the C compiler produced (package internal/ctest of
// each binding). It also holds the checks every binding's own tests make:
// that its status values are errors named as in C, that a missing library
// is an error listing where it was looked for, and that every function the
// header declares is bound.
package ccheck

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/gocuda/cuda/internal/dl"
)

// Size is a type's size and alignment.
type Size struct {
	Name        string
	Size, Align uintptr
}

// Offset is a field's offset, named Type.Field.
type Offset struct {
	Name   string
	Offset uintptr
}

// Value is an enumerator's or integer constant's value.
type Value struct {
	Name  string
	Value int64
}

// Symbol is a function's C name and the procedure that calls it.
type Symbol struct {
	Name string
	Proc *dl.Proc
}

// Layout checks every Go type's size and alignment and every field's offset
// against C's, and that both sides list the same number of each.
func Layout(t *testing.T, sizes []Size, cSizes map[string][2]uintptr, offsets []Offset, cOffsets map[string]uintptr) {
	t.Helper()
	if len(cSizes) != len(sizes) {
		t.Errorf("C has %d types, Go %d", len(cSizes), len(sizes))
	}
	for _, g := range sizes {
		want, ok := cSizes[g.Name]
		switch {
		case !ok:
			t.Errorf("%s: C does not know it", g.Name)
		case g.Size != want[0]:
			t.Errorf("%s: size %d, C %d", g.Name, g.Size, want[0])
		case g.Align != want[1] && !(want[1] > 8 && g.Align == 8):
			// Go aligns nothing beyond 8 bytes; the generated doc says so.
			t.Errorf("%s: alignment %d, C %d", g.Name, g.Align, want[1])
		}
	}
	if len(cOffsets) != len(offsets) {
		t.Errorf("C has %d field offsets, Go %d", len(cOffsets), len(offsets))
	}
	for _, g := range offsets {
		if want, ok := cOffsets[g.Name]; !ok || g.Offset != want {
			t.Errorf("%s: offset %d, C %d (known to C: %v)", g.Name, g.Offset, want, ok)
		}
	}
}

// Values checks every enumerator and integer constant against C's.
func Values(t *testing.T, values []Value, cValues map[string]int64) {
	t.Helper()
	if len(cValues) != len(values) {
		t.Errorf("C has %d values, Go %d", len(cValues), len(values))
	}
	for _, g := range values {
		if want, ok := cValues[g.Name]; !ok || g.Value != want {
			t.Errorf("%s = %d, C %d (known to C: %v)", g.Name, g.Value, want, ok)
		}
	}
}

// Symbols checks that each function looks up the symbol that C code
// compiled against the headers calls: cSymbols gives C's by C name, and
// cPerThread C's when compiled for the per-thread default stream (nil when
// the package has no such option). A per-thread name that the headers
// define inline (listed in wrappers) is not a library symbol: the function
// keeps the default one.
func Symbols(t *testing.T, symbols []Symbol, cSymbols, cPerThread map[string]string, wrappers []string) {
	t.Helper()
	if len(cSymbols) != len(symbols) {
		t.Errorf("C has %d functions, Go %d", len(cSymbols), len(symbols))
	}
	inline := map[string]bool{}
	for _, w := range wrappers {
		inline[w] = true
	}
	for _, g := range symbols {
		if want := cSymbols[g.Name]; g.Proc.Name() != want {
			t.Errorf("%s: looks up %s, C calls %q", g.Name, g.Proc.Name(), want)
		}
		if cPerThread == nil {
			if g.Proc.PerThreadName() != "" {
				t.Errorf("%s: has per-thread symbol %s, but the package has no per-thread option", g.Name, g.Proc.PerThreadName())
			}
			continue
		}
		got, want := g.Proc.PerThreadName(), cPerThread[g.Name]
		if got == "" {
			got = g.Proc.Name()
		}
		if got != want && !(inline[want] && got == g.Proc.Name()) {
			t.Errorf("%s: looks up %s for the per-thread default stream, C calls %q", g.Name, got, want)
		}
	}
}

// Coverage checks, independently of the generator's C parser, that the
// functions bound (symbols) are exactly those the header text declares for C
// callers: each match of declared, its first group the declared name. Code
// that only C++ compiles (#if defined(__cplusplus) ... #endif) is left out. A
// macro of the header that renames a declared function gives the name C code
// calls, and the symbol that name must call: cublas_v2.h's #define
// cublasSgemm cublasSgemm_v2 renames the declared cublasSgemm_v2, and a macro
// that renames a declared name to an undeclared one gives the declared
// name's symbol. unbound lists the declared names left unbound
// on purpose, each with the reason. want is the number of functions the
// header declares, so that a regular expression that stops matching fails.
func Coverage(t *testing.T, symbols []Symbol, text string, declared *regexp.Regexp, want int, unbound map[string]string) {
	t.Helper()
	text = WithoutCPlusPlus(text)
	called := map[string]string{} // name C code calls -> symbol
	for _, m := range declared.FindAllStringSubmatch(text, -1) {
		called[m[1]] = m[1]
	}
	if len(called) != want {
		t.Errorf("the header declares %d functions, want %d", len(called), want)
	}
	for _, m := range renames.FindAllStringSubmatch(text, -1) {
		from, to := m[1], m[2]+m[3]
		_, toDeclared := called[to]
		_, fromDeclared := called[from]
		switch {
		case from == to:
		case toDeclared:
			// cublas_v2.h: #define cublasSgemm cublasSgemm_v2, which
			// cublas_api.h declares.
			delete(called, to)
			called[from] = to
		case fromDeclared:
			// CUDA 12.6's cuda_runtime_api.h: #define
			// cudaGetDeviceProperties cudaGetDeviceProperties_v2, the
			// symbol of the function it declares as cudaGetDeviceProperties.
			called[from] = to
		}
	}
	for name, why := range unbound {
		if _, ok := called[name]; !ok {
			t.Errorf("%s is listed as unbound (%s) but not declared", name, why)
		}
		delete(called, name)
	}
	for _, s := range symbols {
		sym, ok := called[s.Name]
		switch {
		case !ok:
			t.Errorf("%s is bound but not declared", s.Name)
		case s.Proc.Name() != sym:
			t.Errorf("%s calls %s; C code calls %s", s.Name, s.Proc.Name(), sym)
		}
		delete(called, s.Name)
	}
	for name := range called {
		t.Errorf("%s is declared but not bound", name)
	}
}

// renames matches an object-like macro that is one identifier, or one
// identifier in a macro that picks its per-thread variant
// (cuda_runtime_api.h's #define cudaStreamGetCaptureInfo
// __CUDART_API_PTSZ(cudaStreamGetCaptureInfo_v2)).
var renames = regexp.MustCompile(`(?m)^\s*#\s*define\s+(\w+)\s+(?:__CUDART_API_PT(?:DS|SZ)\((\w+)\)|(\w+))\s*$`)

// WithoutCPlusPlus returns C header text without the blocks that only C++
// compiles: #if defined(__cplusplus) or #ifdef __cplusplus up to its #else
// or #endif.
func WithoutCPlusPlus(text string) string {
	return without(text, func(d []string) bool {
		return d[1] == "ifdef" && len(d) > 2 && d[2] == "__cplusplus" ||
			d[1] == "if" && len(d) == 3 && (d[2] == "defined(__cplusplus)" || d[2] == "__cplusplus")
	})
}

// WithoutInternal returns C header text without the blocks for the
// library's own build, #if defined(__CUDA_API_VERSION_INTERNAL) up to its
// #else, #elif or #endif, which declare retired versions of functions
// under the names callers use.
func WithoutInternal(text string) string {
	return without(text, func(d []string) bool {
		return d[1] == "if" && len(d) == 3 && d[2] == "defined(__CUDA_API_VERSION_INTERNAL)"
	})
}

// without returns C header text without the blocks that start with a
// directive skip matches (given the directive's words, "#" first), up to
// their #else, #elif or #endif.
func without(text string, skip func(directive []string) bool) string {
	lines := strings.Split(text, "\n")
	out := lines[:0]
	depth := 0 // nesting inside a skipped block; 0: not skipping
	for _, l := range lines {
		d := strings.Fields(strings.ReplaceAll(strings.TrimSpace(l), "#", "# "))
		directive := ""
		if len(d) > 1 && d[0] == "#" {
			directive = d[1]
		}
		if depth == 0 {
			if directive != "" && skip(d) {
				depth = 1
				continue
			}
			out = append(out, l)
			continue
		}
		switch directive {
		case "if", "ifdef", "ifndef":
			depth++
		case "endif":
			depth--
		case "else", "elif":
			if depth == 1 {
				depth = 0 // the other side; its #endif is kept as a line
			}
		}
	}
	return strings.Join(out, "\n")
}

// Header returns the text of the header files at paths, one after another,
// as a caller sees them (WithoutInternal), or skips the test when one
// cannot be read (the test binary runs away from the source tree).
func Header(t *testing.T, paths ...string) string {
	t.Helper()
	var b strings.Builder
	for _, p := range paths {
		src, err := os.ReadFile(p)
		if err != nil {
			t.Skipf("headers not here: %v", err)
		}
		b.Write(src)
		b.WriteByte('\n')
	}
	return WithoutInternal(b.String())
}

// StatusError checks status, a value of a binding's status type, as an
// error: wrapped, errors.Is finds it and not other, and its text begins
// with name, the C name of the status.
func StatusError(t *testing.T, status, other error, name string) {
	t.Helper()
	err := fmt.Errorf("calling: %w", status)
	if !errors.Is(err, status) || errors.Is(err, other) {
		t.Errorf("errors.Is does not tell %v apart", err)
	}
	if !strings.HasPrefix(err.Error(), "calling: "+name) {
		t.Errorf("error text %q does not name the status", err)
	}
}

// NoLibrary checks what a machine without the library file sees: call,
// which calls the library's function fn, returns a *dl.LibraryError that
// lists a toolkit's lib64/file among the paths tried (/usr/local/cuda's, or
// /usr/local/cuda-N's where /usr/local/cuda is a toolkit of another major).
// Where load finds the library, at path, it skips the test.
func NoLibrary(t *testing.T, load func() error, path func() string, file, fn string, call func() error) {
	t.Helper()
	if load() == nil {
		t.Skip(file + " is installed here: " + path())
	}
	err := call()
	var le *dl.LibraryError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "/lib64/"+file) {
		t.Errorf("%s error = %v, want a *LibraryError listing the paths tried", fn, err)
	}
}
