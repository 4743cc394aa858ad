package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"modernc.org/cc/v4"
	"modernc.org/token"
)

// config says what to generate: flags of the command, plain data here.
type config struct {
	dir      string   // header directory
	headers  []string // headers whose functions are the package's
	pkg      string
	prefixes []string
	errType  string // C name of the status type
	lib      string // the shared library's file name
	libEnv   string // the environment variable that may name its path
	out      string // output directory
	dest     string // directory the package will live in
	// perThread is the macro that, defined, makes the headers select the
	// per-thread default stream entry points (_ptds, _ptsz), or "".
	perThread string
	// typeHeaders are included for their types and constants only.
	typeHeaders []string
	// includeDirs are further include directories; what they declare is
	// not the package's.
	includeDirs []string
	// use are the directories of generated packages whose types this one
	// references instead of emitting them again.
	use []string
	// omit are prefixes of functions that are not bound.
	omit []string
}

// parser turns a translation unit into a Package.
type parser struct {
	cfg   config
	dir   string // absolute header directory
	ast   *cc.AST
	ccfg  *cc.Config
	src   string // the translation unit's #include lines
	names *namer
	pkg   *Package
	docs  docReader

	records map[string]*Record // by Go name
	enums   map[string]*Enum   // by Go name
	typedef map[string]*Typedef
	typeC   map[string]string // C type name (tag or typedef) -> Go name
	values  map[string]string // Go name -> C name of every enumerator
	raw     map[any]string    // raw doc comments, converted once all names are known
	pos     map[*Func]string  // where each function is declared
	// wrappers maps a function to the static inline function of the main
	// headers whose whole body forwards to it, the name C code calls
	// (nvJitLinkCreate for __nvJitLinkCreate_13_0).
	wrappers map[string]*cc.Declarator
	// used are the files whose declarations belong to a package of
	// cfg.use, and ext the types those declare, by C name (tag or typedef).
	used map[string]bool
	ext  map[string]*Type
}

// parse parses the package cfg describes.
func parse(cfg config) (*Package, error) {
	p, err := newParser(cfg, new(cache))
	if err != nil {
		return nil, err
	}
	p.run()
	if err := p.perThreadSymbols(); err != nil {
		return nil, err
	}
	return p.pkg, nil
}

// hostConfig returns the C front end's configuration of the host, made
// once: cc.NewConfig runs the C compiler.
var hostConfig = sync.OnceValues(func() (*cc.Config, error) {
	return cc.NewConfig("linux", "amd64")
})

// newParser parses the headers, and the packages cfg.use names through c.
func newParser(cfg config, c *cache) (*parser, error) {
	host, err := hostConfig()
	if err != nil {
		return nil, fmt.Errorf("configuring the C front end: %w", err)
	}
	ccfg := *host
	dir, err := filepath.Abs(cfg.dir)
	if err != nil {
		return nil, err
	}
	dirs := []string{dir}
	for _, d := range cfg.includeDirs {
		a, err := filepath.Abs(d)
		if err != nil {
			return nil, err
		}
		dirs = append(dirs, a)
	}
	ccfg.IncludePaths = append(append(dirs[:1:1], "@"), append(dirs[1:], ccfg.IncludePaths...)...)
	ccfg.SysIncludePaths = append(dirs, ccfg.SysIncludePaths...)
	ccfg.EvalAllMacros = true
	ccfg.Header = true
	var src strings.Builder
	for _, h := range slices.Concat(cfg.headers, cfg.typeHeaders) {
		fmt.Fprintf(&src, "#include %q\n", h)
	}
	ast, err := translate(&ccfg, src.String())
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", strings.Join(cfg.headers, ", "), err)
	}
	p := &parser{
		cfg:      cfg,
		dir:      dir,
		ast:      ast,
		ccfg:     &ccfg,
		src:      src.String(),
		names:    newNamer(cfg.prefixes),
		pkg:      &Package{Name: cfg.pkg, Headers: slices.Concat(cfg.headers, cfg.typeHeaders), Library: cfg.lib, LibraryEnv: cfg.libEnv},
		docs:     docReader{files: map[string][]string{}},
		records:  map[string]*Record{},
		enums:    map[string]*Enum{},
		typedef:  map[string]*Typedef{},
		typeC:    map[string]string{},
		raw:      map[any]string{},
		pos:      map[*Func]string{},
		wrappers: map[string]*cc.Declarator{},
		used:     map[string]bool{},
		ext:      map[string]*Type{},
	}
	for _, d := range cfg.use {
		if err := p.use(d, c); err != nil {
			return nil, fmt.Errorf("using %s: %w", d, err)
		}
	}
	return p, nil
}

