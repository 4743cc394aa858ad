package main

import (
	"flag"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestReadData checks the lines of gen's data files: a key and its values,
// blank lines and comments skipped, and a # inside a word (a URL's
// fragment) part of the word.
func TestReadData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data.txt")
	text := "# a comment\n\nkey a b\n  spaced\tout  # a comment\nguide https://example.com/x/#y the guide#2\n#key c\n"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	var got []string
	err := readData(path, func(n int, key string, v []string) error {
		got = append(got, strings.Join(append([]string{string(rune('0' + n)), key}, v...), " "))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"3 key a b", "4 spaced out", "5 guide https://example.com/x/#y the guide#2"}
	if !slices.Equal(got, want) {
		t.Errorf("read %q, want %q", got, want)
	}
	err = readData(path, func(n int, key string, v []string) error {
		if key == "spaced" {
			return os.ErrInvalid
		}
		return nil
	})
	if want := path + ":4: invalid argument"; err == nil || err.Error() != want {
		t.Errorf("readData's error = %v, want %q", err, want)
	}
}

// goodPackages is a configuration file with a package of each kind: one
// generated for the majors, one that uses it and calls into it, one from a
// header directory of its own, and a hand-written one.
const goodPackages = `# The packages.
majors ../headers

package rt # the runtime
dir ../rt
include rt.h rt_extra.h
types rt_types.h
prefix rt RT_
error rtError_t
perthread RT_PER_THREAD
lib GOCUDA_RT
guide https://example.com/rt/#api-reference the RT guide, API reference
calls
callback rtSetLogger *
getattr rtGetAttribute attr value
setattr rtSetAttribute attr value size
getattrs rtGetAttributes rtGetAttribute

package blas
dir ../blas
from nccl
include blas.h
prefix blas BLAS_
omit pblas
lib GOCUDA_BLAS
use rt
guide https://example.com/blas/ the BLAS guide
sections blasI blas
calls rt
keeps blasKeep
stringarrays blasCreate.options blasCreate.names

package own
dir .
headers include
include own.h
lib GOCUDA_OWN libown.so.1

package hw
dir ../hw
handwritten cflags tests shim
`

func TestReadPackages(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "packages.txt")
	if err := os.WriteFile(path, []byte(goodPackages), 0o644); err != nil {
		t.Fatal(err)
	}
	cfgs, err := readPackages(path)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	byName := map[string]*config{}
	for _, c := range cfgs {
		names = append(names, c.pkg)
		byName[c.pkg] = c
	}
	if want := []string{"rt", "blas", "own", "hw"}; !slices.Equal(names, want) {
		t.Fatalf("packages %q, want %q, in the file's order", names, want)
	}
	up := filepath.Dir(dir)
	rt, blas, own, hw := byName["rt"], byName["blas"], byName["own"], byName["hw"]
	for _, tt := range []struct {
		what      string
		got, want any
	}{
		{"rt's dir", rt.dest, filepath.Join(up, "rt")},
		{"rt's majors", rt.majors, filepath.Join(up, "headers")},
		{"rt's headers", rt.headers, []string{"rt.h", "rt_extra.h"}},
		{"rt's types", rt.typeHeaders, []string{"rt_types.h"}},
		{"rt's prefixes", rt.prefixes, []string{"rt", "RT_"}},
		{"rt's error", rt.errType, "rtError_t"},
		{"rt's perthread", rt.perThread, "RT_PER_THREAD"},
		{"rt's lib", [2]string{rt.libEnv, rt.lib}, [2]string{"GOCUDA_RT", ""}},
		{"rt's from", rt.from, "cuda"},
		{"rt's guide", *rt.guide, Guide{Title: "the RT guide, API reference", URL: "https://example.com/rt/#api-reference"}},
		{"rt's callbacks", rt.facts.callbacks, map[string][]string{"rtSetLogger": {every}}},
		{"rt's calls that call back", slices.Sorted(maps.Keys(rt.facts.back)), []string{every}},
		{"rt's getattr", rt.attrs["rtGetAttribute"], AttrFunc{Attr: "attr", Value: "value"}},
		{"rt's setattr", rt.attrs["rtSetAttribute"], AttrFunc{Attr: "attr", Value: "value", Size: "size", Set: true}},
		{"rt's getattrs", rt.attrPlurals["rtGetAttributes"], "rtGetAttribute"},
		{"blas's from", blas.from, "nccl"},
		{"blas's omit", blas.omit, []string{"pblas"}},
		{"blas's use", len(blas.use) == 1 && blas.use[0] == rt, true},
		{"blas's guide", *blas.guide, Guide{Title: "the BLAS guide", URL: "https://example.com/blas/", Sections: true, Families: []string{"blasI", "blas"}}},
		{"blas's facts known", blas.facts.known, true},
		{"blas's calls", blas.facts.calls, []string{"rt"}},
		{"blas's calls that call back", slices.Sorted(maps.Keys(blas.facts.back)), []string{every}}, // through rt's logger
		{"blas's keeps", blas.facts.keeps, []string{"blasKeep"}},
		{"blas's string arrays", blas.facts.stringArrays, []string{"blasCreate.options", "blasCreate.names"}},
		{"own's dir", own.dest, dir},
		{"own's headers", own.headerDir, filepath.Join(dir, "include")},
		{"own's lib", [2]string{own.libEnv, own.lib}, [2]string{"GOCUDA_OWN", "libown.so.1"}},
		{"own's guide", own.guide == nil, true},
		{"own's facts known", own.facts.known, false},
		{"hw's files", [5]bool{hw.cflags, hw.majorConst, hw.tests, hw.symbols, hw.shim}, [5]bool{true, false, true, false, true}},
		{"hw's handwritten", hw.handwritten(), true},
		{"rt's handwritten", rt.handwritten(), false},
	} {
		if !equal(tt.got, tt.want) {
			t.Errorf("%s = %v, want %v", tt.what, tt.got, tt.want)
		}
	}
}

