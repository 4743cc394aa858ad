// Package genline finds the //go:generate line that runs gen, the
// repository's generator, in a generated package's source: the golden
// tests find the packages gen generates by it, and run it as go generate
// does.
package genline

import (
	"bytes"
	"regexp"
	"strings"
)

// line matches a //go:generate line that runs gen by a relative path made
// of ../ steps (../gen, ../../gen) or by its import path, and no other
// command, even one whose name ends in gen.
var line = regexp.MustCompile(`(?m)^//go:generate go run (?:(?:\.\./)+gen|github\.com/gocuda/cuda/gen) (.*)$`)

// Args returns the arguments of the first //go:generate line of src that
// runs gen, or nil when there is none.
func Args(src []byte) []string {
	// The regexp, anchored at a line's start, finds no literal to skip
	// to: it would scan every byte of the large generated files, which
	// have no such line.
	if !bytes.Contains(src, []byte("//go:generate go run ")) {
		return nil
	}
	m := line.FindSubmatch(src)
	if m == nil {
		return nil
	}
	return strings.Fields(string(m[1]))
}
