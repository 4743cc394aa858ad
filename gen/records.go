package main

import (
	"fmt"
	"strings"

	"modernc.org/cc/v4"
)

// definitions returns the type specifiers that define a tagged struct, union
// or enum in a declaration, including those nested in a struct or union body
// (C gives those file scope too), outermost first.
func definitions(d *cc.Declaration) []*cc.TypeSpecifier {
	var r []*cc.TypeSpecifier
	var walk func(ts *cc.TypeSpecifier)
	walk = func(ts *cc.TypeSpecifier) {
		switch {
		case ts.StructOrUnionSpecifier != nil && ts.StructOrUnionSpecifier.StructDeclarationList != nil:
			s := ts.StructOrUnionSpecifier
			if s.Token.Ch == rune(cc.IDENTIFIER) {
				r = append(r, ts)
			}
			for l := s.StructDeclarationList; l != nil; l = l.StructDeclarationList {
				if sd := l.StructDeclaration; sd != nil {
					for q := sd.SpecifierQualifierList; q != nil; q = q.SpecifierQualifierList {
						if q.TypeSpecifier != nil {
							walk(q.TypeSpecifier)
						}
					}
				}
			}
		case ts.EnumSpecifier != nil && ts.EnumSpecifier.EnumeratorList != nil && ts.EnumSpecifier.Token2.Ch == rune(cc.IDENTIFIER):
			r = append(r, ts)
		}
	}
	for _, ts := range specifiers(d) {
		walk(ts)
	}
	return r
}

// definedType returns the type a definition defines, its tag's C spelling
// and the tag's file and line.
func definedType(ts *cc.TypeSpecifier) (t cc.Type, c, file string, line int) {
	var tok cc.Token
	if s := ts.StructOrUnionSpecifier; s != nil {
		tok, t = s.Token, s.Type()
	} else {
		tok, t = ts.EnumSpecifier.Token2, ts.EnumSpecifier.Type()
	}
	return t, tagName(t), tok.Position().Filename, tok.Position().Line
}

// nameTags names the tagged types a declaration defines. A tag defined in a
// typedef takes the typedef's name, the one C code writes
// (typedef struct CUDA_MEMCPY2D_st {...} CUDA_MEMCPY2D_v2 names MEMCPY2D_v2);
// other tags are named after themselves.
func (p *parser) nameTags(d *cc.Declaration) {
	for _, ts := range definitions(d) {
		t, c, _, _ := definedType(ts)
		kind, _, _ := strings.Cut(c, " ")
		goName := ""
		for l := d.InitDeclaratorList; l != nil; l = l.InitDeclaratorList {
			if dd := l.InitDeclarator.Declarator; dd.IsTypename() && dd.Type().Kind() == t.Kind() && tagName(dd.Type()) == c {
				goName = p.typeName(dd.Name(), kind)
				p.typeC[dd.Name()] = goName
				break
			}
		}
		if goName == "" {
			goName = p.typeName(c, kind)
		}
		p.typeC[c] = goName
	}
}

// typeName names a type. When an enumerator has the type's Go name, the
// enumerator keeps it and the type gets its kind appended (Struct, Union,
// Enum, or Type for a typedef); the report lists each such rename.
func (p *parser) typeName(c, kind string) string {
	goName := p.names.typ(c)
	if p.values[goName] == "" {
		return goName
	}
	suffix := exported(kind)
	if kind == "typedef" {
		suffix = "Type"
	}
	renamed := goName + suffix
	p.pkg.Renamed = append(p.pkg.Renamed, Skip{Kind: kind, CName: c, Reason: fmt.Sprintf("%s, as enumerator %s has %s", renamed, p.values[goName], goName)})
	return renamed
}

// tagName returns the C spelling of a struct, union or enum type's tag, or "".
func tagName(t cc.Type) string {
	switch x := t.(type) {
	case *cc.StructType:
		if tok := x.Tag(); tok.SrcStr() != "" {
			return "struct " + tok.SrcStr()
		}
	case *cc.UnionType:
		if tok := x.Tag(); tok.SrcStr() != "" {
			return "union " + tok.SrcStr()
		}
	case *cc.EnumType:
		if tok := x.Tag(); tok.SrcStr() != "" {
			return "enum " + tok.SrcStr()
		}
	}
	return ""
}

func (p *parser) nameTypedef(d *cc.Declarator) {
	name := d.Name()
	if _, named := p.typeC[name]; named || strings.HasPrefix(name, "__") {
		return // named with the tag it defines, or reserved
	}
	p.typeC[name] = p.typeName(name, "typedef")
}