// equal compares the values TestReadPackages checks.
func equal(a, b any) bool {
	switch a := a.(type) {
	case []string:
		return slices.Equal(a, b.([]string))
	case map[string][]string:
		return maps.EqualFunc(a, b.(map[string][]string), slices.Equal)
	case Guide:
		g := b.(Guide)
		return a.Title == g.Title && a.URL == g.URL && a.Sections == g.Sections && slices.Equal(a.Families, g.Families)
	}
	return a == b
}

// TestReadPackagesErrors checks that a configuration file that is not
// whole or not consistent is refused, with the file, the line and what is
// wrong.
func TestReadPackagesErrors(t *testing.T) {
	const gen = "majors ../headers\n\npackage a\ndir ../a\ninclude a.h\nlib GOCUDA_A\n" // lines 3 to 6
	const own = "package a\ndir .\nheaders .\ninclude a.h\nlib GOCUDA_A liba.so.1\n"    // lines 1 to 5
	for _, tt := range []struct {
		name, file, err string
	}{
		{"empty", "# nothing\n", "packages.txt: no package line"},
		{"unknown key", gen + "colour red\n", `packages.txt:7: unknown key "colour"`},
		{"unknown key before the packages", "colour red\n" + gen, `packages.txt:1: unknown key "colour"`},
		{"package key before the packages", "include a.h\n" + gen, "packages.txt:1: include before the first package line"},
		{"majors in a section", gen + "majors ../other\n", "packages.txt:7: majors is the file's, not a package's"},
		{"second majors", "majors a\n" + gen, "packages.txt:2: a second majors line (the first is at line 1)"},
		{"duplicate package", gen + "\npackage a\ndir ../b\n", "packages.txt:8: package a: a second section (the first is at line 3)"},
		{"package without a name", gen + "package\n", "packages.txt:7: package takes 1 value, not 0"},
		{"no dir", "majors ../headers\n\npackage a\ninclude a.h\nlib GOCUDA_A\n", "packages.txt:3: package a: no dir line"},
		{"no include", "majors ../headers\n\npackage a\ndir ../a\nlib GOCUDA_A\n", "packages.txt:3: package a: no include line"},
		{"no lib", "majors ../headers\n\npackage a\ndir ../a\ninclude a.h\n", "packages.txt:3: package a: no lib line"},
		{"no majors", "package a\ndir ../a\ninclude a.h\nlib GOCUDA_A\n", "packages.txt:1: package a: no headers line, and no majors line"},
		{"second line", gen + "include b.h\n", "packages.txt:7: a second include line (the first is at line 5)"},
		{"too many values", gen + "error aError_t bError_t\n", "packages.txt:7: error takes 1 value, not 2"},
		{"too few values", gen + "guide https://example.com/\n", "packages.txt:7: guide takes at least 2 values, not 1"},
		{"lib file for the majors", "majors ../headers\n\npackage a\ndir ../a\ninclude a.h\nlib GOCUDA_A liba.so.1\n",
			"packages.txt:6: package a: lib GOCUDA_A liba.so.1: the library's file is each CUDA major's"},
		{"lib without its file", strings.Replace(own, " liba.so.1", "", 1), "packages.txt:5: package a: lib GOCUDA_A: with a headers line, lib names the library's file too"},
		{"from with headers", own + "from nccl\n", "packages.txt:6: package a: from picks a CUDA major's header directory"},
		{"handwritten with include", "majors ../headers\n\npackage hw\ndir ../hw\nhandwritten cflags\ninclude a.h\n",
			"packages.txt:6: package hw: a hand-written package (handwritten) has no include line"},
		{"handwritten file", "majors ../headers\n\npackage hw\ndir ../hw\nhandwritten cgo\n", "packages.txt:5: handwritten cgo: the files are cflags, major, tests, symbols and shim"},
		{"symbols without procs", "majors ../headers\n\npackage hw\ndir ../hw\nhandwritten symbols\nprocbase 12000\n",
			"packages.txt:5: package hw: handwritten symbols needs proc lines and a procbase line"},
		{"symbols without procbase", "majors ../headers\n\npackage hw\ndir ../hw\nhandwritten symbols\nproc cuInit\n",
			"packages.txt:5: package hw: handwritten symbols needs proc lines and a procbase line"},
		{"shim without cflags", "majors ../headers\n\npackage hw\ndir ../hw\nhandwritten tests shim\n",
			"packages.txt:5: package hw: handwritten shim needs cflags"},
		{"proc without symbols", "majors ../headers\n\npackage hw\ndir ../hw\nhandwritten cflags\nproc cuInit\n",
			"packages.txt:6: package hw: a proc line without handwritten symbols"},
		{"second proc", "majors ../headers\n\npackage hw\ndir ../hw\nhandwritten symbols\nprocbase 12000\nproc cuInit\nproc cuInit\n",
			"packages.txt:8: proc cuInit: a second line for cuInit"},
		{"procbase not a version", "majors ../headers\n\npackage hw\ndir ../hw\nhandwritten symbols\nprocbase 12.0\nproc cuInit\n",
			"packages.txt:6: procbase 12.0: a CUDA version as the driver numbers it"},
		{"use of no package", gen + "use b\n", "packages.txt:7: package a: use b: no such package"},
		{"use of itself", gen + "use a\n", "packages.txt:7: package a: use a: a cycle: a uses a"},
		{"use cycle", gen + "use b\n\npackage b\ndir ../b\ninclude b.h\nlib GOCUDA_B\nuse a\n", "packages.txt:7: package a: use b: a cycle: a uses b uses a"},
		{"use of a hand-written package", gen + "use hw\n\npackage hw\ndir ../hw\nhandwritten tests\n", "packages.txt:7: package a: use hw: a hand-written package"},
		{"calls no package", gen + "calls b\n", "packages.txt:7: package a: calls b: no such package"},
		{"calls a package without facts", gen + "calls b\n\npackage b\ndir ../b\ninclude b.h\nlib GOCUDA_B\n", "packages.txt:7: package a: calls b, which has no calls line"},
		{"callback without calls", gen + "callback aSetLogger *\n", "packages.txt:7: package a: callback without a calls line"},
		{"keeps without calls", gen + "keeps aKeep\n", "packages.txt:7: package a: keeps without a calls line"},
		{"second callback", gen + "calls\ncallback aSet *\ncallback aSet aRun\n", "packages.txt:9: callback aSet: a second line"},
		{"sections without guide", gen + "sections a\n", "packages.txt:7: package a: sections without a guide line"},
		{"guide without URL", gen + "guide the A guide\n", "packages.txt:7: guide the: the guide's URL, https://..., comes first"},
		{"string array", gen + "stringarrays aCreate\n", "packages.txt:7: stringarrays aCreate: not function.parameter"},
		{"getattr without a value", gen + "getattr aGetAttribute attr\n", "packages.txt:7: getattr takes 3 to 4 values, not 2"},
		{"second getattr", gen + "getattr aGet attr value\nsetattr aGet attr value\n", "packages.txt:8: setattr aGet: a second line for aGet"},
		{"getattrs without getattr", gen + "getattrs aGetAll aGet\n", "packages.txt:7: package a: getattrs aGetAll aGet: no getattr line for aGet"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "packages.txt")
			if err := os.WriteFile(path, []byte(tt.file), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := readPackages(path)
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("readPackages = %v, want an error containing %q", err, tt.err)
			}
			if !strings.HasPrefix(err.Error(), path) {
				t.Errorf("the error %q does not start with the file's path", err)
			}
		})
	}
}

