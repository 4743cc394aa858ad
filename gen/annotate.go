package main

import (
	"errors"
	"fmt"
	"slices"
)

// annotate decides the cgo annotations of the package's functions from the
// library's facts (its section of the configuration file; the package doc
// has the policy). A function is marked noescape and nocallback, both or
// neither, when the facts prove that no function of the program can run
// before it returns and that it keeps no pointer argument, it takes no
// function pointer (which it might call), and it takes a pointer or a
// struct, which the annotations keep off the heap; cgo uses noescape only
// together with nocallback, and nocallback alone only adds a check. A fact
// that names a function the package does not have is listed in Unfacted and
// still holds: the headers of an older CUDA major lack
// cuLogsRegisterCallback, but the driver loaded at run time may have it.
// Lacking in every major's headers, it is an error (see checkFacts): the
// headers changed under it.
func (p *parser) annotate() {
	f := p.cfg.facts
	if !f.known {
		return
	}
	declared := map[string]*Func{}
	for _, fn := range p.pkg.Funcs {
		declared[fn.CName] = fn
	}
	named := slices.Clone(f.keeps)
	for c, run := range f.callbacks {
		named = append(named, c)
		named = append(named, slices.DeleteFunc(slices.Clone(run), func(s string) bool { return s == every })...)
	}
	for _, c := range named {
		if declared[c] == nil && !slices.Contains(p.pkg.Unfacted, c) {
			p.pkg.Unfacted = append(p.pkg.Unfacted, c)
		}
	}
	slices.Sort(p.pkg.Unfacted)
	back := f.back
	if back[every] {
		return
	}
	for _, fn := range p.pkg.Funcs {
		fn.NoEscape = !back[fn.CName] && !slices.Contains(f.keeps, fn.CName) && !p.takesFuncPtr(fn) && passesPointer(fn)
	}
}

// checkFacts returns an error for each function that gen's facts name and
// that every one of pkgs, one package generated for each CUDA major, lacks.
func checkFacts(pkgs []*Package) error {
	var errs []error
	for _, c := range pkgs[0].Unfacted {
		if !slices.ContainsFunc(pkgs, func(p *Package) bool { return !slices.Contains(p.Unfacted, c) }) {
			errs = append(errs, fmt.Errorf("the facts of package %s (its callback and keeps lines) name %s, which it does not declare", pkgs[0].Name, c))
		}
	}
	return errors.Join(errs...)
}

// takesFuncPtr reports whether a parameter of fn carries a function
// pointer, directly or in what it points to.
func (p *parser) takesFuncPtr(fn *Func) bool {
	for _, prm := range fn.Params {
		if p.carriesFuncPtr(prm.Type, map[string]bool{}) {
			return true
		}
	}
	return false
}

// passesPointer reports whether fn takes a pointer, or a struct or union by
// value (passed by its address): the arguments that escape to the heap
// unless the call is noescape and nocallback.
func passesPointer(fn *Func) bool {
	for _, prm := range fn.Params {
		t := prm.Type
		if t.Kind == Pointer || t.Kind == Named && (t.Class == ClassStruct || t.Class == ClassUnion) {
			return true
		}
	}
	return false
}

// carriesFuncPtr reports whether t is or holds a function pointer.
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