// tags emits the structs, unions and enums a declaration defines.
func (p *parser) tags(d *cc.Declaration) {
	for _, ts := range definitions(d) {
		t, c, file, line := definedType(ts)
		if e, ok := t.(*cc.EnumType); ok {
			p.enum(e, c, p.typeC[c], file, line)
		} else {
			p.record(t, c, c, c, p.typeC[c], file, line)
		}
	}
}

// omitted reports whether the omit line leaves out the declaration of the C name c
// (a tag without its struct, union or enum), and reports it as skipped.
func (p *parser) omitted(kind, c string) bool {
	name := c
	for _, k := range []string{"struct ", "union ", "enum "} {
		name = strings.TrimPrefix(name, k)
	}
	for _, o := range p.cfg.omit {
		if strings.HasPrefix(name, o) {
			p.skip(kind, c, "omitted (omit "+o+")")
			return true
		}
	}
	return false
}

// claim names the declaration of the C name c, unless the omit line leaves it out
// or another declaration has its Go name, and reports whether it did.
func (p *parser) claim(goName, c, kind string) bool {
	if p.omitted(kind, c) {
		return false
	}
	if p.names.claim(goName, c) {
		return true
	}
	p.skip(kind, c, fmt.Sprintf("Go name %s is taken by %s", goName, p.names.taken[goName]))
	return false
}

func (p *parser) enum(t *cc.EnumType, c, goName, file string, line int) {
	if _, ok := p.enums[goName]; ok || !p.claim(goName, c, "enum") {
		return
	}
	e := &Enum{CName: c, GoName: goName, Under: p.scalar(t.UnderlyingType())}
	p.raw[e] = p.docs.before(file, line, false)
	for _, en := range t.Enumerators() {
		name := en.Token.SrcStr()
		v := EnumValue{CName: name, GoName: p.names.constant(name)}
		switch x := en.Value().(type) {
		case cc.Int64Value:
			v.Value = int64(x)
		case cc.UInt64Value:
			v.Value = int64(x)
		default:
			p.skip("enumerator", name, "value is not an integer constant")
			continue
		}
		if !p.claim(v.GoName, name, "enumerator") {
			continue
		}
		pos := en.Token.Position()
		e.Values = append(e.Values, v)
		p.raw[enumKey{e, len(e.Values) - 1}] = p.docs.member(pos.Filename, pos.Line)
	}
	p.enums[goName] = e
	p.pkg.Enums = append(p.pkg.Enums, e)
}

// enumKey and fieldKey address a value inside a slice for the raw doc map.
type enumKey struct {
	e *Enum
	i int
}

type fieldKey struct {
	r *Record
	i int
}

// record emits a struct or union; nested anonymous types become records of
// their own, named after the field that holds them, except anonymous unions,
// whose members become the record's (see flatten). cexpr is a C expression of
// the type, "" for an anonymous member's, and base one of the type through
// which its members are reached: cexpr, or for an anonymous member its
// parent's base.
func (p *parser) record(t cc.Type, c, cexpr, base, goName, file string, line int) {
	if _, ok := p.records[goName]; ok || !p.claim(goName, c, "record") {
		return
	}
	r := &Record{CName: c, CExpr: cexpr, GoName: goName, Union: t.Kind() == cc.Union, Size: t.Size(), Align: int64(t.Align())}
	p.records[goName] = r
	p.pkg.Records = append(p.pkg.Records, r)
	if file != "" {
		p.raw[r] = p.docs.before(file, line, false)
	}
	anon := 0
	p.members(r, t, c, base, 0, &anon)
	uniqueFields(r)
}