// TestRepoPackages checks the repository's configuration file: every
// package gen generates, each generated or hand-written as it should be.
func TestRepoPackages(t *testing.T) {
	pkgs := repoPackages(t)
	for _, name := range []string{"cudart", "cudadrv", "nvrtc", "nvjitlink", "cublas", "cublaslt", "cusolver", "cusparse", "curand", "cufft", "nccl"} {
		c := pkgs[name]
		if c == nil || c.handwritten() || !c.facts.known || c.guide == nil || filepath.Base(c.dest) != name {
			t.Errorf("%s: %+v, want a generated package in ../%[1]s, with facts and a guide", name, c)
		}
	}
	if n, m := len(pkgs["cudadrv"].attrs), len(pkgs["cudart"].attrs); n != 11 || m != 5 {
		t.Errorf("cudadrv and cudart have %d and %d attribute functions, want 11 and 5", n, m)
	}
	for _, name := range []string{"highlevel", "driver", "nvtx", "dl", "bench"} {
		if c := pkgs[name]; c == nil || !c.handwritten() {
			t.Errorf("%s: %+v, want a hand-written package", name, c)
		}
	}
	if c := pkgs["driver"]; c == nil || !c.symbols || !c.shim {
		t.Errorf("driver: %+v, want zsymbols.h and zshim.go (handwritten symbols shim)", c)
	}
	if n := len(pkgs); n != 16 {
		t.Errorf("%d packages, want 16", n)
	}
}

