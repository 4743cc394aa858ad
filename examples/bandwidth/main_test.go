package main

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gocuda/cuda/internal/gpuprobe"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int // 0: an error
	}{
		{"1048576", 1 << 20},
		{"256MiB", 256 << 20},
		{"256mib", 256 << 20},
		{"32MB", 32000000},
		{" 4 KiB ", 4096},
		{"1kB", 1000},
		{"2GiB", 2 << 30},
		{"7B", 7},
		{"", 0},
		{"0", 0},
		{"-5", 0},
		{"MiB", 0},
		{"1.5MiB", 0},
		{"12XB", 0},
		{"99999999999999999999", 0},
		{"9999999999999GiB", 0},
	}
	for _, tt := range tests {
		got, err := parseSize(tt.in)
		if tt.want == 0 {
			if err == nil {
				t.Errorf("parseSize(%q) = %d, want an error", tt.in, got)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
}

func TestGBps(t *testing.T) {
	tests := []struct {
		size, n int
		t       time.Duration
		want    float64
	}{
		{1e9, 1, time.Second, 1},
		{256 << 20, 20, 100 * time.Millisecond, 53.6870912},
		{32e6, 10, 10 * time.Millisecond, 32},
		{1 << 20, 1, 0, 0},
	}
	for _, tt := range tests {
		if got := gbps(tt.size, tt.n, tt.t); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("gbps(%d, %d, %v) = %v, want %v", tt.size, tt.n, tt.t, got, tt.want)
		}
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-size", "lots"}, {"-n", "0"}, {"extra"}, {"-nosuch"}} {
		if err := run(args, new(bytes.Buffer)); err == nil {
			t.Errorf("run(%q) succeeded, want an error", args)
		}
	}
}

func TestRun(t *testing.T) {
	gpuprobe.Require(t)
	var out bytes.Buffer
	if err := run([]string{"-size", "1MiB", "-n", "3"}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"transfer size 1048576 bytes, 3 repetitions", "H2D", "D2H", "D2D"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
