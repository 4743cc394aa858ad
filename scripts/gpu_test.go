// Package scripts_test checks gpu.sh, the script that runs the GPU suite,
// on a machine without a GPU: stand-in programs take the place of the
// tests, examples, benchmarks, twins and tools it runs.
package scripts_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// standIn is a program that prints a passing test's line and fails when
// its name is listed in $GPU_FAIL.
const standIn = `#!/bin/sh
echo "--- PASS: TestStandIn"
case ",$GPU_FAIL," in *,%s,*) exit 1;; esac
exit 0
`

// nvcc builds a stand-in twin, named by its -o argument.
const nvcc = `#!/bin/sh
while [ $# -gt 0 ]; do [ "$1" = -o ] && out=$2; shift; done
name=$(basename "$out")
printf '#!/bin/sh\necho "--- PASS: TestStandIn"\ncase ",$GPU_FAIL," in *,%s,*) exit 1;; esac\n' "$name" >"$out"
chmod +x "$out"
`

// nvidiaSMI is nvidia-smi, a stand-in that lists $GPUS GPUs (none where
// unset) when called with -L.
const nvidiaSMI = `#!/bin/sh
if [ "$1" = -L ]; then
	i=0
	while [ "$i" -lt "${GPUS:-0}" ]; do echo "GPU $i: NVIDIA H200 (UUID: GPU-$i)"; i=$((i + 1)); done
	exit 0
fi
echo "--- PASS: TestStandIn"
case ",$GPU_FAIL," in *,nvidia-smi,*) exit 1;; esac
exit 0
`

// noGPU is a test binary whose GPU test finds no GPU, and ends as
// gpuprobe.Require ends it: skipped, or failed where $GOCUDA_TEST_GPU is 1.
const noGPU = `#!/bin/sh
if [ "$GOCUDA_TEST_GPU" = 1 ]; then
	echo "--- FAIL: TestGPU"
	exit 1
fi
echo "--- SKIP: TestGPU"
exit 0
`

// taskset runs the program after its core list.
const taskset = `#!/bin/sh
shift 2
exec "$@"
`

// suite lays out what `make gpu` builds, with stand-ins, and returns its
// directory and the directory of the stand-in tools.
func suite(t *testing.T) (dir, bin string) {
	t.Helper()
	root := t.TempDir()
	dir, bin = filepath.Join(root, "gpu"), filepath.Join(root, "bin")
	for _, d := range []string{dir, bin} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script, err := os.ReadFile("gpu.sh")
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, text string, mode os.FileMode) {
		if err := os.WriteFile(name, []byte(text), mode); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dir, "gpu.sh"), string(script), 0o755)
	for _, name := range []string{"highlevel.test", "bench.test", "devicequery", "saxpy", "pipeline", "graphloop", "memprofile", "allreduce", "bandwidth", "sgemm", "benchtable"} {
		write(filepath.Join(dir, name), fmt.Sprintf(standIn, name), 0o755)
	}
	for _, name := range []string{"highlevel.c", "launch.cu", "nccl.cu"} {
		write(filepath.Join(dir, name), "", 0o644)
	}
	for _, name := range []string{"compute-sanitizer", "python3"} {
		write(filepath.Join(bin, name), fmt.Sprintf(standIn, name), 0o755)
	}
	write(filepath.Join(bin, "nvidia-smi"), nvidiaSMI, 0o755)
	write(filepath.Join(bin, "nvcc"), nvcc, 0o755)
	write(filepath.Join(bin, "taskset"), taskset, 0o755)
	return dir, bin
}

// TestScriptStatus runs gpu.sh's parts with one stand-in failing at a
// time: the script must exit non-zero for each, and zero when none fails.
// It needs no GPU.
// (A failing example, Go benchmark or twin used to leave the status 0:
// tee's status was taken for theirs.)
func TestScriptStatus(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	tests := []struct {
		part, fail string
		wantFail   bool
	}{
		{"tests", "", false},
		{"tests", "highlevel.test", true},
		{"tests", "compute-sanitizer", true},
		{"tests", "devicequery", true},
		{"tests", "saxpy", true},
		{"tests", "pipeline", true},
		{"tests", "graphloop", true},
		{"tests", "memprofile", true},
		{"tests", "allreduce", true},
		{"tests", "bandwidth", true},
		{"tests", "sgemm", true},
		{"bench", "", false},
		{"bench", "bench.test", true},
		{"bench", "launch", true}, // a C twin
		{"bench", "python3", true},
		{"bench", "benchtable", true},
		{"nccl", "", false},
		{"nccl", "bench.test", true},
		{"nccl", "nccl", true},
	}
	for _, tt := range tests {
		t.Run(tt.part+"/"+tt.fail, func(t *testing.T) {
			dir, bin := suite(t)
			cmd := exec.Command("bash", "gpu.sh", tt.part)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(),
				"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
				"OUT="+filepath.Join(dir, "out"),
				"GOCUDA_NCCL="+filepath.Join(dir, "libnccl.so.2"), // no search of the disk
				"GPU_FAIL="+tt.fail)
			out, err := cmd.CombinedOutput()
			if failed := err != nil; failed != tt.wantFail {
				t.Errorf("gpu.sh %s with %q failing: error %v, want failure %v\n%s",
					tt.part, tt.fail, err, tt.wantFail, out)
			}
			if !strings.Contains(string(out), "== summary") {
				t.Errorf("gpu.sh %s stopped before its summary:\n%s", tt.part, out)
			}
		})
	}
}

// TestScriptNoGPUFound runs gpu.sh's tests with a test binary whose GPU test
// finds no GPU: where nvidia-smi lists a GPU, gpu.sh sets $GOCUDA_TEST_GPU,
// the test fails, and so must gpu.sh; where it lists none, the skip passes.
func TestScriptNoGPUFound(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	for _, tt := range []struct {
		gpus     string
		wantFail bool
		summary  string
	}{
		{"0", false, "cudart: 0 passed, 0 failed, 1 skipped"},
		{"1", true, "cudart: 0 passed, 1 failed, 0 skipped"},
		{"2", true, "cudart: 0 passed, 1 failed, 0 skipped"},
	} {
		t.Run(tt.gpus, func(t *testing.T) {
			if _, err := os.Stat("/dev/nvidia0"); err == nil && !tt.wantFail {
				t.Skip("/dev/nvidia0 is here: gpu.sh takes the machine for one with a GPU")
			}
			dir, bin := suite(t)
			if err := os.WriteFile(filepath.Join(dir, "cudart.test"), []byte(noGPU), 0o755); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("bash", "gpu.sh", "tests")
			cmd.Dir = dir
			cmd.Env = append(os.Environ(),
				"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
				"OUT="+filepath.Join(dir, "out"),
				"GOCUDA_NCCL="+filepath.Join(dir, "libnccl.so.2"),
				"GOCUDA_TEST_GPU=",
				"GPUS="+tt.gpus)
			out, err := cmd.CombinedOutput()
			if failed := err != nil; failed != tt.wantFail || !strings.Contains(string(out), tt.summary) {
				t.Errorf("gpu.sh tests with %s GPUs listed: error %v, want failure %v and %q\n%s",
					tt.gpus, err, tt.wantFail, tt.summary, out)
			}
		})
	}
}
