package main

import (
	"bytes"
	"fmt"
	"go/token"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dave/jennifer/jen"
	"modernc.org/cc/v4"
)

// A hand-written package's shim is C code of its own that its Go calls
// through cgo (highlevel/internal/driver's shim.c), declared in the
// package's shim.h. With handwritten shim, gen parses shim.h and writes
// zshim.go: a typed Go function for each function it declares, a Go type
// of the same layout for each struct, and a Go constant for each
// enumerator. shim.h's declarations use its own structs and the C scalars
// of shimScalars alone, so zshim.go is the same for every CUDA major: it is
// one file, without a build constraint, and the majors must agree on it.

const (
	shimHeader = "shim.h"   // the header gen reads, in the package's directory
	shimFile   = "zshim.go" // the file it writes
	// shimPrefix begins the C names of shim.h's functions and structs, and
	// shimConstPrefix those of its enumerators: Go's names drop them.
	shimPrefix      = "hl_"
	shimConstPrefix = "HL_"
)

// shimScalars maps the C scalar types that shim.h's functions and structs
// may use, by their C spelling (a typedef's name for those of the C
// library), to their Go type and cgo's name for them. gen refuses any other.
var shimScalars = map[string][2]string{
	"char":               {"byte", "char"},
	"int":                {"int32", "int"},
	"unsigned int":       {"uint32", "uint"},
	"long":               {"int64", "long"},
	"unsigned long long": {"uint64", "ulonglong"},
	"float":              {"float32", "float"},
	"size_t":             {"uintptr", "size_t"},
	"uintptr_t":          {"uintptr", "uintptr_t"},
	"uint8_t":            {"uint8", "uint8_t"},
	"uint32_t":           {"uint32", "uint32_t"},
	"uint64_t":           {"uint64", "uint64_t"},
}

// shim is the model zshim.go is emitted from: what shim.h declares, named
// for Go. An array's length is kept as shim.h writes it (Type.LenExpr).
type shim struct {
	Consts []*Const // the enumerators, in shim.h's order
	// Records are the structs: those a typedef names, then those named by
	// their tag alone, each in shim.h's order.
	Records []*Record
	Funcs   []*Func // in shim.h's order
}

// readShim parses shim.h in the package's directory dir, with the CUDA
// headers of headerDir on the include path as cgo has them (zcflags.go),
// and returns its model.
func readShim(dir, headerDir string) (*shim, error) {
	target, err := targetConfig(targets[0])
	if err != nil {
		return nil, err
	}
	ccfg := *target
	ccfg.IncludePaths = slices.Concat([]string{"@", dir, headerDir}, ccfg.IncludePaths)
	ccfg.SysIncludePaths = slices.Concat([]string{dir, headerDir}, ccfg.SysIncludePaths)
	ccfg.Header = true
	path := filepath.Join(dir, shimHeader)
	ast, err := translate(&ccfg, fmt.Sprintf("#include %q\n", shimHeader))
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", path, err)
	}
	return shimModel(ast, path)
}

// shimReader builds a shim's model from shim.h's declarations.
type shimReader struct {
	shim    shim
	tagged  []*Record         // the structs named by their tag alone
	structs map[string]*Type  // shim.h's structs by C name: hl_dims, struct hl_next
	consts  map[string]string // the Go names of shim.h's enumerators, by C name
	names   map[string]string // the Go names given, with the C names they stand for
}

// shimModel returns the model of the declarations of ast that are in path,
// shim.h: those of the headers it includes are not the shim's.
func shimModel(ast *cc.AST, path string) (*shim, error) {
	r := &shimReader{structs: map[string]*Type{}, consts: map[string]string{}, names: map[string]string{}}
	for l := ast.TranslationUnit; l != nil; l = l.TranslationUnit {
		ed := l.ExternalDeclaration
		if abs(ed.Position().Filename) != path {
			continue
		}
		var err error
		switch {
		case ed.Case == cc.ExternalDeclarationDecl && ed.Declaration.Case == cc.DeclarationDecl:
			err = r.declaration(ed.Declaration)
		case ed.Case == cc.ExternalDeclarationEmpty, ed.Case == cc.ExternalDeclarationDecl && ed.Declaration.Case == cc.DeclarationAssert:
		case ed.Case == cc.ExternalDeclarationFuncDef:
			err = fmt.Errorf("%s: gen binds declarations, not definitions", ed.FunctionDefinition.Declarator.Name())
		default:
			err = fmt.Errorf("gen binds declarations of functions, structs and enumerators, not %s", cc.NodeSource(ed))
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, ed.Position().Line, err)
		}
	}
	r.shim.Records = append(r.shim.Records, r.tagged...)
	return &r.shim, nil
}

