package main

import (
	"sort"
	"strconv"
	"strings"

	"modernc.org/cc/v4"
)

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
