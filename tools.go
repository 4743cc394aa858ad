//go:build tools

// Package tools pins, in go.mod, the versions of the Go tools that the
// Makefile runs with go run. It is never built.
package tools

import (
	_ "golang.org/x/perf/cmd/benchstat"
)
