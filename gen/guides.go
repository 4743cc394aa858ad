package main

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// funcDoc returns a function's doc comment: its Go name, the C function it
// calls and the header's text; without header text, where its library's
// guide documents it. Deprecated: paragraphs go last.
func funcDoc(pkg *Package, fn *Func) string {
	body, dep := splitDeprecated(fn.Doc)
	s := doc(fn.GoName, "calls", fn.CName, body)
	if body == "" {
		if ref := guideRef(pkg, fn); ref != "" {
			s += " " + ref
		}
	}
	var outs []string
	for _, p := range fn.Params {
		if p.Out {
			outs = append(outs, p.CName)
		}
	}
	if len(outs) > 0 {
		if len(outs) == 1 {
			s += fmt.Sprintf("\n\nIn Go, the string the call sets *%s to is returned, before the error, in place of the parameter; it is the library's and is copied.", outs[0])
		} else {
			s += fmt.Sprintf("\n\nIn Go, the strings the call sets %s to are returned in that order, before the error, in place of the parameters; they are the library's and are copied.", "*"+strings.Join(outs, " and *"))
		}
	}
	if dep != "" {
		s += "\n\n" + dep
	}
	return s
}

// guideRef returns the sentence that sends a reader to fn's section of its
// library's guide, or "" when the package has no guide.
func guideRef(pkg *Package, fn *Func) string {
	g := pkg.Guide
	if g == nil {
		return ""
	}
	if !g.Sections {
		return fmt.Sprintf("See %s:\n%s", g.Title, g.URL)
	}
	title := section(g, baseName(fn.CName), functionNames(pkg)) + "()"
	return fmt.Sprintf("See %s in %s:\n%s#%s", title, g.Title, g.URL, anchor(title))
}

// baseName is the name a guide documents a function under: without the
// _64 of its 64-bit-integer variant and the _v2 of its versioned symbol.
func baseName(c string) string {
	return strings.TrimSuffix(strings.TrimSuffix(c, "_64"), "_v2")
}

// section returns the title of the guide's section on the function name:
// the name itself, or with <t> for its type letter when the package has
// another function of the same family.
func section(g *Guide, name string, names map[string]bool) string {
	for _, pre := range g.Families {
		rest, ok := strings.CutPrefix(name, pre)
		if !ok || rest == "" {
			continue
		}
		letters := "SDCZH"
		if strings.ContainsRune("sdczh", rune(rest[0])) {
			letters = "sdczh"
		}
		if !strings.ContainsRune(letters, rune(rest[0])) {
			continue
		}
		n := 0
		for _, l := range letters {
			if names[pre+string(l)+rest[1:]] {
				n++
			}
		}
		if n >= 2 {
			return pre + "<t>" + rest[1:]
		}
	}
	return name
}

// reNonAlnum matches what Sphinx turns into one - of an anchor.
var reNonAlnum = regexp.MustCompile(`[^a-z0-9]+`)

// anchor returns the anchor Sphinx gives a section titled title (docutils'
// make_id): lower case, each run of other characters one -, none at the
// ends. cublas<t>gemm() -> cublas-t-gemm.
func anchor(title string) string {
	return strings.Trim(reNonAlnum.ReplaceAllString(strings.ToLower(title), "-"), "-")
}

var funcNames sync.Map // *Package -> map[string]bool

// functionNames returns the base names of pkg's functions (baseName).
func functionNames(pkg *Package) map[string]bool {
	if m, ok := funcNames.Load(pkg); ok {
		return m.(map[string]bool)
	}
	m := map[string]bool{}
	for _, f := range pkg.Funcs {
		m[baseName(f.CName)] = true
	}
	funcNames.Store(pkg, m)
	return m
}
