package main

import (
	"fmt"
	"go/build/constraint"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// A major is one CUDA major version as its data file (headers/cuda13.txt,
// headers/cuda12.txt) describes it: the one place that names its version,
// headers and libraries. gen generates each package once for every major,
// into files named for it that build under its constraint, unless the
// package's section has a headers line.
type major struct {
	file    string            // the data file, absolute
	build   string            // the build constraint of its files: !cuda12
	suffix  string            // their names' suffix: cuda13, as in ztypes_cuda13.go
	version string            // the headers' CUDA version: 13.0
	driver  string            // the oldest Linux driver release that runs it: 580
	headers map[string]string // header directories by key (cuda, nccl), absolute
	libs    map[string]string // the libraries' file names by override variable
	funcs   map[string]int    // by package: the functions its coverage test counts in the headers
	// versions are, by override variable, the versions of a library
	// numbered otherwise than CUDA that this major's releases ship: from
	// the first's, up to, not including, the next major's first (zero
	// where not known).
	versions map[string]libVersions
}

// libVersions are the versions of a library that one CUDA major ships:
// from on, older than next (none if next is zero). A version is major,
// minor, patch.
type libVersions struct{ from, next [3]int }

// parseVersion parses a library version, 12.6 or 11.4.2.
func parseVersion(s string) ([3]int, error) {
	var v [3]int
	parts := strings.Split(s, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return v, fmt.Errorf("version %q is not major.minor[.patch]", s)
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return v, fmt.Errorf("version %q is not major.minor[.patch]", s)
		}
		v[i] = n
	}
	return v, nil
}

// overlap reports whether a and b have a version in common.
func (a libVersions) overlap(b libVersions) bool {
	below := func(v, w [3]int) bool { return slices.Compare(v[:], w[:]) < 0 } // v older than w
	aEndsFirst := a.next != [3]int{} && !below(b.from, a.next)
	bEndsFirst := b.next != [3]int{} && !below(a.from, b.next)
	return !aEndsFirst && !bEndsFirst
}

// readMajor reads a major's data file (see readData).
func readMajor(path string) (*major, error) {
	path, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	m := &major{file: path, headers: map[string]string{}, libs: map[string]string{}, funcs: map[string]int{}, versions: map[string]libVersions{}}
	err = readData(path, func(_ int, key string, v []string) error {
		return m.set(key, v, filepath.Dir(path))
	})
	if err != nil {
		return nil, err
	}
	for key, v := range map[string]string{"build": m.build, "suffix": m.suffix, "version": m.version, "headers cuda": m.headers["cuda"]} {
		if v == "" {
			return nil, fmt.Errorf("%s: no %s line", path, key)
		}
	}
	for _, env := range slices.Sorted(maps.Keys(m.versions)) {
		if m.libs[env] == "" {
			return nil, fmt.Errorf("%s: versions %s: no lib line for %[2]s", path, env)
		}
	}
	return m, nil
}

// set records one line of a data file in dir.
func (m *major) set(key string, v []string, dir string) error {
	want := map[string]int{"build": -1, "suffix": 1, "version": 1, "driver": 1, "headers": 2, "lib": 2, "funcs": 2, "versions": -1}[key]
	switch {
	case want == 0:
		return fmt.Errorf("unknown key %q", key)
	case key == "versions" && (len(v) < 2 || len(v) > 3):
		return fmt.Errorf("versions takes 2 or 3 values (variable, first version, next major's first), not %d", len(v))
	case want > 0 && len(v) != want:
		return fmt.Errorf("%s takes %d values, not %d", key, want, len(v))
	}
	switch key {
	case "build":
		expr, err := constraint.Parse("//go:build " + strings.Join(v, " "))
		if err != nil {
			return fmt.Errorf("build: %w", err)
		}
		m.build = expr.String()
	case "suffix":
		m.suffix = v[0]
	case "version":
		m.version = v[0]
	case "driver":
		m.driver = v[0]
	case "headers":
		d, err := filepath.Abs(filepath.Join(dir, v[1]))
		if err != nil {
			return err
		}
		m.headers[v[0]] = d
	case "lib":
		m.libs[v[0]] = v[1]
	case "funcs":
		n, err := strconv.Atoi(v[1])
		if err != nil {
			return fmt.Errorf("funcs %s: %w", v[0], err)
		}
		m.funcs[v[0]] = n
	case "versions":
		var r libVersions
		var err error
		if r.from, err = parseVersion(v[1]); err != nil {
			return fmt.Errorf("versions %s: %w", v[0], err)
		}
		if len(v) == 3 {
			if r.next, err = parseVersion(v[2]); err != nil {
				return fmt.Errorf("versions %s: %w", v[0], err)
			}
			if slices.Compare(r.from[:], r.next[:]) >= 0 {
				return fmt.Errorf("versions %s: %s is not older than %s", v[0], v[1], v[2])
			}
		}
		if _, dup := m.versions[v[0]]; dup {
			return fmt.Errorf("versions %s: a second line", v[0])
		}
		m.versions[v[0]] = r
	}
	return nil
}

// readMajors reads every major's data file in dir, cuda*.txt, in the order
// of their names, and checks that their constraints pick exactly one of
// them with no tag set, and at most one with each tag they name set alone.
func readMajors(dir string) ([]*major, error) {
	files, err := filepath.Glob(filepath.Join(dir, "cuda*.txt"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no CUDA majors' data files (cuda*.txt) in %s", dir)
	}
	var ms []*major
	tags := map[string]bool{"": true}
	for _, f := range files {
		m, err := readMajor(f)
		if err != nil {
			return nil, err
		}
		expr, _ := constraint.Parse("//go:build " + m.build)
		expr.Eval(func(tag string) bool { tags[tag] = true; return false })
		for _, o := range ms {
			for env, r := range m.versions {
				if or, ok := o.versions[env]; ok && r.overlap(or) {
					return nil, fmt.Errorf("%s and %s: the versions of %s overlap: a version would be of both majors", filepath.Base(o.file), filepath.Base(m.file), env)
				}
			}
		}
		ms = append(ms, m)
	}
	for _, tag := range slices.Sorted(maps.Keys(tags)) {
		var picked []string
		for _, m := range ms {
			expr, _ := constraint.Parse("//go:build " + m.build)
			if expr.Eval(func(t string) bool { return t == tag }) {
				picked = append(picked, filepath.Base(m.file))
			}
		}
		switch {
		case tag == "" && len(picked) != 1:
			return nil, fmt.Errorf("%s: with no tag, the build constraints pick %d majors, not 1: %s", dir, len(picked), strings.Join(picked, ", "))
		case len(picked) > 1:
			return nil, fmt.Errorf("%s: with the tag %s, the build constraints pick %d majors, not 1: %s", dir, tag, len(picked), strings.Join(picked, ", "))
		}
	}
	return ms, nil
}