// use makes the files and types of the generated package in dir, parsed by
// c, the ones this package references.
func (p *parser) use(dir string, c *cache) error {
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	path, err := packagePath(absDir)
	if err != nil {
		return err
	}
	u, err := c.load(dir)
	if err != nil {
		return err
	}
	if p.pkg.Uses == nil {
		p.pkg.Uses = map[string]*Package{}
	}
	p.pkg.Uses[path] = u.pkg
	for f := range u.used {
		p.used[f] = true
	}
	for c, x := range u.ext {
		p.ext[c] = x
	}
	for l := u.ast.TranslationUnit; l != nil; l = l.TranslationUnit {
		if f := l.ExternalDeclaration.Position().Filename; u.own(f) {
			p.used[abs(f)] = true
		}
	}
	for _, m := range u.ast.Macros {
		if f := m.Position().Filename; u.own(f) {
			p.used[abs(f)] = true
		}
	}
	for c, goName := range u.typeC {
		if x := u.exported(goName, c); x != nil {
			x.Pkg = path
			p.ext[c] = x
		}
	}
	return nil
}

// exported returns the type the package emitted under a Go name, as a
// package that uses it refers to it by the C name c, or nil.
func (p *parser) exported(goName, c string) *Type {
	t := &Type{Kind: Named, Go: goName, C: c}
	switch {
	case p.enums[goName] != nil:
		t.Class, t.Under = ClassEnum, p.enums[goName].Under
	case p.records[goName] != nil:
		t.Class = p.classOf(goName)
	case p.typedef[goName] != nil:
		td := p.typedef[goName]
		switch td.Class {
		case "":
			t.Class, t.Under = td.Type.Class, td.Type.Under
		case ClassScalar:
			t.Class, t.Under = ClassScalar, td.Type
		default:
			t.Class = td.Class
		}
	default:
		return nil
	}
	return t
}

// translate parses src, a list of #include lines, with the configuration's
// predefined macros.
func translate(cfg *cc.Config, src string) (*cc.AST, error) {
	return cc.Translate(cfg, []cc.Source{
		{Name: "<predefined>", Value: cfg.Predefined},
		{Name: "<builtin>", Value: cc.Builtin},
		{Name: "<input>", Value: src},
	})
}

// own reports whether a declaration at pos is the package's: in its header
// directory and not in a file of a package it uses.
func (p *parser) own(pos string) bool {
	if strings.HasPrefix(pos, "<") {
		return false // <predefined>, <builtin>, <input>
	}
	a := abs(pos)
	return strings.HasPrefix(a, p.dir+string(filepath.Separator)) && !p.used[a]
}

func abs(path string) string {
	if a, err := filepath.Abs(path); err == nil {
		return a
	}
	return path
}

func (p *parser) main(pos string) bool {
	for _, h := range p.cfg.headers {
		if abs(pos) == filepath.Join(p.dir, h) {
			return true
		}
	}
	return false
}

func (p *parser) skip(kind, name, reason string) {
	p.pkg.Skipped = append(p.pkg.Skipped, Skip{Kind: kind, CName: name, Reason: reason})
}