// declaration adds to the model what one declaration of shim.h declares:
// the enumerators of its enums, the struct it defines, and its functions.
func (r *shimReader) declaration(d *cc.Declaration) error {
	var defined *cc.StructOrUnionSpecifier
	for _, ts := range specifiers(d) {
		if e := ts.EnumSpecifier; e != nil {
			for l := e.EnumeratorList; l != nil; l = l.EnumeratorList {
				c := l.Enumerator.Token.SrcStr()
				rest, ok := strings.CutPrefix(c, shimConstPrefix)
				if !ok {
					return fmt.Errorf("enumerator %s: not named %s...", c, shimConstPrefix)
				}
				goName := camel(strings.ToLower(rest))
				if err := r.claim(goName, c, shimConstPrefix); err != nil {
					return err
				}
				r.consts[c] = goName
				r.shim.Consts = append(r.shim.Consts, &Const{CName: c, GoName: goName})
			}
		}
		if s := ts.StructOrUnionSpecifier; s != nil && s.StructDeclarationList != nil {
			defined = s
		}
	}
	var typedef string // the typedef that names the struct defined
	for l := d.InitDeclaratorList; l != nil; l = l.InitDeclaratorList {
		dd := l.InitDeclarator.Declarator
		switch {
		case dd.IsTypename() && defined != nil && dd.Type().Kind() == cc.Struct && typedef == "":
			typedef = dd.Name()
		case dd.IsTypename():
			return fmt.Errorf("typedef %s: gen binds the typedefs that name the struct they define, alone", dd.Name())
		case dd.Type().Kind() != cc.Function:
			return fmt.Errorf("%s: gen binds functions, structs and enumerators, not variables", dd.Name())
		}
	}
	if defined != nil {
		if err := r.record(defined, typedef); err != nil {
			return err
		}
	}
	for l := d.InitDeclaratorList; l != nil; l = l.InitDeclaratorList {
		if dd := l.InitDeclarator.Declarator; !dd.IsTypename() {
			if err := r.function(dd); err != nil {
				return err
			}
		}
	}
	return nil
}

// record adds a struct that shim.h defines, named by typedef or, without
// one, by its tag.
func (r *shimReader) record(s *cc.StructOrUnionSpecifier, typedef string) error {
	st, ok := s.Type().(*cc.StructType)
	c := typedef
	switch {
	case !ok:
		return fmt.Errorf("union %s: gen binds structs, not unions", s.Token.SrcStr())
	case c == "" && s.Token.SrcStr() == "":
		return fmt.Errorf("a struct with neither a tag nor a typedef: Go cannot name it")
	case c == "":
		c = "struct " + s.Token.SrcStr()
	}
	rest, ok := strings.CutPrefix(strings.TrimPrefix(c, "struct "), shimPrefix)
	if !ok {
		return fmt.Errorf("%s: not named %s...", c, shimPrefix)
	}
	rec := &Record{CName: c, GoName: camel(rest)}
	if err := r.claim(rec.GoName, c, shimPrefix); err != nil {
		return err
	}
	fields := map[string]string{} // the fields' C names by Go name
	for i := range st.NumFields() {
		f := st.FieldByIndex(i)
		if f.Name() == "" || f.IsBitfield() || f.IsFlexibleArrayMember() {
			return fmt.Errorf("%s: field %d: gen binds named fields of fixed size, not bit fields, anonymous members or flexible arrays", c, i)
		}
		goName := camel(f.Name())
		switch prev, ok := fields[goName]; {
		case goName == "":
			return fmt.Errorf("%s: field %s: nothing in its name is Go's, which drops underscores", c, f.Name())
		case ok:
			return fmt.Errorf("%s: fields %s and %s would both be Go's %s", c, prev, f.Name(), goName)
		}
		fields[goName] = f.Name()
		t, err := r.field(f)
		if err != nil {
			return fmt.Errorf("%s: field %s: %w", c, f.Name(), err)
		}
		rec.Fields = append(rec.Fields, Field{CName: f.Name(), GoName: goName, Type: t})
	}
	t := &Type{Kind: Named, Go: rec.GoName, C: c, Class: ClassStruct}
	r.structs[c] = t
	if tag := s.Token.SrcStr(); tag != "" {
		r.structs["struct "+tag] = t
	}
	if typedef == "" {
		r.tagged = append(r.tagged, rec)
	} else {
		r.shim.Records = append(r.shim.Records, rec)
	}
	return nil
}

