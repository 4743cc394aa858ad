package main

import (
	"bytes"
	"encoding/csv"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"
)

func TestNormalizeName(t *testing.T) {
	tests := []struct{ in, want string }{
		{"BenchmarkGetDevice-16", "GetDevice"},
		{"BenchmarkGetDevice", "GetDevice"},
		{"BenchmarkAllReduce/size=256MiB-32", "AllReduce/size=256MiB"},
		{"BenchmarkAllReduce/size=1GiB", "AllReduce/size=1GiB"},
		{"BenchmarkSgemm8192-8", "Sgemm8192"},
	}
	for _, tt := range tests {
		r := benchfmt.NewReader(strings.NewReader(tt.in+"\t1\t1 ns/op\n"), "x")
		if !r.Scan() {
			t.Fatalf("%s: no record: %v", tt.in, r.Err())
		}
		res, ok := r.Result().(*benchfmt.Result)
		if !ok {
			t.Fatalf("%s: got %v, want a result", tt.in, r.Result())
		}
		if got := normalizeName(res.Name); got != tt.want {
			t.Errorf("normalizeName(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestReadSource(t *testing.T) {
	var warn bytes.Buffer
	got, err := readSource([]string{"testdata/go.txt"}, &warn)
	if err != nil {
		t.Fatal(err)
	}
	nan := math.NaN()
	tests := []struct {
		name     string
		ns, mbps float64
		runs     int
	}{
		{"GetDevice", 70.1, nan, 5},
		{"LaunchEmpty", 2180, nan, 4}, // even: mean of the middle two
		{"EventRecord", 945, nan, 5},
		{"H2DPinned", 10760000, 24946, 5},
		{"AllReduce/size=256MiB", 3150000, nan, 3},
		{"Regenerate", 1530000000, nan, 1},
		{"LaunchArgsUnknown", 2400, nan, 1},
	}
	for _, tt := range tests {
		s := got[tt.name]
		if s == nil {
			t.Errorf("%s: missing", tt.name)
			continue
		}
		if !same(s.ns, tt.ns) || !same(s.mbps, tt.mbps) || s.runs != tt.runs {
			t.Errorf("%s = {ns %v, MB/s %v, runs %d}, want {%v, %v, %d}",
				tt.name, s.ns, s.mbps, s.runs, tt.ns, tt.mbps, tt.runs)
		}
	}
	if len(got) != len(tests) {
		t.Errorf("got %d benchmarks, want %d", len(got), len(tests))
	}
	if !strings.Contains(warn.String(), "go.txt:28") {
		t.Errorf("warnings %q do not name the malformed line go.txt:28", warn.String())
	}
}

func TestReadSourceMissing(t *testing.T) {
	if _, err := readSource([]string{"testdata/nonexistent.txt"}, io.Discard); err == nil {
		t.Error("reading a missing file: no error")
	}
	got, err := readSource([]string{"testdata/cudacore.txt"}, io.Discard)
	if err != nil || len(got) != 0 {
		t.Errorf("reading an empty file = %v, %v; want no results and no error", got, err)
	}
}

// same reports whether x and y are equal to 1e-9 relative, or both NaN.
func same(x, y float64) bool {
	if math.IsNaN(x) || math.IsNaN(y) {
		return math.IsNaN(x) && math.IsNaN(y)
	}
	return math.Abs(x-y) <= 1e-9*math.Abs(y)
}

func TestRows(t *testing.T) {
	var results [numSources]map[string]*stats
	for src, name := range []string{"c.txt", "go.txt", "cupy.txt", "cudacore.txt"} {
		r, err := readSource([]string{filepath.Join("testdata", name)}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		results[src] = r
	}
	rows := buildRows(results)
	nan := math.NaN()
	tests := []struct {
		name, unit  string
		cells       []string // C, Go, CuPy, cuda.core
		goC, cupyC  float64
		target, met string
	}{
		{"GetDevice", "ns", []string{"68.0", "70.1", "210", "—"}, 70.1 / 68, 210.0 / 68, "≤ 73 ns", "yes"},
		{"LaunchEmpty", "µs", []string{"2.00", "2.18", "—", "—"}, 1.09, nan, "≤ 1.05x", "no"},
		{"LaunchEmpty", "µs", []string{"2.10", "2.18", "—", "—"}, 2180.0 / 2100, nan, "≤ 1.05x", "yes"},
		{"EventRecord", "ns", []string{"900", "945", "—", "—"}, 1.05, nan, "≤ C + 50 ns", "yes"},
		{"H2DPinned", "GB/s", []string{"25.0", "24.9", "24.0", "—"}, 10760000.0 / 10737418, 11184811.0 / 10737418, "≥ 0.98x C's GB/s", "yes"},
		{"AllReduce/size=256MiB", "ms", []string{"3.00", "3.15", "—", "—"}, 1.05, nan, "≤ 1.053x", "yes"},
		{"Regenerate", "s", []string{"—", "1.53", "—", "—"}, nan, nan, "≤ 5 s", "yes"},
	}
	if len(rows) != len(tests) {
		t.Fatalf("got %d rows, want %d", len(rows), len(tests))
	}
	for i, tt := range tests {
		r := &rows[i]
		if r.name != tt.name {
			t.Errorf("row %d is %s, want %s", i, r.name, tt.name)
			continue
		}
		unit, cells := r.values()
		if unit != tt.unit || strings.Join(cells, " ") != strings.Join(tt.cells, " ") {
			t.Errorf("%s: values = %s %q, want %s %q", tt.name, unit, cells, tt.unit, tt.cells)
		}
		if !same(r.ratio(srcGo), tt.goC) || !same(r.ratio(srcCuPy), tt.cupyC) || !same(r.ratio(srcCudaCore), nan) {
			t.Errorf("%s: ratios Go %v, CuPy %v, cuda.core %v; want %v, %v, NaN", tt.name,
				r.ratio(srcGo), r.ratio(srcCuPy), r.ratio(srcCudaCore), tt.goC, tt.cupyC)
		}
		if got := r.targetString(); got != tt.target {
			t.Errorf("%s: target %q, want %q", tt.name, got, tt.target)
		}
		if got := r.metString("—"); got != tt.met {
			t.Errorf("%s: met %q, want %q", tt.name, got, tt.met)
		}
	}
}

func TestMet(t *testing.T) {
	res := func(ns float64) *stats { return &stats{ns: ns, mbps: math.NaN(), runs: 5} }
	tests := []struct {
		name string
		tgt  target
		c, g *stats
		want string
	}{
		{"ratio met", target{ratioTarget, 1.05}, res(100), res(105), "yes"},
		{"ratio not met", target{ratioTarget, 1.05}, res(100), res(106), "no"},
		{"ratio without C", target{ratioTarget, 1.05}, nil, res(100), "—"},
		{"absolute met", target{absTarget, 73}, nil, res(73), "yes"},
		{"absolute not met", target{absTarget, 73}, res(50), res(73.5), "no"},
		{"over C met", target{overCTarget, 50}, res(900), res(950), "yes"},
		{"over C not met", target{overCTarget, 50}, res(900), res(951), "no"},
		{"over C without C", target{overCTarget, 50}, nil, res(10), "—"},
		{"no target", target{}, res(1), res(2), "—"},
	}
	for _, tt := range tests {
		r := row{spec: spec{name: "X", target: tt.tgt}}
		r.res[srcC], r.res[srcGo] = tt.c, tt.g
		if got := r.metString("—"); got != tt.want {
			t.Errorf("%s: met = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestRun(t *testing.T) {
	dir := t.TempDir()
	csvPath := filepath.Join(dir, "out.csv")
	pngPath := filepath.Join(dir, "out.png")
	var stdout, stderr bytes.Buffer
	err := run([]string{
		"-go", "testdata/go.txt", "-c", "testdata/c.txt",
		"-cupy", "testdata/cupy.txt", "-cudacore", "testdata/cudacore.txt",
		"-csv", csvPath, "-png", pngPath, "-title", "Test GPU, 2026-01-02",
	}, &stdout, &stderr)
	if err != nil {
		t.Fatal(err)
	}

	wantTable := `**Test GPU, 2026-01-02**

| operation | unit | C | Go | CuPy | cuda.core | Go/C | target | met |
|:--|:--|--:|--:|--:|--:|--:|:--|:--|
| cudaGetDevice | ns | 68.0 | 70.1 | 210 | — | 1.03x | ≤ 73 ns | yes |
| empty kernel launch, throughput | µs | 2.00 | 2.18 | — | — | 1.09x | ≤ 1.05x | no |
| empty kernel launch, vs C on the same driver path | µs | 2.10 | 2.18 | — | — | 1.04x | ≤ 1.05x | yes |
| event record | ns | 900 | 945 | — | — | 1.05x | ≤ C + 50 ns | yes |
| H2D pinned, 256 MiB | GB/s | 25.0 | 24.9 | 24.0 | — | 1.00x | ≥ 0.98x C's GB/s | yes |
| NCCL all-reduce 2 GPUs, 256 MiB | ms | 3.00 | 3.15 | — | — | 1.05x | ≤ 1.053x | yes |
| regenerate all bindings (2 cores, dev machine) | s | — | 1.53 | — | — | — | ≤ 5 s | yes |

Go/C is Go's time over C's: lower is faster; for bandwidth rows it is C's GB/s over Go's.
`
	if got := stdout.String(); got != wantTable {
		t.Errorf("table:\n%s\nwant:\n%s", got, wantTable)
	}
	for _, s := range []string{"go:LaunchEmpty (4)", "go:AllReduce/size=256MiB (3)", "c:GetDevice (1)"} {
		if !strings.Contains(stderr.String(), s) {
			t.Errorf("stderr %q does not warn about %s", stderr.String(), s)
		}
	}

	wantCSV := `name,label,kind,c_ns,go_ns,cupy_ns,cudacore_ns,c_gbps,go_gbps,cupy_gbps,cudacore_gbps,go_runs,c_runs,go_c,cupy_c,cudacore_c,target,met
GetDevice,cudaGetDevice,time,68,70.1,210,,,,,,5,1,1.03088,3.08824,,≤ 73 ns,yes
LaunchEmpty,"empty kernel launch, throughput",time,2000,2180,,,,,,,4,1,1.09,,,≤ 1.05x,no
LaunchEmpty,"empty kernel launch, vs C on the same driver path",time,2100,2180,,,,,,,4,1,1.0381,,,≤ 1.05x,yes
EventRecord,event record,time,900,945,,,,,,,5,1,1.05,,,≤ C + 50 ns,yes
H2DPinned,"H2D pinned, 256 MiB",bandwidth,10737418,10760000,11184811,,25,24.946,24,,5,1,1.0021,1.04167,,≥ 0.98x C's GB/s,yes
AllReduce/size=256MiB,"NCCL all-reduce 2 GPUs, 256 MiB",time,3000000,3150000,,,,,,,3,1,1.05,,,≤ 1.053x,yes
Regenerate,"regenerate all bindings (2 cores, dev machine)",time,,1530000000,,,,,,,1,,,,,≤ 5 s,yes
`
	data, err := os.ReadFile(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != wantCSV {
		t.Errorf("CSV:\n%s\nwant:\n%s", data, wantCSV)
	}
	records, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil {
		t.Fatalf("reading CSV back: %v", err)
	}
	if len(records) != 8 || len(records[0]) != len(csvHeader) {
		t.Errorf("CSV has %d records of %d fields, want 8 of %d", len(records), len(records[0]), len(csvHeader))
	}

	f, err := os.Open(pngPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("decoding PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() < 1000 || b.Dy() < 800 {
		t.Errorf("PNG is %v, want about 1500x1200", b)
	}
}

func TestRunErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"no -go", []string{"-c", "testdata/c.txt"}},
		{"missing Go file", []string{"-go", "testdata/nonexistent.txt"}},
		{"missing second Go file", []string{"-go", "testdata/go.txt,testdata/nonexistent.txt"}},
		{"missing C file", []string{"-go", "testdata/go.txt", "-c", "testdata/nonexistent.txt"}},
		{"unknown flag", []string{"-go", "testdata/go.txt", "-nosuchflag"}},
		{"extra argument", []string{"-go", "testdata/go.txt", "extra"}},
	}
	for _, tt := range tests {
		if err := run(tt.args, io.Discard, io.Discard); err == nil {
			t.Errorf("%s: no error", tt.name)
		}
	}
}

func TestRunGoOnly(t *testing.T) {
	// Without C there is nothing to chart, but the table is still written.
	pngPath := filepath.Join(t.TempDir(), "out.png")
	var stdout, stderr bytes.Buffer
	if err := run([]string{"-go", "testdata/go.txt", "-png", pngPath}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), "| cudaGetDevice | ns | — | 70.1 | — | — | — | ≤ 73 ns | yes |") {
		t.Errorf("table without C:\n%s", stdout.String())
	}
	if _, err := os.Stat(pngPath); err == nil {
		t.Error("a chart was written without C results")
	}
	if !strings.Contains(stderr.String(), "no chart") {
		t.Errorf("stderr %q does not say no chart was written", stderr.String())
	}
}

// TestRowComparedWithOtherC checks that a row naming another C benchmark
// takes that one's result.
func TestRowComparedWithOtherC(t *testing.T) {
	var results [numSources]map[string]*stats
	results[srcGo] = map[string]*stats{"H2DPageableUnstaged": {ns: 30, mbps: math.NaN(), runs: 5}}
	results[srcC] = map[string]*stats{"H2DPageable": {ns: 20, mbps: math.NaN(), runs: 5}}
	results[srcCuPy] = map[string]*stats{}
	results[srcCudaCore] = map[string]*stats{}
	rows := buildRows(results)
	if len(rows) != 1 || rows[0].name != "H2DPageableUnstaged" {
		t.Fatalf("rows = %+v, want one, H2DPageableUnstaged", rows)
	}
	if got := rows[0].ratio(srcGo); got != 1.5 {
		t.Errorf("Go/C = %v, want 1.5 (Go's 30 ns over H2DPageable's 20 ns)", got)
	}
}

// TestTwoProcessRows checks the rows of the two-process all-reduce: Go's
// lines (with GOMAXPROCS) pair with the C twin's of the same name, the
// collective's with the raw C twin's, under issue 31's targets: 0.98x C's
// bus bandwidth from 2 MiB, 0.95x below.
func TestTwoProcessRows(t *testing.T) {
	goText := `BenchmarkAllReduceProcesses/size=32KiB-32         	   25000	     21000 ns/op	1560.38 MB/s	         1.560 busbw-GB/s
BenchmarkAllReduceProcesses/size=2MiB-32          	   17000	     29000 ns/op	72315.59 MB/s	        72.32 busbw-GB/s
BenchmarkCollectiveAllReduceProcesses/size=32KiB-32	    4000	    150000 ns/op	 218.45 MB/s	         0.2185 busbw-GB/s
BenchmarkCollectiveAllReduceProcesses/size=2MiB-32 	   17000	     28500 ns/op	73584.28 MB/s	        73.58 busbw-GB/s
`
	cText := `BenchmarkAllReduceProcesses/size=32KiB   	25000	20000.0 ns/op	1638.40 MB/s	1.638 busbw-GB/s
BenchmarkAllReduceProcesses/size=2MiB    	17000	28000.0 ns/op	74898.29 MB/s	74.898 busbw-GB/s
`
	rows := rowsOf(t, goText, cText)
	tests := []struct {
		name        string
		goC         float64
		target, met string
	}{
		{"AllReduceProcesses/size=32KiB", 21000.0 / 20000, "≤ 1.053x", "yes"},
		{"AllReduceProcesses/size=2MiB", 29000.0 / 28000, "≤ 1.02x", "no"},
		{"CollectiveAllReduceProcesses/size=32KiB", 150000.0 / 20000, "≤ 1.053x", "no"},
		{"CollectiveAllReduceProcesses/size=2MiB", 28500.0 / 28000, "≤ 1.02x", "yes"},
	}
	if len(rows) != len(tests) {
		t.Fatalf("got %d rows, want %d", len(rows), len(tests))
	}
	for i, tt := range tests {
		r := &rows[i]
		if r.name != tt.name || !same(r.ratio(srcGo), tt.goC) || r.targetString() != tt.target || r.metString("—") != tt.met {
			t.Errorf("row %d: %s, Go/C %v, target %q, met %q; want %s, %v, %q, %q", i,
				r.name, r.ratio(srcGo), r.targetString(), r.metString("—"), tt.name, tt.goC, tt.target, tt.met)
		}
	}
}

// TestGraphBuildRows checks the rows of the graphs built node by node: the
// while node against C's while node (≤ 1.02x) and against C's host loops
// (≤ 1x: faster than either), the host loops against C's, and the build
// and the argument update against C's under their targets.
func TestGraphBuildRows(t *testing.T) {
	goText := `BenchmarkWhileNode-16                	     100	   2030000 ns/op
BenchmarkWhileHostLoop-16            	      30	   9100000 ns/op
BenchmarkWhileHostLoopCopy-16        	      30	  12500000 ns/op
BenchmarkGraphBuild100-16            	    1000	    420000 ns/op
BenchmarkGraphSetKernelArgs-16       	   20000	     10900 ns/op
`
	cText := `BenchmarkWhileNode              	100	2000000.00 ns/op
BenchmarkWhileHostLoop          	30	8800000.00 ns/op
BenchmarkWhileHostLoopCopy      	30	12000000.00 ns/op
BenchmarkGraphBuild100          	1000	400000.00 ns/op
BenchmarkGraphSetKernelArgs     	20000	10000.00 ns/op
`
	rows := rowsOf(t, goText, cText)
	tests := []struct {
		name, unit, c, g string
		goC              float64
		target, met      string
	}{
		{"WhileNode", "ms", "2.00", "2.03", 2.03 / 2, "≤ 1.02x", "yes"},
		{"WhileNode", "ms", "8.80", "2.03", 2.03 / 8.8, "≤ 1x", "yes"},
		{"WhileNode", "ms", "12.0", "2.03", 2.03 / 12, "≤ 1x", "yes"},
		{"WhileHostLoop", "ms", "8.80", "9.10", 9.1 / 8.8, "—", "—"},
		{"WhileHostLoopCopy", "ms", "12.0", "12.5", 12.5 / 12, "—", "—"},
		{"GraphBuild100", "µs", "400", "420", 1.05, "≤ 1.1x", "yes"},
		{"GraphSetKernelArgs", "µs", "10.0", "10.9", 1.09, "≤ 1.05x", "no"},
	}
	if len(rows) != len(tests) {
		t.Fatalf("got %d rows, want %d", len(rows), len(tests))
	}
	for i, tt := range tests {
		r := &rows[i]
		unit, cells := r.values()
		if r.name != tt.name || unit != tt.unit || cells[0] != tt.c || cells[1] != tt.g || !same(r.ratio(srcGo), tt.goC) ||
			r.targetString() != tt.target || r.metString("—") != tt.met {
			t.Errorf("row %d: %s, %s C %s Go %s, Go/C %v, target %q, met %q; want %s, %s %s %s, %v, %q, %q", i,
				r.name, unit, cells[0], cells[1], r.ratio(srcGo), r.targetString(), r.metString("—"),
				tt.name, tt.unit, tt.c, tt.g, tt.goC, tt.target, tt.met)
		}
	}
}

// rowsOf builds the table's rows from Go's and C's results, goText and
// cText, beside testdata's CuPy and cuda.core results.
func rowsOf(t *testing.T, goText, cText string) []row {
	t.Helper()
	dir := t.TempDir()
	goFile, cFile := filepath.Join(dir, "go.txt"), filepath.Join(dir, "c.txt")
	for name, text := range map[string]string{goFile: goText, cFile: cText} {
		if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var results [numSources]map[string]*stats
	for src, file := range map[source]string{srcGo: goFile, srcC: cFile, srcCuPy: "testdata/cupy.txt", srcCudaCore: "testdata/cudacore.txt"} {
		r, err := readSource([]string{file}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		results[src] = r
	}
	return buildRows(results)
}