// run turns the translation unit into p.pkg, all but the per-thread
// symbols (see perThreadSymbols).
func (p *parser) run() {
	// Pass 1: name every tagged type and typedef, so that uses anywhere
	// resolve to Go names.
	var decls []*cc.Declaration
	for l := p.ast.TranslationUnit; l != nil; l = l.TranslationUnit {
		ed := l.ExternalDeclaration
		if !p.own(ed.Position().Filename) {
			continue
		}
		switch {
		case ed.Case == cc.ExternalDeclarationDecl && ed.Declaration != nil:
			decls = append(decls, ed.Declaration)
		case ed.Case == cc.ExternalDeclarationFuncDef && p.main(ed.Position().Filename):
			if fd := ed.FunctionDefinition; fd.Declarator.IsStatic() {
				if callee := forwardsTo(fd); callee != "" {
					p.wrappers[callee] = fd.Declarator
				}
			}
		}
	}
	p.values = map[string]string{}
	for _, d := range decls {
		for _, ts := range specifiers(d) {
			if e := ts.EnumSpecifier; e != nil {
				for l := e.EnumeratorList; l != nil; l = l.EnumeratorList {
					p.values[p.names.constant(l.Enumerator.Token.SrcStr())] = l.Enumerator.Token.SrcStr()
				}
			}
		}
	}
	for _, d := range decls {
		p.nameTags(d)
	}
	for _, d := range decls {
		for l := d.InitDeclaratorList; l != nil; l = l.InitDeclaratorList {
			if dd := l.InitDeclarator.Declarator; dd.IsTypename() {
				p.nameTypedef(dd)
			}
		}
	}
	// Pass 2: the declarations themselves.
	for _, d := range decls {
		p.tags(d)
		for l := d.InitDeclaratorList; l != nil; l = l.InitDeclaratorList {
			dd := l.InitDeclarator.Declarator
			switch {
			case dd.IsTypename():
				p.typedefDecl(dd)
			case dd.Type().Kind() == cc.Function:
				if p.main(dd.Position().Filename) {
					p.function(dd)
				}
			}
		}
	}
	p.macros()
	p.finish()
}

// forwardsTo returns the function that a definition's whole body calls with
// the definition's own parameters, in order, and returns the result of
// (return f(a, b);), or "". A body that passes anything else
// (cublasLtMatrixLayoutInit passes a sizeof too) is not a mere wrapper.
func forwardsTo(fd *cc.FunctionDefinition) string {
	var stmts []*cc.Statement
	for l := fd.CompoundStatement.BlockItemList; l != nil; l = l.BlockItemList {
		switch it := l.BlockItem; {
		case it.Statement != nil:
			stmts = append(stmts, it.Statement)
		case it.Case == cc.BlockItemDecl && isFuncName(it.Declaration):
			// The front end declares __func__ in every body.
		default:
			return ""
		}
	}
	if len(stmts) != 1 {
		return ""
	}
	j := stmts[0].JumpStatement
	if j == nil || j.Case != cc.JumpStatementReturn {
		return ""
	}
	e := j.ExpressionList
	if l, ok := e.(*cc.ExpressionList); ok && l.ExpressionList == nil {
		e = l.AssignmentExpression
	}
	call, ok := e.(*cc.PostfixExpression)
	if !ok || call.Case != cc.PostfixExpressionCall {
		return ""
	}
	id, ok := call.PostfixExpression.(*cc.PrimaryExpression)
	if !ok || id.Case != cc.PrimaryExpressionIdent {
		return ""
	}
	args := call.ArgumentExpressionList
	for _, prm := range fd.Declarator.Type().(*cc.FunctionType).Parameters() {
		if prm.Type().Kind() == cc.Void {
			continue
		}
		if args == nil {
			return ""
		}
		a, ok := args.AssignmentExpression.(*cc.PrimaryExpression)
		if !ok || a.Case != cc.PrimaryExpressionIdent || a.Token.SrcStr() != prm.Name() {
			return ""
		}
		args = args.ArgumentExpressionList
	}
	if args != nil {
		return ""
	}
	return id.Token.SrcStr()
}

// isFuncName reports whether d declares only __func__.
func isFuncName(d *cc.Declaration) bool {
	l := d.InitDeclaratorList
	return l != nil && l.InitDeclaratorList == nil && l.InitDeclarator.Declarator.Name() == "__func__"
}

