package main

import (
	"fmt"

	"github.com/dave/jennifer/jen"
	"modernc.org/cc/v4"
)

// Makers. A static inline function of a package's own headers whose body
// only fills a local struct from its parameters and returns it
// (driver_functions.h's make_cudaExtent) has no symbol to call; gen writes
// it in Go, with its C name's Go form (Make_cudaExtent), doing the same
// assignments without a call into C.

// isMaker reports whether fd is a maker: a body of one declaration of a
// local struct, assignments of parameters to its members, and a return of
// it.
func isMaker(fd *cc.FunctionDefinition) bool {
	_, _, ok := makerBody(fd)
	return ok
}

// makerBody returns the members a maker's body assigns, each with the
// parameter assigned, and the local it returns.
func makerBody(fd *cc.FunctionDefinition) (sets [][2]string, local string, ok bool) {
	params := map[string]bool{}
	for _, prm := range fd.Declarator.Type().(*cc.FunctionType).Parameters() {
		params[prm.Name()] = true
	}
	var returned string
	for l := fd.CompoundStatement.BlockItemList; l != nil; l = l.BlockItemList {
		it := l.BlockItem
		switch {
		case it.Case == cc.BlockItemDecl && isFuncName(it.Declaration):
		case it.Case == cc.BlockItemDecl:
			il := it.Declaration.InitDeclaratorList
			if local != "" || il == nil || il.InitDeclaratorList != nil || il.InitDeclarator.Initializer != nil {
				return nil, "", false
			}
			// Its type is the result's: the body returns it.
			local = il.InitDeclarator.Declarator.Name()
		case it.Statement != nil && it.Statement.ExpressionStatement != nil && returned == "":
			e := it.Statement.ExpressionStatement.ExpressionList
			if l, ok := e.(*cc.ExpressionList); ok && l.ExpressionList == nil {
				e = l.AssignmentExpression
			}
			a, ok := e.(*cc.AssignmentExpression)
			if !ok || a.Case != cc.AssignmentExpressionAssign {
				return nil, "", false
			}
			sel, ok := a.UnaryExpression.(*cc.PostfixExpression)
			if !ok || sel.Case != cc.PostfixExpressionSelect || ident(sel.PostfixExpression) != local || local == "" {
				return nil, "", false
			}
			v := ident(a.AssignmentExpression)
			if !params[v] {
				return nil, "", false
			}
			sets = append(sets, [2]string{sel.Token2.SrcStr(), v})
		case it.Statement != nil && it.Statement.JumpStatement != nil && returned == "":
			j := it.Statement.JumpStatement
			if j.Case != cc.JumpStatementReturn {
				return nil, "", false
			}
			e := j.ExpressionList
			if l, ok := e.(*cc.ExpressionList); ok && l.ExpressionList == nil {
				e = l.AssignmentExpression
			}
			if returned = ident(e); returned == "" || returned != local {
				return nil, "", false
			}
		default:
			return nil, "", false
		}
	}
	return sets, local, returned != "" && len(sets) > 0
}

// ident returns the identifier an expression is, or "".
func ident(e cc.ExpressionNode) string {
	if id, ok := e.(*cc.PrimaryExpression); ok && id.Case == cc.PrimaryExpressionIdent {
		return id.Token.SrcStr()
	}
	return ""
}

// maker records a maker, unless a parameter or its result has no Go type
// or a member it assigns is not a field of the result's Go struct.
func (p *parser) maker(fd *cc.FunctionDefinition) {
	d := fd.Declarator
	name := d.Name()
	sets, _, _ := makerBody(fd)
	ft := d.Type().(*cc.FunctionType)
	m := &Maker{CName: name} // named with the functions (nameMakers)
	byName := map[string]string{}
	for _, prm := range ft.Parameters() {
		pt := p.paramType(prm.Type())
		if pt == nil || pt.Kind == String {
			p.skip("function", name, "a maker's parameter "+prm.Name()+" has no Go type")
			return
		}
		gn := param(prm.Name())
		byName[prm.Name()] = gn
		m.Params = append(m.Params, Param{CName: prm.Name(), GoName: gn, Type: pt})
	}
	m.Result = p.typ(ft.Result())
	if m.Result == nil || m.Result.Kind != Named || m.Result.Class != ClassStruct {
		p.skip("function", name, "a maker's result is not a struct of the package")
		return
	}
	r := p.records[m.Result.Go]
	if r == nil {
		p.skip("function", name, "a maker's result is not a struct of the package")
		return
	}
	seen := map[string]bool{}
	for _, s := range sets {
		if seen[s[0]] {
			p.skip("function", name, "a maker assigns "+s[0]+" twice")
			return
		}
		seen[s[0]] = true
		field := ""
		for _, f := range r.Fields {
			if f.CName == s[0] && !f.Accessor {
				field = f.GoName
			}
		}
		if field == "" {
			p.skip("function", name, "a maker assigns "+s[0]+", which is no field of "+r.GoName)
			return
		}
		m.Sets = append(m.Sets, [2]string{field, byName[s[1]]})
	}
	pos := d.NameTok().Position()
	p.raw[m] = p.docs.before(pos.Filename, pos.Line, true)
	p.pkg.Makers = append(p.pkg.Makers, m)
}

// makerFunc emits a maker as Go.
func (e *emitter) makerFunc(f *jen.File, m *Maker) {
	var params, fields []jen.Code
	for _, p := range m.Params {
		params = append(params, jen.Id(p.GoName).Add(goType(p.Type)))
	}
	for _, s := range m.Sets {
		fields = append(fields, jen.Id(s[0]).Op(":").Id(s[1]))
	}
	text := fmt.Sprintf("%s is %s, the headers' inline function: it returns a %s of its "+
		"arguments, as %s does, without a call into C.", m.GoName, m.CName, m.Result.Go, m.CName)
	text = wrap(text)
	if m.Doc != "" {
		text += "\n\n" + m.Doc
	}
	f.Add(docComment(text))
	f.Func().Id(m.GoName).Params(params...).Add(goType(m.Result)).Block(
		jen.Return(jen.Add(goType(m.Result)).Values(fields...)),
	)
}

// nameMakers names the makers as functions are named, after them, and
// drops one whose name is taken.
func (p *parser) nameMakers() {
	kept := p.pkg.Makers[:0]
	for _, m := range p.pkg.Makers {
		m.GoName = p.names.function(m.CName)
		if p.claim(m.GoName, m.CName, "function") {
			kept = append(kept, m)
		}
	}
	p.pkg.Makers = kept
}
