package main

import (
	"fmt"
	"strings"

	"modernc.org/cc/v4"
)

// prototypes returns C assertions, for the C side of the layout test, that
// each function's prototype in the headers is the one the model gives it:
// a wrong parameter or result type in the model fails the build of the
// test. A function with a parameter whose type the model cannot spell in C
// (a function pointer without a typedef) is left out and listed in a
// comment.
func (e *emitter) prototypes() string {
	var b, unchecked strings.Builder
	for _, fn := range e.pkg.Funcs {
		proto, ok := prototype(fn)
		if !ok {
			fmt.Fprintf(&unchecked, " %s", fn.CName)
			continue
		}
		declared := fn.CName
		if fn.Inline {
			// The model has the prototype of the symbol the inline function
			// calls (nvJitLinkCreate takes const char **, the symbol
			// __nvJitLinkCreate_13_0 const char *const *).
			declared = fn.Symbol
		}
		fmt.Fprintf(&b, "_Static_assert(__builtin_types_compatible_p(__typeof__(&%s), %s), %q);\n", declared, proto, fn.CName+": the model's prototype differs from the header's")
	}
	if unchecked.Len() > 0 {
		fmt.Fprintf(&b, "// Not checked, a parameter's type has no C spelling here:%s.\n", unchecked.String())
	}
	return b.String()
}

// prototype spells the type of a pointer to fn as the model has it:
// cudaError_t (*)(void **, size_t).
func prototype(fn *Func) (string, bool) {
	ret := "void"
	if fn.Result != nil {
		var ok bool
		if ret, ok = cDecl(fn.Result); !ok {
			return "", false
		}
	}
	var params []string
	for _, p := range fn.Params {
		s, ok := cDecl(p.Type)
		if !ok {
			return "", false
		}
		params = append(params, s)
	}
	if len(params) == 0 {
		params = []string{"void"}
	}
	return fmt.Sprintf("%s (*)(%s)", ret, strings.Join(params, ", ")), true
}

// cDecl spells a model type as a C type name, or reports that it cannot: a
// function pointer without a typedef.
func cDecl(t *Type) (string, bool) {
	switch t.Kind {
	case Scalar:
		return cName(t.C), true
	case Named:
		return t.C, true
	case String:
		return "const char *", true
	case Array:
		// GNU C spells an array type in a place that takes a type name.
		elem, ok := cDecl(t.Elem)
		return fmt.Sprintf("__typeof__(%s[%d])", elem, t.Len), ok
	case Pointer:
		elem := "void"
		if t.Elem != nil {
			var ok bool
			if elem, ok = cDecl(t.Elem); !ok {
				return "", false
			}
		}
		switch {
		case t.Const && strings.HasSuffix(elem, "*"):
			elem += " const" // a const pointer: char *const *
		case t.Const:
			elem = "const " + elem
		}
		if strings.HasSuffix(elem, "*") {
			return elem + "*", true
		}
		return elem + " *", true
	}
	return "", false
}

// constPointers sets Const on the pointers of t, a parameter's type, whose
// pointee is a const pointer (const char *const *options): cc's types
// drop the qualifiers of a pointer, so they are read from the parameter's
// declarator, where the qualifiers after the k-th * (from the left) make the
// k-th pointer from the base type const. An array parameter's element is
// the pointee of the pointer it decays to. Declarators in parentheses
// (function pointers) are left alone.
func constPointers(t *Type, prm *cc.Parameter) {
	var ptr *cc.Pointer
	switch {
	case prm.Declarator != nil && prm.Declarator.DirectDeclarator != nil && prm.Declarator.DirectDeclarator.Declarator == nil:
		ptr = prm.Declarator.Pointer
	case prm.AbstractDeclarator != nil && prm.AbstractDeclarator.DirectAbstractDeclarator == nil:
		ptr = prm.AbstractDeclarator.Pointer
	default:
		return
	}
	var quals []bool // of each *, from the base type out
	for ; ptr != nil; ptr = ptr.Pointer {
		quals = append(quals, qualifiedConst(ptr.TypeQualifiers))
	}
	var levels []*Type // the model's pointers, from the base type out
	for x := t; x != nil && x.Kind == Pointer; x = x.Elem {
		levels = append([]*Type{x}, levels...)
	}
	for k := 1; k < len(levels) && k-1 < len(quals); k++ {
		if quals[k-1] {
			levels[k].Const = true
		}
	}
}

// qualifiedConst reports whether type qualifiers include const.
func qualifiedConst(q *cc.TypeQualifiers) bool {
	for ; q != nil; q = q.TypeQualifiers {
		if q.TypeQualifier != nil && q.TypeQualifier.Case == cc.TypeQualifierConst {
			return true
		}
	}
	return false
}
