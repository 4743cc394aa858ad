package main

import "strings"

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