// specifiers returns the type specifiers of a declaration.
func specifiers(d *cc.Declaration) []*cc.TypeSpecifier {
	var r []*cc.TypeSpecifier
	for s := d.DeclarationSpecifiers; s != nil; s = s.DeclarationSpecifiers {
		if s.TypeSpecifier != nil {
			r = append(r, s.TypeSpecifier)
		}
	}
	return r
}

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
			p.record(t, c, c, p.typeC[c], file, line)
		}
	}
}

func (p *parser) claim(goName, c, kind string) bool {
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
// their own, named after the field that holds them.
func (p *parser) record(t cc.Type, c, cexpr, goName, file string, line int) {
	if _, ok := p.records[goName]; ok || !p.claim(goName, c, "record") {
		return
	}
	r := &Record{CName: c, CExpr: cexpr, GoName: goName, Union: t.Kind() == cc.Union, Size: t.Size(), Align: int64(t.Align())}
	p.records[goName] = r
	p.pkg.Records = append(p.pkg.Records, r)
	if file != "" {
		p.raw[r] = p.docs.before(file, line, false)
	}
	var n int
	var field func(int) *cc.Field
	switch x := t.(type) {
	case *cc.StructType:
		n, field = x.NumFields(), x.FieldByIndex
	case *cc.UnionType:
		n, field = x.NumFields(), x.FieldByIndex
	}
	anon := 0
	for i := 0; i < n; i++ {
		f := field(i)
		if f.IsBitfield() {
			p.skip("field", c+"."+f.Name(), "bit fields are not supported yet")
			continue
		}
		fd := Field{CName: f.Name(), Offset: f.Offset(), Size: f.Type().Size()}
		ft := f.Type()
		elem := ft
		for elem.Kind() == cc.Array {
			elem = elem.(*cc.ArrayType).Elem()
		}
		if (elem.Kind() == cc.Struct || elem.Kind() == cc.Union) && tagName(elem) == "" && elem.Typedef() == nil {
			// A nested anonymous struct or union.
			var sub, subExpr string
			if fd.CName == "" {
				sub = fmt.Sprintf("%sAnon%d", goName, anon)
				anon++
				fd.Embedded = true
			} else {
				sub = goName + exported(fd.CName)
				idx := ""
				for x := ft; x.Kind() == cc.Array; x = x.(*cc.ArrayType).Elem() {
					idx += "[0]"
				}
				subExpr = fmt.Sprintf("__typeof__(((%s *)0)->%s%s)", cexpr, fd.CName, idx)
			}
			p.record(elem, "", subExpr, sub, "", 0)
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
	uniqueFields(r)
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
		p.record(t, name, name, goName, pos.Filename, pos.Line)
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

// scalars maps C arithmetic kinds to Go types and cgo spellings.
var scalars = map[cc.Kind][2]string{
	cc.Bool:      {"bool", "_Bool"},
	cc.Char:      {"byte", "char"},
	cc.SChar:     {"int8", "schar"},
	cc.UChar:     {"uint8", "uchar"},
	cc.Short:     {"int16", "short"},
	cc.UShort:    {"uint16", "ushort"},
	cc.Int:       {"int32", "int"},
	cc.UInt:      {"uint32", "uint"},
	cc.Long:      {"int64", "long"},
	cc.ULong:     {"uint64", "ulong"},
	cc.LongLong:  {"int64", "longlong"},
	cc.ULongLong: {"uint64", "ulonglong"},
	cc.Float:     {"float32", "float"},
	cc.Double:    {"float64", "double"},
}

// scalar returns the Go scalar for an arithmetic C type, or nil.
func (p *parser) scalar(t cc.Type) *Type {
	k := t.Kind()
	if k == cc.Enum {
		k = t.(*cc.EnumType).UnderlyingType().Kind()
	}
	s, ok := scalars[k]
	if !ok {
		return nil
	}
	if td := t.Typedef(); td != nil && !p.own(td.Position().Filename) {
		s[1] = td.Name() // size_t, uint32_t: cgo spells these as C.size_t
	}
	return &Type{Kind: Scalar, Go: s[0], C: s[1]}
}

// typ maps a C type to Go, or returns nil when it cannot.
func (p *parser) typ(t cc.Type) *Type {
	if td := t.Typedef(); td != nil {
		if goName, ok := p.typeC[td.Name()]; ok && p.own(td.Position().Filename) {
			return p.named(goName, td.Name(), t)
		}
		if x := p.ext[td.Name()]; x != nil {
			return x
		}
	}
	return p.shape(t)
}

// shape maps a C type to Go by its structure, ignoring its own typedef name.
func (p *parser) shape(t cc.Type) *Type {
	switch x := t.(type) {
	case *cc.PredefinedType:
		if x.Kind() == cc.Void {
			return nil
		}
		return p.scalar(x)
	case *cc.PointerType:
		e := x.Elem()
		if e.Kind() == cc.Function {
			return &Type{Kind: FuncPtr}
		}
		if e.Kind() == cc.Void {
			return &Type{Kind: Pointer, Const: e.Attributes().IsConst()}
		}
		et := p.typ(e)
		if et == nil {
			return nil
		}
		return &Type{Kind: Pointer, Elem: et, Const: e.Attributes().IsConst()}
	case *cc.ArrayType:
		et := p.typ(x.Elem())
		if et == nil || x.IsVLA() {
			return nil
		}
		return &Type{Kind: Array, Len: x.Len(), Elem: et}
	case *cc.StructType, *cc.UnionType, *cc.EnumType:
		c := tagName(t)
		if goName, ok := p.typeC[c]; ok {
			return p.named(goName, c, t)
		}
		if x := p.ext[c]; x != nil {
			return x
		}
		if x, ok := t.(*cc.EnumType); ok {
			return p.scalar(x)
		}
	}
	return nil
}

func (p *parser) named(goName, c string, t cc.Type) *Type {
	r := &Type{Kind: Named, Go: goName, C: c}
	switch t.Kind() {
	case cc.Struct:
		r.Class = ClassStruct
	case cc.Union:
		r.Class = ClassUnion
	case cc.Enum:
		r.Class, r.Under = ClassEnum, p.scalar(t)
	case cc.Ptr:
		if t.(*cc.PointerType).Elem().Kind() == cc.Function {
			r.Class = ClassFuncPtr
		} else {
			r.Class = ClassHandle
		}
	case cc.Array:
		return p.shape(t) // the typedef is an alias of the array
	default:
		r.Class, r.Under = ClassScalar, p.scalar(t)
		if r.Under == nil {
			return nil
		}
	}
	return r
}

// function records a function. Its C name is the one the header's
// declaration spells, before macro expansion: cuMemAlloc, declared under a
// macro that makes the symbol cuMemAlloc_v2.
func (p *parser) function(d *cc.Declarator) {
	name := d.Name()
	pos := d.NameTok().Position()
	ft := d.Type().(*cc.FunctionType)
	f := &Func{CName: p.spelling(pos, name), Symbol: name}
	for _, o := range p.cfg.omit {
		if strings.HasPrefix(name, o) {
			p.skip("function", name, "omitted by -omit "+o)
			return
		}
	}
	if ft.IsVariadic() {
		p.skip("function", name, "variadic")
		return
	}
	for i, prm := range ft.Parameters() {
		if prm.Type().Kind() == cc.Void {
			continue
		}
		pt := p.paramType(prm.Type())
		if pt == nil {
			p.skip("function", name, fmt.Sprintf("parameter %s has unsupported type %s", prm.Name(), prm.Type()))
			return
		}
		constPointers(pt, prm)
		gn := param(prm.Name(), i)
		if prm.Name() == "" {
			gn = "p" + strconv.Itoa(i)
		}
		f.Params = append(f.Params, Param{CName: prm.Name(), GoName: gn, Type: pt})
	}
	if rt := ft.Result(); rt.Kind() != cc.Void {
		if f.Result = p.typ(rt); f.Result == nil {
			p.skip("function", name, "unsupported result type "+rt.String())
			return
		}
		if f.Result.Kind == Pointer && f.Result.Elem != nil && f.Result.Elem.Kind == Scalar && f.Result.Elem.C == "char" {
			f.Result = &Type{Kind: String}
		}
	}
	if w := p.wrappers[name]; w != nil {
		// C code calls the wrapper: it names the function and documents it.
		f.CName, f.Inline, pos = w.Name(), true, w.NameTok().Position()
	}
	p.raw[f] = p.docs.before(pos.Filename, pos.Line, true)
	p.raw[deprecatedKey{f}] = p.docs.deprecation(pos.Filename, pos.Line)
	p.pos[f] = pos.String()
	p.pkg.Funcs = append(p.pkg.Funcs, f)
}

// spelling returns the identifier the header has at pos, or name when there
// is none there.
func (p *parser) spelling(pos token.Position, name string) string {
	lines := p.docs.lines(pos.Filename)
	if pos.Line < 1 || pos.Line > len(lines) || pos.Column < 1 || pos.Column > len(lines[pos.Line-1]) {
		return name
	}
	rest := lines[pos.Line-1][pos.Column-1:]
	end := strings.IndexFunc(rest, func(r rune) bool { return r != '_' && !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	if end < 0 {
		end = len(rest)
	}
	if end == 0 {
		return name
	}
	return rest[:end]
}

// paramType maps a parameter type: arrays decay and const char * is a Go
// string.
func (p *parser) paramType(t cc.Type) *Type {
	if a, ok := t.(*cc.ArrayType); ok {
		et := p.typ(a.Elem())
		if et == nil {
			return nil
		}
		return &Type{Kind: Pointer, Elem: et, Const: a.Elem().Attributes().IsConst()}
	}
	if pt, ok := t.(*cc.PointerType); ok && t.Typedef() == nil {
		if e := pt.Elem(); e.Kind() == cc.Char && e.Typedef() == nil && isConst(pt) {
			return &Type{Kind: String}
		}
	}
	return p.typ(t)
}

// isConst reports whether a pointer points to const.
func isConst(t *cc.PointerType) bool {
	return strings.HasPrefix(t.String(), "pointer to const ")
}

// macros collects constants and type aliases from object-like macros. A
// macro that names a function (cuMemAlloc, defined as cuMemAlloc_v2) is
// that function's C name.
func (p *parser) macros() {
	names := make([]string, 0, len(p.ast.Macros))
	for n := range p.ast.Macros {
		names = append(names, n)
	}
	sort.Strings(names)
	declared := map[string]*Func{}
	for _, f := range p.pkg.Funcs {
		declared[f.CName] = f
	}
	for _, n := range names {
		// A macro that renames a function the headers declare under its
		// versioned name (cublas_v2.h: #define cublasSgemm cublasSgemm_v2)
		// is the name C code calls it by.
		m := p.ast.Macros[n]
		rl := m.ReplacementList()
		if m.IsFnLike || !p.own(m.Position().Filename) || len(rl) != 1 || declared[n] != nil {
			continue
		}
		if f := declared[rl[0].SrcStr()]; f != nil && !f.Inline && f.CName == f.Symbol {
			f.CName = n
		}
	}
	funcs := map[string]bool{}
	for _, f := range p.pkg.Funcs {
		funcs[f.CName] = true
	}
	for _, n := range names {
		m := p.ast.Macros[n]
		rl := m.ReplacementList()
		if m.IsFnLike || strings.HasPrefix(n, "_") || !p.own(m.Position().Filename) || len(rl) == 0 || funcs[n] {
			continue
		}
		if len(rl) == 1 && rl[0].Ch == rune(cc.IDENTIFIER) {
			target := rl[0].SrcStr()
			if goTarget, ok := p.typeC[target]; ok {
				// A type spelled by a macro: a Go alias.
				p.alias(n, p.names.typ(n), &Type{Kind: Named, Go: goTarget, C: target, Class: p.classOf(goTarget)}, func(x any) {
					p.raw[x] = p.docs.macro(m.Position().Filename, m.Position().Line)
				})
				continue
			}
		}
		c := &Const{CName: n, GoName: p.names.constant(n)}
		switch v := m.Value().(type) {
		case cc.Int64Value:
			c.Value, c.Int = strconv.FormatInt(int64(v), 10), true
		case cc.UInt64Value:
			c.Value, c.Int = strconv.FormatUint(uint64(v), 10), true
		case cc.Float64Value:
			c.Value = strconv.FormatFloat(float64(v), 'g', -1, 64)
			if !strings.ContainsAny(c.Value, ".e") {
				c.Value += ".0"
			}
		case cc.StringValue:
			c.Value = strconv.Quote(strings.TrimSuffix(string(v), "\x00"))
		default:
			p.skip("macro", n, "not a constant expression")
			continue
		}
		if len(rl) == 1 && c.Int && rl[0].Ch == rune(cc.PPNUMBER) {
			// Keep the header's spelling (hex stays hex), without C suffixes.
			lit := strings.TrimRight(rl[0].SrcStr(), "uUlL")
			if _, err := strconv.ParseUint(lit, 0, 64); err == nil || strings.HasPrefix(lit, "-") {
				c.Value = lit
			}
		}
		if !p.claim(c.GoName, n, "macro") {
			continue
		}
		pos := m.Position()
		p.raw[c] = p.docs.macro(pos.Filename, pos.Line)
		p.pkg.Consts = append(p.pkg.Consts, c)
	}
	for _, f := range p.pkg.Funcs {
		f.GoName = p.names.function(f.CName)
		if !p.claim(f.GoName, f.CName, "function") {
			f.GoName = ""
		}
	}
	kept := p.pkg.Funcs[:0]
	for _, f := range p.pkg.Funcs {
		if f.GoName != "" {
			kept = append(kept, f)
		}
	}
	p.pkg.Funcs = kept
}

// perThreadSymbols parses the headers again as compiled for the per-thread
// default stream (with cfg.perThread defined) and records, for each function,
// the symbol its declaration then names: cuMemcpyHtoD_v2_ptds where the
// default is cuMemcpyHtoD_v2. A declaration is found again by its position.
// Only the package's own generation needs this pass, not the packages that
// use it, which do not read what it sets.
func (p *parser) perThreadSymbols() error {
	if p.cfg.perThread == "" {
		return nil
	}
	ast, err := translate(p.ccfg, fmt.Sprintf("#define %s 1\n%s", p.cfg.perThread, p.src))
	if err != nil {
		return fmt.Errorf("parsing for the per-thread default stream: %w", err)
	}
	p.pkg.PerThread = p.cfg.perThread
	symbols := map[string]string{} // position -> name
	var inline []string            // functions the headers define
	for l := ast.TranslationUnit; l != nil; l = l.TranslationUnit {
		ed := l.ExternalDeclaration
		if fd := ed.FunctionDefinition; ed.Case == cc.ExternalDeclarationFuncDef && p.main(ed.Position().Filename) {
			inline = append(inline, fd.Declarator.Name())
		}
		if ed.Case != cc.ExternalDeclarationDecl || ed.Declaration == nil {
			continue
		}
		for il := ed.Declaration.InitDeclaratorList; il != nil; il = il.InitDeclaratorList {
			if d := il.InitDeclarator.Declarator; d.Type().Kind() == cc.Function {
				symbols[d.NameTok().Position().String()] = d.Name()
			}
		}
	}
	known := map[string]bool{}
	for _, f := range p.pkg.Funcs {
		if s := symbols[p.pos[f]]; s != "" && s != f.Symbol {
			f.PerThread = s
		}
		known[f.CName], known[f.Symbol], known[f.PerThread] = true, true, true
	}
	// An inline function that C code may reach by a function's name, but
	// that is none of the names bound here (cuGetProcAddress_v2_ptsz).
	for _, n := range inline {
		if !known[n] {
			p.pkg.Wrappers = append(p.pkg.Wrappers, n)
		}
	}
	return nil
}

// finish sorts, converts the doc comments and decides the cgo annotations.
func (p *parser) finish() {
	sort.Slice(p.pkg.Enums, func(i, j int) bool { return p.pkg.Enums[i].GoName < p.pkg.Enums[j].GoName })
	sort.Slice(p.pkg.Records, func(i, j int) bool { return p.pkg.Records[i].GoName < p.pkg.Records[j].GoName })
	sort.Slice(p.pkg.Typedefs, func(i, j int) bool { return p.pkg.Typedefs[i].GoName < p.pkg.Typedefs[j].GoName })
	sort.Slice(p.pkg.Consts, func(i, j int) bool { return p.pkg.Consts[i].GoName < p.pkg.Consts[j].GoName })
	if p.cfg.errType != "" {
		p.pkg.Error = p.tagType(p.cfg.errType, ClassEnum)
	}
	links := map[string]string{}
	for g, c := range p.names.taken {
		links[strings.TrimPrefix(strings.TrimPrefix(strings.TrimPrefix(c, "struct "), "enum "), "union ")] = g
	}
	conv := func(raw string) string { return doxygen(raw, links) }
	for _, f := range p.pkg.Funcs {
		f.Doc = withDeprecation(conv(p.raw[f]), conv(p.raw[deprecatedKey{f}]))
		f.NoEscape, f.NoCallback = p.annotations(f)
	}
	for _, e := range p.pkg.Enums {
		e.Doc = conv(p.raw[e])
		for i := range e.Values {
			e.Values[i].Doc = conv(p.raw[enumKey{e, i}])
		}
	}
	for _, r := range p.pkg.Records {
		r.Doc = conv(p.raw[r])
		for i := range r.Fields {
			r.Fields[i].Doc = conv(p.raw[fieldKey{r, i}])
		}
	}
	for _, t := range p.pkg.Typedefs {
		t.Doc = conv(p.raw[t])
	}
	for _, c := range p.pkg.Consts {
		c.Doc = conv(p.raw[c])
	}
	p.deprecateTypes(conv)
}

// annotations decides the cgo annotations of a function (see the package
// doc). noescape: no pointer argument is used after the call returns, which
// rules out asynchronous calls, host registration and graph nodes that keep
// pointers. nocallback: nothing the call can reach calls a function pointer,
// which rules out parameters that carry function pointers and calls that may
// run destructors registered earlier.
func (p *parser) annotations(f *Func) (noescape, nocallback bool) {
	carries := false
	for _, prm := range f.Params {
		if p.carriesFuncPtr(prm.Type, map[string]bool{}) {
			carries = true
		}
	}
	n := f.CName
	retains := strings.Contains(n, "Async") || strings.Contains(n, "Graph") || strings.Contains(n, "HostRegister")
	destroys := false
	for _, s := range []string{"Destroy", "Release", "Reset", "Exit"} {
		destroys = destroys || strings.Contains(n, s)
	}
	return !retains && !carries, !carries && !destroys
}

func (p *parser) carriesFuncPtr(t *Type, seen map[string]bool) bool {
	switch {
	case t == nil:
		return false
	case t.Kind == FuncPtr, t.Kind == Named && t.Class == ClassFuncPtr:
		return true
	case t.Kind == Pointer, t.Kind == Array:
		return p.carriesFuncPtr(t.Elem, seen)
	case t.Kind == Named && (t.Class == ClassStruct || t.Class == ClassUnion):
		if seen[t.Go] {
			return false
		}
		seen[t.Go] = true
		r := p.records[t.Go]
		if r == nil {
			if td := p.typedef[t.Go]; td != nil {
				return p.carriesFuncPtr(td.Type, seen)
			}
			return false
		}
		for _, f := range r.Fields {
			if p.carriesFuncPtr(f.Type, seen) {
				return true
			}
		}
	}
	return false
}

// docReader finds the comment that documents a declaration in the header's
// text, by line.
type docReader struct {
	files map[string][]string
}

func (r *docReader) lines(file string) []string {
	if l, ok := r.files[file]; ok {
		return l
	}
	b, err := os.ReadFile(file)
	if err != nil {
		r.files[file] = nil
		return nil
	}
	l := strings.Split(string(b), "\n")
	r.files[file] = l
	return l
}
