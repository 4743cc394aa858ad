package genline

import (
	"slices"
	"testing"
)

func TestArgs(t *testing.T) {
	for _, tt := range []struct {
		src  string
		want []string
	}{
		{"package x\n\n//go:generate go run ../gen -pkg cudart -out .\n", []string{"-pkg", "cudart", "-out", "."}},
		{"//go:generate go run ../../gen -pkg base\n", []string{"-pkg", "base"}},
		{"//go:generate go run github.com/gocuda/cuda/gen -pkg x\n", []string{"-pkg", "x"}},
		// The first line that runs gen, past other tools.
		{"//go:generate go run ../protogen -x\n//go:generate go run ../gen -pkg y\n", []string{"-pkg", "y"}},
		// Other generators, even named ...gen, and gen's subdirectories.
		{"//go:generate go run ../protogen -pkg x\n", nil},
		{"//go:generate go run ./cmd/stringergen -type T\n", nil},
		{"//go:generate go run ../tools/gen -pkg x\n", nil},
		{"//go:generate go run ../gen/internal/cgoannot -x\n", nil},
		{"//go:generate go run golang.org/x/tools/cmd/stringer -type T\n", nil},
		// Not a directive.
		{"// go:generate go run ../gen -pkg x\n", nil},
		{"x := `\n  //go:generate go run ../gen -pkg x`\n", nil},
	} {
		if got := Args([]byte(tt.src)); !slices.Equal(got, tt.want) {
			t.Errorf("Args(%q) = %q, want %q", tt.src, got, tt.want)
		}
	}
}
