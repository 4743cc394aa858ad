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