// members adds the members of t, a struct or union at offset off in r (t is
// r's own type, or an anonymous union flattened into it), to r's fields.
// Anonymous structs are embedded under the name <Parent>Anon<N>, counted by
// anon.
func (p *parser) members(r *Record, t cc.Type, c, base string, off int64, anon *int) {
	var n int
	var field func(int) *cc.Field
	switch x := t.(type) {
	case *cc.StructType:
		n, field = x.NumFields(), x.FieldByIndex
	case *cc.UnionType:
		n, field = x.NumFields(), x.FieldByIndex
	}
	for i := 0; i < n; i++ {
		f := field(i)
		if f.IsBitfield() {
			p.skip("field", c+"."+f.Name(), "bit fields are not supported yet")
			continue
		}
		fd := Field{CName: f.Name(), Offset: off + f.Offset(), Size: f.Type().Size()}
		ft := f.Type()
		elem := ft
		for elem.Kind() == cc.Array {
			elem = elem.(*cc.ArrayType).Elem()
		}
		if (elem.Kind() == cc.Struct || elem.Kind() == cc.Union) && tagName(elem) == "" && elem.Typedef() == nil {
			// A nested anonymous struct or union.
			var sub, subExpr, subBase string
			switch {
			case fd.CName == "" && elem.Kind() == cc.Union:
				p.flatten(r, elem, c, base, fd.Offset, anon, t.Kind() == cc.Union)
				continue
			case fd.CName == "":
				sub = fmt.Sprintf("%sAnon%d", r.GoName, *anon)
				*anon++
				fd.Embedded = true
				subBase = base
			default:
				sub = r.GoName + exported(fd.CName)
				idx := ""
				for x := ft; x.Kind() == cc.Array; x = x.(*cc.ArrayType).Elem() {
					idx += "[0]"
				}
				subExpr = fmt.Sprintf("__typeof__(((%s *)0)->%s%s)", base, fd.CName, idx)
				subBase = subExpr
			}
			p.record(elem, "", subExpr, subBase, sub, "", 0)
			fd.Type = p.wrapArrays(ft, &Type{Kind: Named, Go: sub, C: subExpr, Class: classOf(elem)})
		} else {
			fd.Type = p.typ(ft)
		}
		if fd.Type == nil {
			p.skip("field", c+"."+f.Name(), "unsupported type "+ft.String())
			continue
		}
		if fd.Embedded {
			fd.GoName = fd.Type.Go
		} else {
			fd.GoName = exported(fd.CName)
		}
		r.Fields = append(r.Fields, fd)
		if d := f.Declarator(); d != nil {
			pos := d.NameTok().Position()
			p.raw[fieldKey{r, len(r.Fields) - 1}] = p.docs.member(pos.Filename, pos.Line)
		}
	}
}

// flatten adds the members of u, an anonymous union at offset off in r, to
// r's fields, as C makes them members of r. In a union, or nested in an
// anonymous union of r, they are just more members. In a struct the first
// is a field, which carries the union's size as Span, and the others are
// accessors, so that a field that a later header moves into an anonymous
// union as its first member (CUmemLocation.id in CUDA 13.2) keeps its Go
// spelling. Unless the first holds a Go pointer and shares its bytes with
// other members, through which a program could store what the garbage
// collector would then take for a pointer: then all are accessors.
func (p *parser) flatten(r *Record, u cc.Type, c, base string, off int64, anon *int, nested bool) {
	start := len(r.Fields)
	p.members(r, u, c, base, off, anon)
	group := r.Fields[start:]
	if r.Union || nested || len(group) == 0 {
		return
	}
	group[0].Span = u.Size()
	for i := range group {
		group[i].Accessor = i > 0 || len(group) > 1 && p.holdsPointers(group[0].Type)
	}
}

// holdsPointers reports whether a Go value of type t holds a pointer that
// the garbage collector follows. A union does not: it is raw storage.
func (p *parser) holdsPointers(t *Type) bool {
	switch t.Kind {
	case Pointer, String:
		return true
	case Array:
		return p.holdsPointers(t.Elem)
	case Named:
		if t.Pkg != "" {
			u := p.uses[t.Pkg]
			if u == nil {
				return true // unknown: assume it does
			}
			local := *t
			local.Pkg = ""
			return u.holdsPointers(&local)
		}
		if td := p.typedef[t.Go]; td != nil && td.Class == "" {
			return p.holdsPointers(td.Type)
		}
		if r := p.records[t.Go]; r != nil && !r.Union {
			for _, f := range r.Fields {
				if !f.Accessor && p.holdsPointers(f.Type) {
					return true
				}
			}
		}
	}
	return false
}

// uniqueFields renames fields whose exported names collide ("x" and "X").
func uniqueFields(r *Record) {
	seen := map[string]bool{}
	for i := range r.Fields {
		for seen[r.Fields[i].GoName] {
			r.Fields[i].GoName += "_"
		}
		seen[r.Fields[i].GoName] = true
	}
}

// classOf returns the class of an emitted named type.
func (p *parser) classOf(goName string) Class {
	switch {
	case p.records[goName] != nil && p.records[goName].Union:
		return ClassUnion
	case p.records[goName] != nil:
		return ClassStruct
	case p.enums[goName] != nil:
		return ClassEnum
	case p.typedef[goName] != nil:
		return p.typedef[goName].Class
	}
	return ""
}

