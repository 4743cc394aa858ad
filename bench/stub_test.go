package bench

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gocuda/cuda/internal/stubtest"
)

var stubArgs = flag.String("stub.args", "", "more flags for the benchmarks TestStubMix runs on the stub driver, such as\n"+
	"'-test.count=6 -test.benchtime=20000x -test.cpuprofile=/tmp/cpu.out' (printed with -v)")

// stubHeaders are the headers the stub and the C twins are built with.
var stubHeaders = testHeaders

// cc returns the C compiler cgo uses.
func cc() string {
	if cc := os.Getenv("CC"); cc != "" {
		return cc
	}
	return "cc"
}

// buildStub builds testdata/stubcuda.c, with highlevel's stand-in driver,
// into dir and returns the library's path, or skips.
func buildStub(t *testing.T, dir string) string {
	hl := filepath.Join("..", "highlevel")
	if _, err := os.Stat(filepath.Join(hl, "testdata", "stubdriver.c")); err != nil {
		t.Skipf("the sources are not here: %v", err)
	}
	if _, err := os.Stat(stubHeaders); err != nil {
		t.Skipf("the headers are not here: %v", err)
	}
	if _, err := exec.LookPath(cc()); err != nil {
		t.Skipf("no C compiler to build the stub: %v", err)
	}
	lib := filepath.Join(dir, "libstubcuda.so")
	cmd := exec.Command(cc(), "-shared", "-fPIC", "-O2", "-I"+stubHeaders, "-I"+hl, "-o", lib,
		filepath.Join("testdata", "stubcuda.c"), filepath.Join(hl, "testdata", "stubdriver.c"),
		filepath.Join(hl, "testdata", "stubprocs.c"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the stub: %v\n%s", err, out)
	}
	return lib
}

// TestStubMix runs the mix benchmarks, and MallocAsync + Free, on a stub of
// CUDA's libraries that does nothing (testdata/stubcuda.c), where their time
// is Go's side of each operation alone, and checks what each operation
// costs Go beyond C's call: one cgo call, and no allocation. It logs the times of the C twin
// (c/mix.c) on the same stub beside Go's.
func TestStubMix(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a library and runs benchmarks")
	}
	dir := t.TempDir()
	lib := buildStub(t, dir)
	args := []string{"-test.run=^$", "-test.bench=^Benchmark(Mix(Memset|Launch|D2D)?|MallocAsyncFree)$", "-test.benchtime=2000x"}
	args = append(args, strings.Fields(*stubArgs)...)
	cmd := stubtest.Command(os.Args[0], args...)
	// highlevel needs no libcudart: a missing one is the proof.
	cmd.Env = append(os.Environ(), "GOCUDA_CUDA="+lib, "GOCUDA_CUDART="+filepath.Join(dir, "no-libcudart.so"),
		"GOCUDA_NVRTC="+lib, "CUDA_DEVICE=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("benchmarks on the stub: %v\n%s", err, out)
	}
	t.Logf("on the stub:\n%s", out)
	want := map[string]float64{ // cgo calls per op
		"Mix":       mixLaunches + 2,
		"MixMemset": 1,
		"MixLaunch": 1,
		"MixD2D":    1,
		// MallocAsync and Free, as cudaMallocAsync and cudaFreeAsync.
		"MallocAsyncFree": 2,
	}
	line := regexp.MustCompile(`(?m)^Benchmark(\w+?)(?:-\d+)?\s+\d+\s+[\d.]+ ns/op\s+([\d.]+) cgo-calls/op\s+(\d+) B/op\s+(\d+) allocs/op$`)
	seen := map[string]bool{}
	for _, m := range line.FindAllStringSubmatch(string(out), -1) {
		name, allocs := m[1], m[4]
		seen[name] = true
		if calls, _ := strconv.ParseFloat(m[2], 64); calls != want[name] {
			t.Errorf("%s: %v cgo calls per op, want %v", name, calls, want[name])
		}
		if allocs != "0" {
			t.Errorf("%s: %s allocations per op, want 0", name, allocs)
		}
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("no result for Benchmark%s:\n%s", name, out)
		}
	}

	twin := filepath.Join(dir, "mix")
	cmd = exec.Command(cc(), "-O2", "-I"+stubHeaders, "-o", twin, filepath.Join("c", "mix.c"), lib, "-Wl,-rpath,"+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the C twin on the stub: %v\n%s", err, out)
	}
	if out, err = stubtest.Command(twin).CombinedOutput(); err != nil {
		t.Fatalf("the C twin on the stub: %v\n%s", err, out)
	}
	t.Logf("C on the stub:\n%s", out)
}