// field maps a field's type: arrays keep their lengths as shim.h writes
// them.
func (r *shimReader) field(f *cc.Field) (*Type, error) {
	var lens []cc.ExpressionNode // outermost first: a[2][3] gives 2, 3
	for dd := f.Declarator().DirectDeclarator; dd.Case != cc.DirectDeclaratorIdent; dd = dd.DirectDeclarator {
		if dd.Case != cc.DirectDeclaratorArr || dd.AssignmentExpression == nil {
			return nil, fmt.Errorf("gen has no Go type for C type %s", typeSpelling(f.Type()))
		}
		lens = append([]cc.ExpressionNode{dd.AssignmentExpression}, lens...)
	}
	var arrays []*Type
	t := f.Type()
	for a, ok := t.(*cc.ArrayType); ok && len(arrays) < len(lens); a, ok = t.(*cc.ArrayType) {
		expr, err := r.length(lens[len(arrays)])
		if err != nil {
			return nil, err
		}
		arrays = append(arrays, &Type{Kind: Array, Len: a.Len(), LenExpr: expr})
		t = a.Elem()
	}
	elem, err := r.typ(t)
	if err != nil {
		return nil, err
	}
	for i := len(arrays) - 1; i >= 0; i-- {
		arrays[i].Elem, elem = elem, arrays[i]
	}
	return elem, nil
}

// length returns an array's length, a C constant expression, as Go source:
// shim.h's enumerators are their Go constants (HL_ARGS_SIZE / 8 is
// ArgsSize / 8).
func (r *shimReader) length(e cc.ExpressionNode) (string, error) {
	var b strings.Builder
	for _, tok := range cc.NodeTokens(e) {
		s := tok.SrcStr()
		switch {
		case tok.Ch == rune(cc.IDENTIFIER) && r.consts[s] != "":
			s = r.consts[s]
		case tok.Ch == rune(cc.INTCONST) && strings.Trim(s, "0123456789") == "":
		case len(s) == 1 && strings.Contains("+-*/()", s):
		default:
			return "", fmt.Errorf("array length %s: gen writes in Go the lengths of decimal integers, shim.h's enumerators and + - * / ( ) alone", cc.NodeSource(e))
		}
		b.WriteString(s + " ")
	}
	return strings.TrimSpace(b.String()), nil
}

// function adds a function that shim.h declares.
func (r *shimReader) function(d *cc.Declarator) error {
	c := d.Name()
	rest, ok := strings.CutPrefix(c, shimPrefix)
	if !ok {
		return fmt.Errorf("%s: not named %s...", c, shimPrefix)
	}
	fn := &Func{CName: c, GoName: camel(rest)}
	if err := r.claim(fn.GoName, c, shimPrefix); err != nil {
		return err
	}
	params := map[string]string{} // the parameters' C names by Go name
	ft := d.Type().(*cc.FunctionType)
	if ft.IsVariadic() {
		return fmt.Errorf("%s: variadic: cgo calls no variadic function", c)
	}
	for i, prm := range ft.Parameters() {
		if prm.Type().Kind() == cc.Void {
			continue
		}
		if prm.Name() == "" {
			return fmt.Errorf("%s: parameter %d has no name, which Go's would keep", c, i+1)
		}
		t, err := r.typ(prm.Type().Decay())
		if err != nil {
			return fmt.Errorf("%s: parameter %s: %w", c, prm.Name(), err)
		}
		goName := r.param(prm.Name())
		if prev, ok := params[goName]; ok {
			return fmt.Errorf("%s: parameters %s and %s would both be Go's %s", c, prev, prm.Name(), goName)
		}
		params[goName] = prm.Name()
		fn.Params = append(fn.Params, Param{CName: prm.Name(), GoName: goName, Type: t})
	}
	if rt := ft.Result(); rt.Kind() != cc.Void {
		t, err := r.typ(rt)
		if err != nil {
			return fmt.Errorf("%s: result: %w", c, err)
		}
		if t.Kind == Pointer && t.Const && t.Elem != nil && t.Elem.Kind == Scalar && t.Elem.C == "char" {
			t = &Type{Kind: String}
		}
		fn.Result = t
	}
	r.shim.Funcs = append(r.shim.Funcs, fn)
	return nil
}

// param names a parameter as the bindings name theirs (see param): the C
// name, with an underscore appended where it is a Go keyword or a name
// that the function's body uses: one of reserved, the Go type of one of
// shimScalars (a body converts a result to it) or the Go name of one of
// shim.h's structs. Other predeclared names (max) it keeps: the body uses
// none.
func (r *shimReader) param(c string) string {
	rename := token.IsKeyword(c) || reserved[c]
	for _, s := range shimScalars {
		rename = rename || s[0] == c
	}
	for _, t := range r.structs {
		rename = rename || t.Go == c
	}
	if rename {
		return c + "_"
	}
	return c
}