func classOf(t cc.Type) Class {
	if t.Kind() == cc.Union {
		return ClassUnion
	}
	return ClassStruct
}

func (p *parser) wrapArrays(t cc.Type, elem *Type) *Type {
	if a, ok := t.(*cc.ArrayType); ok {
		return &Type{Kind: Array, Len: a.Len(), Elem: p.wrapArrays(a.Elem(), elem)}
	}
	return elem
}

func (p *parser) typedefDecl(d *cc.Declarator) {
	name := d.Name()
	goName, ok := p.typeC[name]
	if !ok {
		return
	}
	pos := d.NameTok().Position()
	t := d.Type()
	doc := func(x any) { p.raw[x] = p.docs.before(pos.Filename, pos.Line, true) }
	switch t.Kind() {
	case cc.Struct, cc.Union:
		if c := tagName(t); c != "" {
			p.alias(name, goName, p.tagType(c, classOf(t)), doc)
			return
		}
		p.record(t, name, name, name, goName, pos.Filename, pos.Line)
		if r := p.records[goName]; r != nil && p.raw[r] == "" {
			doc(r)
		}
		return
	case cc.Enum:
		if c := tagName(t); c != "" {
			p.alias(name, goName, p.tagType(c, ClassEnum), doc)
			return
		}
		p.enum(t.(*cc.EnumType), name, goName, pos.Filename, pos.Line)
		return
	}
	td := &Typedef{CName: name, GoName: goName}
	switch {
	case t.Kind() == cc.Ptr && t.(*cc.PointerType).Elem().Kind() == cc.Function:
		td.Class = ClassFuncPtr
	case t.Kind() == cc.Ptr && (t.(*cc.PointerType).Elem().Kind() == cc.Struct || t.(*cc.PointerType).Elem().Kind() == cc.Union):
		td.Class = ClassHandle
		e := t.(*cc.PointerType).Elem()
		p.handles[goName] = handle{tag: tagName(e), isConst: e.Attributes().IsConst()}
	default:
		if s := p.scalar(t); s != nil {
			td.Class, td.Type = ClassScalar, s
		} else if x := p.shape(t); x != nil {
			td.Type = x
		} else {
			p.skip("typedef", name, "unsupported type "+t.String())
			return
		}
	}
	if !p.claim(goName, name, "typedef") {
		return
	}
	doc(td)
	p.typedef[goName] = td
	p.pkg.Typedefs = append(p.pkg.Typedefs, td)
}

// tagType returns the type a struct, union or enum tag c names: the
// package's own, one of a used package, or nil.
func (p *parser) tagType(c string, class Class) *Type {
	if goName := p.typeC[c]; goName != "" {
		return &Type{Kind: Named, Go: goName, C: c, Class: class}
	}
	return p.ext[c]
}

// alias records typedef name for a type: nothing when both have the same
// Go name, else a Go alias.
func (p *parser) alias(name, goName string, target *Type, doc func(any)) {
	if target == nil || target.Pkg == "" && goName == target.Go {
		return
	}
	if !p.claim(goName, name, "typedef") {
		return
	}
	t := *target
	t.C = name
	td := &Typedef{CName: name, GoName: goName, Type: &t}
	doc(td)
	p.typedef[goName] = td
	p.pkg.Typedefs = append(p.pkg.Typedefs, td)
}

// handle is what a handle typedef points to.
type handle struct {
	tag     string // "struct cudaArray", or "" for an anonymous struct
	isConst bool
}

// constHandles makes a handle typedef that points to a const struct an
// alias of the package's handle typedef to the same struct, not const
// (cudaArray_const_t of cudaArray_t: Array_const = Array): const is C's
// promise not to write through it, and a Go type of its own only made
// callers convert one handle to the other.
func (p *parser) constHandles() {
	plain := map[string]*Typedef{}
	for _, td := range p.pkg.Typedefs {
		if h, ok := p.handles[td.GoName]; ok && !h.isConst && h.tag != "" && td.Class == ClassHandle {
			if plain[h.tag] == nil {
				plain[h.tag] = td
			}
		}
	}
	for _, td := range p.pkg.Typedefs {
		h, ok := p.handles[td.GoName]
		if !ok || !h.isConst || td.Class != ClassHandle {
			continue
		}
		if to := plain[h.tag]; to != nil {
			td.Class, td.Type = "", &Type{Kind: Named, Go: to.GoName, C: to.CName, Class: ClassHandle}
		}
	}
}
