package main

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/dave/jennifer/jen"
)

// fileName returns the name of a generated file for the major:
// ztypes.go -> ztypes_cuda13.go, zlayout_test.go -> zlayout_cuda13_test.go.
func (m *major) fileName(name string) string {
	if m == nil {
		return name
	}
	base, test := strings.CutSuffix(strings.TrimSuffix(name, ".go"), "_test")
	if test {
		return base + "_" + m.suffix + "_test.go"
	}
	return base + "_" + m.suffix + ".go"
}

// constrain adds the major's build constraint to a generated file's
// source, after its first comment.
func (m *major) constrain(src []byte) []byte {
	if m == nil {
		return src
	}
	head, rest, _ := strings.Cut(string(src), "\n\n")
	return []byte(head + "\n\n//go:build " + m.build + "\n\n" + rest)
}

// versionTest emits zversion_test.go: what the CUDA major's data file says
// that the package's tests check.
func (e *emitter) versionTest() (*jen.File, error) {
	m := e.major
	funcs, ok := m.funcs[e.pkg.Name]
	if !ok {
		return nil, fmt.Errorf("%s has no funcs %s line", m.file, e.pkg.Name)
	}
	f := e.file(e.pkg.Name)
	err := m.testConsts(f, e.outDir, e.hdrRel[0],
		jen.Id("testLibrary").Op("=").Lit(e.pkg.Library).Comment("the library's file name"),
		jen.Id("testFuncs").Op("=").Lit(funcs).Comment("the functions the coverage test counts in the headers"))
	return f, err
}

// testConsts adds to f the constants that a package's tests read: the CUDA
// version, the directory of the headers the package binds (hdrRel, from the
// package's directory dir) and more.
func (m *major) testConsts(f *jen.File, dir, hdrRel string, more ...jen.Code) error {
	data, err := filepath.Rel(dir, m.file)
	if err != nil {
		return err
	}
	f.Comment("What " + filepath.ToSlash(data) + " says, for the package's tests.")
	f.Const().Defs(append([]jen.Code{
		jen.Id("testCUDA").Op("=").Lit(m.version).Comment("the CUDA version of the headers"),
		jen.Id("testHeaders").Op("=").Lit(hdrRel).Comment("the directory of the headers the package binds"),
	}, more...)...)
	return nil
}

// handwrittenFiles returns the small files that a hand-written package's
// //go:generate line asks for, for cfg's CUDA major, by name:
// zcflags_cuda13.go puts its headers on cgo's include path, for the
// package's C code; zmajor_cuda13.go has the constants cudaMajor and
// MinDriver, and releases, the data file's versions lines;
// zversion_cuda13_test.go has the constants the package's tests read. Two
// are of no major, and every major must give the same: zsymbols.h, the
// driver functions the package's C calls (see symbolsHeader), and zshim.go,
// the Go of its shim.h (see shimSource).
func handwrittenFiles(cfg config) (map[string][]byte, error) {
	m := cfg.major
	dest, err := filepath.Abs(cfg.dest)
	if err != nil {
		return nil, err
	}
	hdr, err := filepath.Rel(dest, cfg.headerDir)
	if err != nil {
		return nil, err
	}
	hdr = filepath.ToSlash(hdr)
	e := &emitter{}
	files := map[string]*jen.File{}
	if cfg.cflags {
		if err := checkIncludes(dest, cfg.headerDir, m); err != nil {
			return nil, err
		}
		f := e.file(cfg.pkg)
		f.CgoPreamble("#cgo CFLAGS: -I${SRCDIR}/" + hdr)
		files["zcflags.go"] = f
	}
	if cfg.majorConst {
		n, _, _ := strings.Cut(m.version, ".")
		v, err := strconv.Atoi(n)
		if err != nil {
			return nil, fmt.Errorf("%s: version %s: %w", m.file, m.version, err)
		}
		if m.driver == "" {
			return nil, fmt.Errorf("%s: no driver line", m.file)
		}
		f := e.file(cfg.pkg)
		f.Comment("cudaMajor is the major version of the CUDA release the build binds.")
		f.Const().Id("cudaMajor").Op("=").Lit(v)
		f.Line()
		f.Comment("MinDriver is the oldest Linux driver release that runs the CUDA release")
		f.Comment("the build binds.")
		f.Const().Id("MinDriver").Op("=").Lit(m.driver)
		f.Line()
		f.Comment("releases are, by override variable, the versions of the libraries numbered")
		f.Comment("otherwise than CUDA that the releases of the CUDA major the build binds")
		f.Comment("ship (the versions lines of its data file).")
		f.Var().Id("releases").Op("=").Map(jen.String()).Id("versions").Values(jen.DictFunc(func(d jen.Dict) {
			for env, r := range m.versions {
				fields := jen.Dict{jen.Id("from"): versionLit(r.from)}
				if r.next != [3]int{} {
					fields[jen.Id("next")] = versionLit(r.next)
				}
				d[jen.Lit(env)] = jen.Values(fields)
			}
		}))
		files["zmajor.go"] = f
	}
	if cfg.tests {
		f := e.file(cfg.pkg)
		if err := m.testConsts(f, dest, hdr); err != nil {
			return nil, err
		}
		files["zversion_test.go"] = f
	}
	out, err := render(files, m)
	if err != nil {
		return nil, err
	}
	if cfg.symbols {
		versions, err := procVersions(cfg.headerDir, cfg.procs, cfg.procBase)
		if err != nil {
			return nil, err
		}
		out["zsymbols.h"] = symbolsHeader(cfg.procs, versions, cfg.procBase)
	}
	if cfg.shim {
		s, err := readShim(dest, cfg.headerDir)
		if err != nil {
			return nil, err
		}
		if out[shimFile], err = shimSource(s, cfg.pkg); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// versionLit is the Go value of a library version in internal/dl:
// Version{12, 6, 0}.
func versionLit(v [3]int) jen.Code {
	return jen.Id("Version").Values(jen.Lit(v[0]), jen.Lit(v[1]), jen.Lit(v[2]))
}
