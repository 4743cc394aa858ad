package main

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// targets are the GOARCH values of the platforms, all linux, that the
// packages are for. gen writes one set of files for all of them, from the
// parse with the first's C ABI, which is right only where the ABIs give the
// same code (sameCode). With -check-targets it parses each package once for
// each and writes nothing where they do not; make test does, in golden's
// TestRegenerate.
var targets = []string{"amd64", "arm64"}

// targets returns the targets the package cfg describes is parsed for: all
// of them with -check-targets, else the first alone.
func (cfg config) targets() []string {
	if cfg.check {
		return targets
	}
	return targets[:1]
}

// sameCode returns nil when the parses of one package, one for each target
// in the order of targets, give the same model: then they give the same
// code, since emit depends on the model alone. Otherwise its error names
// the declarations whose code would differ.
func sameCode(ps []*parser) error {
	want := declarations(ps[0].pkg)
	for i, p := range ps[1:] {
		got := declarations(p.pkg)
		var diff []string
		for name, d := range want {
			if !reflect.DeepEqual(d, got[name]) {
				diff = append(diff, name)
			}
		}
		for name := range got {
			if _, ok := want[name]; !ok {
				diff = append(diff, name)
			}
		}
		if len(diff) > 0 {
			sort.Strings(diff)
			return fmt.Errorf("the C ABIs of linux/%s and linux/%s give different code for %s; gen writes one set of files for both, so these must be the same",
				targets[0], targets[i+1], strings.Join(diff, ", "))
		}
	}
	return nil
}

// declarations returns what a model declares, by the Go declaration each
// becomes and the C one it comes from.
func declarations(pkg *Package) map[string]any {
	d := map[string]any{"the status type": pkg.Error}
	for _, f := range pkg.Funcs {
		d[fmt.Sprintf("func %s (%s)", f.GoName, f.CName)] = f
	}
	for _, e := range pkg.Enums {
		d[fmt.Sprintf("type %s (%s)", e.GoName, e.CName)] = e
	}
	for _, r := range pkg.Records {
		c := r.CName
		if c == "" {
			c = memberPath(r.CExpr)
		}
		d[fmt.Sprintf("type %s (%s)", r.GoName, c)] = r
	}
	for _, t := range pkg.Typedefs {
		d[fmt.Sprintf("type %s (%s)", t.GoName, t.CName)] = t
	}
	for _, c := range pkg.Consts {
		d[fmt.Sprintf("const %s (%s)", c.GoName, c.CName)] = c
	}
	for _, s := range pkg.Skipped {
		d[fmt.Sprintf("the skipped %s %s", s.Kind, s.CName)] = s
	}
	for _, s := range pkg.Renamed {
		d[fmt.Sprintf("the renamed %s", s.CName)] = s
	}
	return d
}
