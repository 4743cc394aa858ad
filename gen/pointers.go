package main

import (
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"
)

// Pointers in unions. A union, and the anonymous union of a struct, is
// raw integer storage in Go (see union and record): a Go pointer stored
// through one of its accessors is an integer to the garbage collector,
// which may free the memory it points to, and to cgo's pointer check, which
// cannot refuse it. So every accessor whose member holds a pointer (itself,
// or a field of it at any depth that is a Go field) gets a setter beside
// it: SetMemcpy(v MEMCPY_NODE_PARAMS, p *runtime.Pinner) error stores v
// after pinning with p the memory each of v's pointers points to, which
// then stays alive, and passes cgo's check, until p.Unpin; with p nil it
// stores nothing and returns an error wrapping ErrNoPinner when any of
// them is not nil. Pinning C memory does nothing, so a pinner is harmless
// where the pointers are C's.

// unionPointers returns the Go selectors, under base, of the pointers a
// value of type t holds in Go fields: t itself when it is a pointer, the
// pointer fields of a struct, its nested structs' and its arrays'. The
// members of nested unions are raw bytes, with setters of their own, and
// are not followed, nor are pointers followed to what they point to.
func (e *emitter) unionPointers(t *Type, base string) []string {
	switch t.Kind {
	case Pointer:
		return []string{base}
	case Array:
		var out []string
		for i := int64(0); i < t.Len; i++ {
			out = append(out, e.unionPointers(t.Elem, fmt.Sprintf("%s[%d]", base, i))...)
		}
		return out
	case Named:
		if t.Class != ClassStruct {
			return nil
		}
		r := e.recordOf(t)
		if r == nil {
			return nil
		}
		var out []string
		for _, fd := range r.Fields {
			if fd.Accessor {
				continue
			}
			name := fd.GoName
			if fd.Embedded {
				name = fd.Type.Go
			}
			out = append(out, e.unionPointers(fd.Type, base+"."+name)...)
		}
		return out
	}
	return nil
}

// recordOf returns the record a named type declares, in this package or a
// package it uses, or nil.
func (e *emitter) recordOf(t *Type) *Record {
	if t.Pkg != "" {
		if u := e.uses[t.Pkg]; u != nil {
			return u.records[t.Go]
		}
		return nil
	}
	if r := e.records[t.Go]; r != nil {
		return r
	}
	if td := e.tdefs[t.Go]; td != nil && td.Type != nil && td.Type.Kind == Named {
		return e.recordOf(td.Type)
	}
	return nil
}

// hasSetters reports whether the package has a union member that holds a
// pointer, and so needs ErrNoPinner and pinPointers.
func (e *emitter) hasSetters() bool {
	for _, r := range e.pkg.Records {
		for _, fd := range r.Fields {
			if (r.Union || fd.Accessor) && len(e.unionPointers(fd.Type, "v")) > 0 {
				return true
			}
		}
	}
	return false
}

// pointerNote is the paragraph of an accessor's doc comment whose member
// holds pointers, or "".
func (e *emitter) pointerNote(r *Record, fd Field, recv string) string {
	if len(e.unionPointers(fd.Type, "v")) == 0 || e.setterClash(r, fd) {
		return ""
	}
	return wrap(fmt.Sprintf("The union's bytes are integers to the garbage collector: a Go pointer "+
		"stored through the returned view neither keeps its memory alive nor is "+
		"seen by cgo's pointer check. [%s.Set%s] stores a member that holds Go "+
		"pointers and pins them.", r.GoName, fd.GoName))
}

// setterClash reports whether the setter of fd would take a name the
// record already has.
func (e *emitter) setterClash(r *Record, fd Field) bool {
	for _, o := range r.Fields {
		if o.GoName == "Set"+fd.GoName {
			return true
		}
	}
	return false
}

