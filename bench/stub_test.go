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
	"github.com/gocuda/cuda/internal/testsrc"
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
	shim := filepath.Join("..", "highlevel", "internal", "driver") // the shim's zsymbols.h, the stand-in in testdata
	testsrc.Require(t, filepath.Join(shim, "testdata", "stubdriver.c"), stubHeaders)
	if _, err := exec.LookPath(cc()); err != nil {
		t.Skipf("no C compiler to build the stub: %v", err)
	}
	lib := filepath.Join(dir, "libstubcuda.so")
	out, err := stubtest.CombinedOutput(func() *exec.Cmd {
		return exec.Command(cc(), "-shared", "-fPIC", "-O2", "-I"+stubHeaders, "-I"+shim, "-o", lib,
			filepath.Join("testdata", "stubcuda.c"), filepath.Join(shim, "testdata", "stubdriver.c"),
			filepath.Join(shim, "testdata", "stubprocs.c"))
	})
	if err != nil {
		t.Fatalf("building the stub: %v\n%s", err, out)
	}
	return lib
}

// TestStubMix runs the mix benchmarks, AllocAsync + Free and the waits on
// the stand-in of CUDA's libraries (testdata/stubcuda.c, with highlevel's
// stand-in driver), which does the work on host memory for Go and for the
// C twin alike, and checks what each operation costs Go beyond C's calls:
// one cgo call each, and no allocation but Done's. It logs the times of
// the C twin (c/mix.c) on the same stand-in beside Go's.
func TestStubMix(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a library and runs benchmarks")
	}
	dir := t.TempDir()
	lib := buildStub(t, dir)
	args := []string{"-test.run=^$", "-test.bench=^Benchmark(Mix(Memset|Launch|D2D|Wait|Done)?|MallocAsyncFree)$", "-test.benchtime=2000x"}
	args = append(args, strings.Fields(*stubArgs)...)
	out, err := stubtest.CombinedOutput(func() *exec.Cmd {
		cmd := stubtest.Command(os.Args[0], args...)
		// highlevel needs no libcudart: a missing one is the proof.
		cmd.Env = append(os.Environ(), "GOCUDA_CUDA="+lib, "GOCUDA_CUDART="+filepath.Join(dir, "no-libcudart.so"),
			"GOCUDA_NVRTC="+lib, "CUDA_DEVICE=0")
		return cmd
	})
	if err != nil {
		t.Fatalf("benchmarks on the stub: %v\n%s", err, out)
	}
	t.Logf("on the stub:\n%s", out)
	want := map[string]struct {
		calls, allocs float64 // per op
	}{
		"Mix":       {mixLaunches + 2, 0},
		"MixMemset": {1, 0},
		"MixLaunch": {1, 0},
		"MixD2D":    {1, 0},
		// MallocAsync and Free, as cudaMallocAsync and cudaFreeAsync.
		"MallocAsyncFree": {2, 0},
		// The memset, recording the wait's event and one query of it.
		"MixWait": {3, 0},
		// Done after new work makes a signal, its channel and the
		// goroutine that waits, as context.WithCancel makes its channel.
		"MixDone": {3, 3},
	}
	line := regexp.MustCompile(`(?m)^Benchmark(\w+?)(?:-\d+)?\s+\d+\s+[\d.]+ ns/op\s+([\d.]+) cgo-calls/op\s+(\d+) B/op\s+(\d+) allocs/op$`)
	seen := map[string]bool{}
	for _, m := range line.FindAllStringSubmatch(string(out), -1) {
		name := m[1]
		seen[name] = true
		calls, _ := strconv.ParseFloat(m[2], 64)
		allocs, _ := strconv.ParseFloat(m[4], 64)
		if w := want[name]; calls != w.calls || allocs != w.allocs {
			t.Errorf("%s: %v cgo calls and %v allocations per op, want %v and %v", name, calls, allocs, w.calls, w.allocs)
		}
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("no result for Benchmark%s:\n%s", name, out)
		}
	}

	twin := filepath.Join(dir, "mix")
	if out, err := stubtest.CombinedOutput(func() *exec.Cmd {
		return exec.Command(cc(), "-O2", "-I"+stubHeaders, "-o", twin, filepath.Join("c", "mix.c"), lib, "-Wl,-rpath,"+dir)
	}); err != nil {
		t.Fatalf("building the C twin on the stub: %v\n%s", err, out)
	}
	if out, err = stubtest.CombinedOutput(func() *exec.Cmd { return stubtest.Command(twin) }); err != nil {
		t.Fatalf("the C twin on the stub: %v\n%s", err, out)
	}
	t.Logf("C on the stub:\n%s", out)
}
