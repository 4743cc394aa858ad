//go:build tools

// Package tools pins the tools that go generate runs, so that
// `go run golang.org/x/tools/cmd/stringer` builds the version go.mod
// names: stringer writes the String methods of highlevel's, linalg's and
// collective's enumerations (z*_string.go).
package tools

import _ "golang.org/x/tools/cmd/stringer"
