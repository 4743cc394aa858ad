package main

import (
	"bytes"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/gocuda/cuda/internal/gpuprobe"
)

func TestBadInput(t *testing.T) {
	for _, c := range []struct{ size, n int }{{0, 1}, {-1, 1}, {1, 0}, {1, -1}} {
		if err := run(io.Discard, 0, c.size, c.n); err == nil {
			t.Errorf("%d bytes, %d copies accepted", c.size, c.n)
		}
	}
}

func TestRun(t *testing.T) {
	gpuprobe.Require(t)
	var out bytes.Buffer
	if err := run(&out, 0, 1<<20, 3); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 6 || !strings.Contains(lines[0], "1048576 bytes per copy, 3 copies") {
		t.Fatalf("output:\n%s", out.String())
	}
	for i, name := range []string{"H2D pinned", "H2D pageable", "D2H pinned", "D2H pageable", "D2D"} {
		f := strings.Fields(strings.TrimPrefix(lines[i+1], name))
		if !strings.HasPrefix(lines[i+1], name) || len(f) != 2 || f[1] != "GB/s" {
			t.Errorf("line %q: want %q, a rate, GB/s", lines[i+1], name)
			continue
		}
		if rate, err := strconv.ParseFloat(f[0], 64); err != nil || rate <= 0 {
			t.Errorf("%s: rate %q, want a positive number", name, f[0])
		}
	}
}
