package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"modernc.org/cc/v4"
	"modernc.org/token"
)

// function records a function. Its C name is the one the header's
// declaration spells, before macro expansion: cuMemAlloc, declared under a
// macro that makes the symbol cuMemAlloc_v2.
func (p *parser) function(d *cc.Declarator) {
	name := d.Name()
	pos := d.NameTok().Position()
	ft := d.Type().(*cc.FunctionType)
	f := &Func{CName: p.spelling(pos, name), Symbol: name}
	if p.omitted("function", name) {
		return
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
		// An unnamed parameter is named by its position.
		gn := "p" + strconv.Itoa(i)
		if prm.Name() != "" {
			gn = param(prm.Name())
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
	for i := range f.Params {
		prm := &f.Params[i]
		prm.Out = stringOut(prm.Type) && !slices.Contains(p.cfg.facts.stringArrays, f.CName+"."+prm.CName)
	}
	p.raw[f] = p.docs.before(pos.Filename, pos.Line, true)
	p.raw[deprecatedKey{f}] = p.docs.deprecation(pos.Filename, pos.Line)
	p.pos[f] = pos.String()
	p.pkg.Funcs = append(p.pkg.Funcs, f)
}

// stringOut reports whether a parameter of type t is a string the call
// sets: const char **, whose pointee is a pointer to const char and not
// itself const. An array of strings the call reads is const char *const *
// (nvrtcCompileProgram's options), as is the symbol nvJitLinkCreate's
// inline wrapper calls, which the model binds; the facts' stringArrays
// name the others.
func stringOut(t *Type) bool {
	if t.Kind != Pointer || t.Const || t.Elem == nil {
		return false
	}
	e := t.Elem
	return e.Kind == Pointer && e.Const && e.Elem != nil && e.Elem.Kind == Scalar && e.Elem.C == "char"
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

// isConst reports whether a pointer points to const, by the qualifiers of
// the type it points to (whatever the pointer's own qualifiers).
func isConst(t *cc.PointerType) bool {
	return t.Elem().Attributes().IsConst()
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
	for _, m := range p.pkg.Makers {
		known[m.CName] = true // Go's own, calling nothing
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
