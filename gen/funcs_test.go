package main

import (
	"testing"

	"modernc.org/cc/v4"
)

// TestIsConst checks isConst against the qualifiers C gives the pointed-to
// type, whatever the pointer's own (a const pointer prints as "const
// pointer to ...").
func TestIsConst(t *testing.T) {
	cfg, err := hostConfig()
	if err != nil {
		t.Skip("no C front end:", err)
	}
	ast, err := translate(cfg, `
const char *constChar;
char *plain;
char *const constPointer;
const char *const both;
volatile const char *volatileConst;
char const *postfix;
`)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"constChar": true, "plain": false, "constPointer": false, "both": true, "volatileConst": true, "postfix": true}
	for l := ast.TranslationUnit; l != nil; l = l.TranslationUnit {
		d := l.ExternalDeclaration.Declaration
		if d == nil || d.InitDeclaratorList == nil {
			continue
		}
		dd := d.InitDeclaratorList.InitDeclarator.Declarator
		w, ok := want[dd.Name()]
		if !ok {
			continue
		}
		delete(want, dd.Name())
		pt, ok := dd.Type().(*cc.PointerType)
		if !ok {
			t.Errorf("%s: %s is not a pointer", dd.Name(), dd.Type())
			continue
		}
		if got := isConst(pt); got != w {
			t.Errorf("isConst(%s %s) = %v, want %v", dd.Name(), pt, got, w)
		}
	}
	for n := range want {
		t.Errorf("%s not found", n)
	}
}

// TestStringOut checks which parameter types are strings the call sets:
// const char ** only, not an array of strings it reads (const char *const
// *), a buffer (char *) or a string (const char *).
func TestStringOut(t *testing.T) {
	char := &Type{Kind: Scalar, Go: "byte", C: "char"}
	ptr := func(elem *Type, isConst bool) *Type { return &Type{Kind: Pointer, Elem: elem, Const: isConst} }
	for _, tc := range []struct {
		name string
		t    *Type
		want bool
	}{
		{"const char **", ptr(ptr(char, true), false), true},
		{"const char *const *", ptr(ptr(char, true), true), false},
		{"char **", ptr(ptr(char, false), false), false},
		{"char *", ptr(char, false), false},
		{"void **", ptr(ptr(nil, false), false), false},
		{"const int **", ptr(ptr(&Type{Kind: Scalar, Go: "int32", C: "int"}, true), false), false},
	} {
		if got := stringOut(tc.t); got != tc.want {
			t.Errorf("stringOut(%s) = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestDocumentedArray checks that a parameter is an array where its line of
// the parameter list says so, and only its own line counts.
func TestDocumentedArray(t *testing.T) {
	doc := "Launches.\n\nParameters:\n\n  - f: Kernel\n  - kernelParams: Array of pointers to kernel parameters\n  - extra: Extra options\n"
	for name, want := range map[string]bool{"kernelParams": true, "extra": false, "f": false, "missing": false} {
		if got := documentedArray(doc, name); got != want {
			t.Errorf("documentedArray(%s) = %v, want %v", name, got, want)
		}
	}
}