// setter emits Set<member> beside the accessor of a union member that
// holds pointers.
func (e *emitter) setter(f *jen.File, r *Record, fd Field, recv string) {
	ptrs := e.unionPointers(fd.Type, "v")
	if len(ptrs) == 0 || e.setterClash(r, fd) {
		return
	}
	name := "Set" + fd.GoName
	var shown []string
	for _, p := range ptrs {
		shown = append(shown, strings.TrimPrefix(p, "v."))
	}
	list := strings.Join(shown, ", ")
	if len(shown) > 4 {
		list = strings.Join(shown[:4], ", ") + fmt.Sprintf(" and %d more", len(shown)-4)
	}
	if shown[0] == "v" {
		list = "v" // the member is a pointer
	}
	what := fmt.Sprintf("that v's pointers (%s) point to", list)
	if list == "v" {
		what = "v points to"
	}
	text := wrap(fmt.Sprintf("%s stores v as what %s returns, after pinning with p the memory "+
		"%s, so that Go memory among it stays "+
		"alive and passes cgo's pointer check until p.Unpin: keep p pinned for as "+
		"long as C may use the memory (a graph node's, until the graph is "+
		"destroyed). Memory those point to that holds further Go pointers must "+
		"be pinned too (runtime.Pinner). With p nil, a pointer that is not nil "+
		"is refused with an error wrapping [ErrNoPinner], and nothing is stored.", name, fd.GoName, what))
	args := []jen.Code{jen.Id("p"), jen.Lit(r.GoName + "." + name)}
	for _, p := range ptrs {
		args = append(args, jen.Qual("unsafe", "Pointer").Call(jen.Op(p)))
	}
	f.Add(docComment(text))
	f.Func().Params(jen.Id(recv).Op("*").Id(r.GoName)).Id(name).Params(jen.Id("v").Add(goType(fd.Type)), jen.Id("p").Op("*").Qual("runtime", "Pinner")).Error().Block(
		jen.If(jen.Err().Op(":=").Id("pinPointers").Call(args...), jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
		jen.Op("*").Id(recv).Dot(fd.GoName).Call().Op("=").Id("v"),
		jen.Return(jen.Nil()),
	)
}

// pinHelpers emits ErrNoPinner and pinPointers.
func (e *emitter) pinHelpers(f *jen.File) {
	f.Add(docComment("ErrNoPinner is the error, wrapped, of a Set method of a union member\n" +
		"given a pointer and no runtime.Pinner: a union's bytes are integers to\n" +
		"the garbage collector and to cgo's pointer check, so Go memory stored in\n" +
		"them must be pinned for as long as C may use it."))
	f.Var().Id("ErrNoPinner").Op("=").Qual("errors", "New").Call(jen.Lit("a pointer stored in a union needs a runtime.Pinner"))
	f.Add(docComment("pinPointers pins with p the memory each of ptrs that is not nil points\n" +
		"to, for the Set method what; with p nil, it refuses a pointer that is\n" +
		"not nil."))
	f.Func().Id("pinPointers").Params(jen.Id("p").Op("*").Qual("runtime", "Pinner"), jen.Id("what").String(), jen.Id("ptrs").Op("...").Qual("unsafe", "Pointer")).Error().Block(
		jen.For(jen.List(jen.Id("_"), jen.Id("q")).Op(":=").Range().Id("ptrs")).Block(
			jen.If(jen.Id("q").Op("!=").Nil().Op("&&").Id("p").Op("==").Nil()).Block(
				jen.Return(jen.Qual("fmt", "Errorf").Call(jen.Lit(e.pkg.Name+": %s: %w"), jen.Id("what"), jen.Id("ErrNoPinner"))),
			),
		),
		jen.For(jen.List(jen.Id("_"), jen.Id("q")).Op(":=").Range().Id("ptrs")).Block(
			jen.If(jen.Id("q").Op("!=").Nil()).Block(jen.Id("p").Dot("Pin").Call(jen.Id("q"))),
		),
		jen.Return(jen.Nil()),
	)
}

// wrap breaks a paragraph of gen's own text into lines of at most 76
// characters, at spaces.
func wrap(text string) string {
	var b strings.Builder
	n := 0
	for i, w := range strings.Fields(text) {
		switch {
		case i == 0:
		case n+1+len(w) > 76:
			b.WriteString("\n")
			n = 0
		default:
			b.WriteString(" ")
			n++
		}
		b.WriteString(w)
		n += len(w)
	}
	return b.String()
}

// pinNote is the paragraph of fn's doc comment that says what Go memory
// must be pinned for a call, or "": cgo refuses (panics on) a Go pointer
// to Go memory that holds an unpinned Go pointer. It names the parameters
// that the headers document as arrays and that hold pointers
// (kernelParams, "Array of pointers to kernel parameters"), and those that
// point to a struct with pointer fields (Memcpy3D's pCopy). An array of
// void * or char * is one (see untyped).
func (e *emitter) pinNote(fn *Func) string {
	var notes []string
	for _, p := range fn.Params {
		t := p.Type
		if p.Out || t.Kind != Pointer || t.Elem == nil {
			continue
		}
		switch {
		case t.Elem.Kind == Pointer && untyped(t.Elem.Elem) && documentedArray(fn.Doc, p.CName):
			notes = append(notes, fmt.Sprintf("The array %s points to holds pointers: where it is Go memory, "+
				"the Go memory its elements point to must be pinned (runtime.Pinner) for the call, "+
				"and for as long as the call's work may use it.", p.GoName))
		case t.Elem.Kind == Named && t.Elem.Class == ClassStruct:
			ptrs := e.unionPointers(t.Elem, "")
			if len(ptrs) == 0 {
				continue
			}
			var shown []string
			for _, s := range ptrs {
				shown = append(shown, strings.TrimPrefix(s, "."))
			}
			list := strings.Join(shown, ", ")
			if len(shown) > 4 {
				list = strings.Join(shown[:4], ", ") + ", ..."
			}
			notes = append(notes, fmt.Sprintf("Go memory that the pointer fields of *%s point to (%s) must be "+
				"pinned (runtime.Pinner) for the call, and for as long as the call's work may use it.",
				p.GoName, list))
		}
	}
	if len(notes) == 0 {
		return ""
	}
	return wrap(strings.Join(notes, " ") + " cgo panics on an unpinned Go pointer in Go memory passed to C (\"Go pointer to unpinned Go pointer\").")
}

// documentedArray reports whether doc's parameter list describes the
// parameter named c as an array: "- kernelParams: Array of pointers ...".
func documentedArray(doc, c string) bool {
	for line := range strings.Lines(doc) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "- "+c+":"); ok {
			return strings.Contains(strings.ToLower(rest), "array")
		}
	}
	return false
}

// untyped reports whether the elements of an array of pointers point to
// void or char, memory the caller provides (kernelParams, options), unlike
// an array of structs or handles the call returns (edgeData_out).
func untyped(t *Type) bool {
	return t == nil || t.Kind == Scalar && t.C == "char"
}