// typ maps a C type of shim.h's declarations to Go: the scalars of
// shimScalars, shim.h's structs and pointers to these or to void.
func (r *shimReader) typ(t cc.Type) (*Type, error) {
	c := typeSpelling(t)
	if x := r.structs[c]; x != nil {
		return x, nil
	}
	if s, ok := shimScalars[c]; ok {
		return &Type{Kind: Scalar, Go: s[0], C: s[1]}, nil
	}
	if p, ok := t.(*cc.PointerType); ok && t.Typedef() == nil {
		e := p.Elem()
		if e.Kind() == cc.Void {
			return &Type{Kind: Pointer, Const: e.Attributes().IsConst()}, nil
		}
		if et, err := r.typ(e); err == nil {
			return &Type{Kind: Pointer, Elem: et, Const: e.Attributes().IsConst()}, nil
		}
	}
	return nil, fmt.Errorf("gen has no Go type for C type %s", c)
}

// typeSpelling spells a C type as shim.h writes it, without qualifiers: the
// name of its typedef, if any, else the C name of a scalar, a struct's tag
// (struct hl_next) or a pointer (int *); cc's words for the others
// (pointer to function(int) returning int).
func typeSpelling(t cc.Type) string {
	if td := t.Typedef(); td != nil {
		return td.Name()
	}
	if p, ok := t.(*cc.PointerType); ok && p.Elem().Kind() != cc.Function {
		e := typeSpelling(p.Elem())
		if !strings.HasSuffix(e, "*") {
			e += " "
		}
		return e + "*"
	}
	if tag := tagName(t); tag != "" {
		return tag
	}
	if s, ok := scalars[t.Kind()]; ok {
		return cName(s[1])
	}
	return t.String()
}

// claim records that goName stands for the C name c, which begins with
// prefix, and refuses a Go name that two of shim.h's names would take, an
// empty one (c is hl_, or hl__) and C, which names cgo's package in
// zshim.go.
func (r *shimReader) claim(goName, c, prefix string) error {
	switch prev, ok := r.names[goName]; {
	case goName == "":
		return fmt.Errorf("%s: nothing after %s names it in Go, which drops underscores", c, prefix)
	case goName == "C":
		return fmt.Errorf("%s: its Go name, C, is cgo's", c)
	case ok:
		return fmt.Errorf("%s and %s would both be Go's %s", prev, c, goName)
	}
	r.names[goName] = c
	return nil
}

// camel joins the words of a C name, separated by underscores, each with
// its first letter upper-cased: mem_info is MemInfo, class_ is Class.
func camel(c string) string {
	var b strings.Builder
	for _, w := range strings.Split(c, "_") {
		if w != "" {
			b.WriteString(exported(w))
		}
	}
	return b.String()
}

// shimSource returns zshim.go, the Go of s for the package pkg.
func shimSource(s *shim, pkg string) ([]byte, error) {
	f := jen.NewFile(pkg)
	f.HeaderComment("Code generated by gen from " + shimHeader + "; DO NOT EDIT.")
	f.NoFormat = true
	f.CgoPreamble("#include \"" + shimHeader + "\"\n")
	if len(s.Consts) > 0 {
		var defs []jen.Code
		for _, c := range s.Consts {
			defs = append(defs, jen.Id(c.GoName).Op("=").Qual("C", c.CName))
		}
		f.Comment("The shim's status codes and sizes.")
		f.Const().Defs(defs...)
		f.Line()
	}
	var sizes []jen.Code
	for _, rec := range s.Records {
		var fields []jen.Code
		for _, fd := range rec.Fields {
			fields = append(fields, jen.Id(fd.GoName).Add(goType(fd.Type)))
		}
		f.Comment(rec.GoName + " is " + rec.CName + ".")
		f.Type().Id(rec.GoName).Struct(fields...)
		f.Line()
		goSize := jen.Qual("unsafe", "Sizeof").Call(jen.Id(rec.GoName).Values())
		cSize := jen.Qual("unsafe", "Sizeof").Call(jen.Qual("C", cgoName(rec.CName)).Values())
		sizes = append(sizes,
			jen.Id("_").Op("=").Index(jen.Lit(1)).Struct().Values().Index(jen.Add(goSize).Op("-").Add(cSize)),
			jen.Id("_").Op("=").Index(jen.Lit(1)).Struct().Values().Index(jen.Add(cSize).Op("-").Add(goSize)))
	}
	if len(sizes) > 0 {
		f.Comment("Each type above has the size of its C type: a pointer to one converts to a pointer to the other.")
		f.Var().Defs(sizes...)
		f.Line()
	}
	for _, fn := range s.Funcs {
		shimFunc(f, fn)
	}
	out, err := render(map[string]*jen.File{shimFile: f}, nil)
	if err != nil {
		return nil, err
	}
	return cgoFirst(out[shimFile]), nil
}