func TestFlags(t *testing.T) {
	for _, tt := range []struct {
		args []string
		err  string // "" for success
	}{
		{[]string{"-pkg", "cublas"}, ""},
		{[]string{"-all", ".", "-out", "x", "-check-targets"}, ""},
		{[]string{"-config", "p.txt", "-pkg", "a", "-out", "x", "-model"}, ""},
		{nil, "-pkg or -all is required"},
		{[]string{"-all", ".", "-pkg", "cublas"}, "-all generates every package: no -pkg"},
		{[]string{"-all", ".", "-model"}, "-model prints one package's model: no -all"},
		{[]string{"-pkg", "cublas", "cublas.h"}, `arguments ["cublas.h"]: a package's configuration is in the configuration file`},
		{[]string{"-pkg", "cublas", "-include", "cublas.h"}, "flag provided but not defined: -include"},
	} {
		fs := flag.NewFlagSet("gen", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		_, err := flags(fs, tt.args)
		if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("flags(%q) = %v, want %q", tt.args, err, tt.err)
		}
	}
}

// TestConfigFile checks that gen finds gen/packages.txt from a package's
// directory, a level or three down, as go generate runs it there.
func TestConfigFile(t *testing.T) {
	root := t.TempDir()
	want := filepath.Join(root, "gen", "packages.txt")
	for _, d := range []string{"gen", "highlevel/internal/driver"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(want, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{".", "gen", "highlevel", "highlevel/internal/driver"} {
		if got, err := configFile(filepath.Join(root, d)); got != want || err != nil {
			t.Errorf("configFile(%s) = %q, %v, want %q", d, got, err, want)
		}
	}
	if _, err := configFile(filepath.Dir(root)); err == nil || !strings.Contains(err.Error(), "no gen/packages.txt in") {
		t.Errorf("configFile above it = %v, want an error", err)
	}
}
