package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"modernc.org/cc/v4"
)

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
	// handles are the pointee of each handle typedef, by Go name (see
	// constHandles).
	handles map[string]handle
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
	// files are the files of the package's own declarations and macros,
	// which a package that uses it adds to its used.
	files map[string]bool
	// uses are the parsers of the packages of cfg.use, by import path.
	uses map[string]*parser
}

// parse parses the package cfg describes for each of cfg.targets, the
// packages it uses through c, and returns its model (see oneModel).
func parse(cfg config, c *cache) (*Package, error) {
	var ps []*parser
	for _, arch := range cfg.targets() {
		cfg.arch = arch
		p, err := newParser(cfg, c)
		if err != nil {
			return nil, err
		}
		p.run()
		ps = append(ps, p)
	}
	p, err := oneModel(ps)
	if err != nil {
		return nil, err
	}
	return p.pkg, nil
}

// oneModel returns the parse of ps, a package's parses for the first of
// targets and maybe more (see config.targets), that holds its model, once
// they are shown to give the same code, with its doc comments, per-thread
// symbols and cgo annotations.
func oneModel(ps []*parser) (*parser, error) {
	if err := sameCode(ps); err != nil {
		return nil, err
	}
	p := ps[0]
	p.pkg.Targets = targets[:len(ps)]
	p.document()
	if err := p.perThreadSymbols(); err != nil {
		return nil, err
	}
	p.annotate()
	return p, nil
}

// hostConfig returns the C front end's configuration of the host C
// compiler, its predefined macros and include paths, made once:
// cc.NewConfig runs the compiler.
var hostConfig = sync.OnceValues(func() (*cc.Config, error) {
	return cc.NewConfig("linux", targets[0])
})

// targetConfig returns the C front end's configuration for linux/arch: the
// host's, with arch's ABI, which lays the types out.
func targetConfig(arch string) (*cc.Config, error) {
	host, err := hostConfig()
	if err != nil {
		return nil, fmt.Errorf("configuring the C front end: %w", err)
	}
	abi, err := cc.NewABI("linux", arch)
	if err != nil {
		return nil, fmt.Errorf("configuring the C front end: %w", err)
	}
	c := *host
	c.ABI = abi
	return &c, nil
}

// newParser parses the headers, and the packages cfg.use names through c.
func newParser(cfg config, c *cache) (*parser, error) {
	target, err := targetConfig(cfg.arch)
	if err != nil {
		return nil, err
	}
	ccfg := *target
	dir, err := filepath.Abs(cfg.headerDir)
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
		err = fmt.Errorf("parsing %s: %w", strings.Join(cfg.headers, ", "), err)
		if strings.Contains(err.Error(), "include file not found") {
			// Name where gen looked, and which data file names it.
			where := "the headers' directories " + strings.Join(dirs, ", ")
			if cfg.major != nil {
				where += " (" + cfg.major.file + " names them)"
			}
			err = fmt.Errorf("%w\ngen looked in %s: put the missing header there, from the toolkit or the library that has it", err, where)
		}
		return nil, err
	}
	p := &parser{
		cfg:      cfg,
		dir:      dir,
		ast:      ast,
		ccfg:     &ccfg,
		src:      src.String(),
		names:    newNamer(cfg.prefixes),
		pkg:      &Package{Name: cfg.pkg, Headers: slices.Concat(cfg.headers, cfg.typeHeaders), Library: cfg.lib, LibraryEnv: cfg.libEnv, Guide: cfg.guide, Attrs: cfg.attrs, AttrPlurals: cfg.attrPlurals},
		docs:     docReader{files: map[string][]string{}},
		records:  map[string]*Record{},
		enums:    map[string]*Enum{},
		typedef:  map[string]*Typedef{},
		handles:  map[string]handle{},
		typeC:    map[string]string{},
		raw:      map[any]string{},
		pos:      map[*Func]string{},
		wrappers: map[string]*cc.Declarator{},
		used:     map[string]bool{},
		ext:      map[string]*Type{},
		uses:     map[string]*parser{},
	}
	for _, u := range cfg.use {
		if err := p.use(u, c); err != nil {
			return nil, fmt.Errorf("using %s: %w", u.pkg, err)
		}
	}
	return p, nil
}

// use makes the files and types of the generated package that ucfg
// describes, parsed by c, the ones this package references.
func (p *parser) use(ucfg *config, c *cache) error {
	path, err := packagePath(ucfg.dest)
	if err != nil {
		return err
	}
	u, err := c.load(*ucfg, p.cfg.arch, p.cfg.major)
	if err != nil {
		return err
	}
	if p.pkg.Uses == nil {
		p.pkg.Uses = map[string]*Package{}
	}
	p.pkg.Uses[path] = u.pkg
	p.uses[path] = u
	for f := range u.used {
		p.used[f] = true
	}
	for c, x := range u.ext {
		p.ext[c] = x
	}
	for f := range u.files {
		p.used[f] = true
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

// run turns the translation unit into p.pkg, all but the doc comments (see
// document) and the per-thread symbols (see perThreadSymbols), notes its
// files and drops it: a package's parse lives as long as gen, for the
// packages that use it, and with their ASTs the parses would be twice as
// large a heap for the garbage collector to scan.
func (p *parser) run() {
	// Pass 1: name every tagged type and typedef, so that uses anywhere
	// resolve to Go names.
	var decls []*cc.Declaration
	var makers []*cc.FunctionDefinition
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
				} else if isMaker(fd) {
					makers = append(makers, fd)
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
	for _, fd := range makers {
		p.maker(fd)
	}
	p.macros()
	p.nameMakers()
	p.constHandles()
	p.finish()
	p.files = map[string]bool{}
	for l := p.ast.TranslationUnit; l != nil; l = l.TranslationUnit {
		if f := l.ExternalDeclaration.Position().Filename; p.own(f) {
			p.files[abs(f)] = true
		}
	}
	for _, m := range p.ast.Macros {
		if f := m.Position().Filename; p.own(f) {
			p.files[abs(f)] = true
		}
	}
	p.ast = nil
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

// finish sorts the declarations.
func (p *parser) finish() {
	sort.Slice(p.pkg.Enums, func(i, j int) bool { return p.pkg.Enums[i].GoName < p.pkg.Enums[j].GoName })
	sort.Slice(p.pkg.Records, func(i, j int) bool { return p.pkg.Records[i].GoName < p.pkg.Records[j].GoName })
	sort.Slice(p.pkg.Typedefs, func(i, j int) bool { return p.pkg.Typedefs[i].GoName < p.pkg.Typedefs[j].GoName })
	sort.Slice(p.pkg.Consts, func(i, j int) bool { return p.pkg.Consts[i].GoName < p.pkg.Consts[j].GoName })
	if p.cfg.errType != "" {
		p.pkg.Error = p.tagType(p.cfg.errType, ClassEnum)
	}
}

// document converts the doc comments. The C ABI does not change them, so
// only the parse for the first target converts them (see sameCode).
func (p *parser) document() {
	links := map[string]string{}
	for g, c := range p.names.taken {
		links[strings.TrimPrefix(strings.TrimPrefix(strings.TrimPrefix(c, "struct "), "enum "), "union ")] = g
	}
	conv := func(raw string) string { return doxygen(raw, links) }
	for _, f := range p.pkg.Funcs {
		f.Doc = withDeprecation(conv(p.raw[f]), conv(p.raw[deprecatedKey{f}]))
	}
	for _, m := range p.pkg.Makers {
		m.Doc = conv(p.raw[m])
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