// shimFunc adds to f the Go function that calls fn.
func shimFunc(f *jen.File, fn *Func) {
	var params, args []jen.Code
	for _, p := range fn.Params {
		params = append(params, jen.Id(p.GoName).Add(goType(p.Type)))
		args = append(args, toC(p.Type, jen.Id(p.GoName)))
	}
	call := jen.Qual("C", fn.CName).Call(args...)
	var result jen.Code
	var body []jen.Code
	switch t := fn.Result; {
	case t == nil:
		body = []jen.Code{call}
	case t.Kind == String:
		result = jen.String()
		body = []jen.Code{jen.Return(jen.Qual("C", "GoString").Call(call))}
	case t.Kind == Named:
		// A struct by value: cgo's type and Go's have the same layout.
		result = goType(t)
		body = []jen.Code{
			jen.Id("r").Op(":=").Add(call),
			jen.Return(jen.Op("*").Parens(jen.Op("*").Add(goType(t))).Call(jen.Qual("unsafe", "Pointer").Call(jen.Op("&").Id("r")))),
		}
	case t.Kind == Scalar:
		result = goType(t)
		body = []jen.Code{jen.Return(jen.Id(t.Go).Call(call))}
	case voidPointer(t):
		result = goType(t)
		body = []jen.Code{jen.Return(call)}
	default: // a pointer to a scalar or a struct
		result = goType(t)
		body = []jen.Code{jen.Return(jen.Parens(goType(t)).Call(jen.Qual("unsafe", "Pointer").Call(call)))}
	}
	f.Comment(fn.GoName + " calls " + fn.CName + ".")
	f.Func().Id(fn.GoName).Params(params...).Add(result).Block(body...)
	f.Line()
}

// toC converts the Go value v of type t to the C type cgo gives the
// parameter: a scalar by conversion, a struct and a pointer, which have
// the same layout in Go and C, through unsafe.Pointer; a pointer to void,
// or to a pointer to void, is the same type in both.
func toC(t *Type, v jen.Code) jen.Code {
	switch {
	case t.Kind == Scalar:
		return jen.Qual("C", t.C).Call(v)
	case t.Kind == Named:
		return jen.Op("*").Parens(jen.Op("*").Qual("C", cgoName(t.C))).Call(jen.Qual("unsafe", "Pointer").Call(jen.Op("&").Add(v)))
	case voidPointer(t):
		return v
	default:
		return jen.Parens(cgoType(t)).Call(jen.Qual("unsafe", "Pointer").Call(v))
	}
}

// cgoType spells the Go type cgo gives the C type t.
func cgoType(t *Type) jen.Code {
	switch t.Kind {
	case Scalar:
		return jen.Qual("C", t.C)
	case Named:
		return jen.Qual("C", cgoName(t.C))
	case Pointer:
		if t.Elem == nil {
			return jen.Qual("unsafe", "Pointer")
		}
		return jen.Op("*").Add(cgoType(t.Elem))
	}
	panic(fmt.Sprintf("cgoType: a %d", t.Kind))
}

// voidPointer reports whether t is void * or a pointer to one (void **, and
// so on), which cgo gives the type Go has: unsafe.Pointer, *unsafe.Pointer.
func voidPointer(t *Type) bool {
	for ; t.Kind == Pointer; t = t.Elem {
		if t.Elem == nil {
			return true
		}
	}
	return false
}

// cgoName returns cgo's name of a struct's C name: struct hl_next is
// struct_hl_next, a typedef's name is itself.
func cgoName(c string) string {
	if tag, ok := strings.CutPrefix(c, "struct "); ok {
		return "struct_" + tag
	}
	return c
}

// cgoFirst moves the cgo preamble and import "C" of src, a file as render
// formats it, which jennifer writes after the other imports, before them,
// where the package's hand-written cgo files have them.
func cgoFirst(src []byte) []byte {
	const importC = "*/\nimport \"C\"\n\n"
	i := bytes.Index(src, []byte("\nimport "))
	j := bytes.Index(src, []byte("\n/*\n"))
	k := bytes.Index(src, []byte(importC))
	if i < 0 || j < i || k < j {
		return src
	}
	end := k + len(importC)
	return slices.Concat(src[:i+1], src[j+1:end], src[i+1:j+1], src[end:])
}
