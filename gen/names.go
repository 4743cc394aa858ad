package main

import (
	"go/token"
	"strings"
	"unicode"
	"unicode/utf8"
)

// namer applies the naming rule (see the package doc) and records every
// package-level Go name, so that two C names mapping to one Go name are
// caught instead of producing code that does not compile.
type namer struct {
	prefixes []string          // longest first
	taken    map[string]string // Go name -> C name
}

func newNamer(prefixes []string) *namer {
	p := append([]string(nil), prefixes...)
	// Longest prefix first, so that "CUDART_" wins over "CUDA".
	for i := 1; i < len(p); i++ {
		for j := i; j > 0 && len(p[j]) > len(p[j-1]); j-- {
			p[j], p[j-1] = p[j-1], p[j]
		}
	}
	return &namer{prefixes: p, taken: map[string]string{}}
}

// trim drops the package prefix from a C name when what remains is a usable
// Go identifier.
func (n *namer) trim(c string) string {
	for _, p := range n.prefixes {
		if rest, ok := strings.CutPrefix(c, p); ok && rest != "" {
			if r, _ := utf8.DecodeRuneInString(rest); unicode.IsLetter(r) {
				return rest
			}
		}
	}
	return c
}

// function names a function: the prefix is dropped, the rest is kept.
func (n *namer) function(c string) string { return exported(n.trim(c)) }

// typ names a type: the prefix and a _t or _st suffix are dropped.
func (n *namer) typ(c string) string {
	c = strings.TrimPrefix(c, "struct ")
	c = strings.TrimPrefix(c, "union ")
	c = strings.TrimPrefix(c, "enum ")
	for _, s := range []string{"_t", "_st"} {
		if rest, ok := strings.CutSuffix(c, s); ok && rest != "" {
			c = rest
			break
		}
	}
	return exported(n.trim(c))
}

// constant names an enumerator or a macro: the prefix is dropped.
func (n *namer) constant(c string) string { return exported(n.trim(c)) }

// claim records that the Go name stands for the C name and reports whether
// the Go name was free (or already stood for the same C name).
func (n *namer) claim(goName, c string) bool {
	if prev, ok := n.taken[goName]; ok {
		return prev == c
	}
	n.taken[goName] = c
	return true
}

// exported makes an identifier exported: leading underscores are dropped
// and the first letter is upper-cased.
func exported(s string) string {
	t := strings.TrimLeft(s, "_")
	if t == "" {
		return "X" + s
	}
	r, size := utf8.DecodeRuneInString(t)
	if !unicode.IsLetter(r) {
		return "X" + t
	}
	return string(unicode.ToUpper(r)) + t[size:]
}

// reserved are names a parameter may not take in a generated function
// body: those the body uses, and _, which it could not pass on.
var reserved = map[string]bool{
	"C": true, "unsafe": true, "fp": true, "err": true, "r": true, "_": true,
}

// param names a parameter: the C name, with an underscore appended when it
// is a Go keyword, a predeclared identifier, a name the body uses or _.
func param(c string) string {
	if token.IsKeyword(c) || predeclared[c] || reserved[c] {
		return c + "_"
	}
	return c
}

var predeclared = map[string]bool{}

func init() {
	for _, s := range strings.Fields(`any bool byte comparable complex64 complex128 error float32 float64
		int int8 int16 int32 int64 rune string uint uint8 uint16 uint32 uint64 uintptr
		true false iota nil append cap clear close complex copy delete imag len make max min new
		panic print println real recover`) {
		predeclared[s] = true
	}
}
