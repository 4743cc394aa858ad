package scripts_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestMakeTestArm64 checks how make test treats its arm64 stage: where a
// cross tool is missing it says in one line what it skipped and builds
// nothing for arm64; with REQUIRE_ARM64=1, as CI sets, it runs the stage
// whatever is missing. (make test failed on a machine without qemu after
// its other stages had run for many minutes.)
func TestMakeTestArm64(t *testing.T) {
	mk, err := exec.LookPath("make")
	if err != nil {
		t.Skip("no make")
	}
	for _, tt := range []struct {
		args    []string
		skipped bool
	}{
		{[]string{"ARM64_CC=/nonexistent/cc"}, true},
		{[]string{"ARM64_QEMU=/nonexistent/qemu"}, true},
		{[]string{"ARM64_SYSROOT=/nonexistent"}, true},
		{[]string{"ARM64_CC=/nonexistent/cc", "REQUIRE_ARM64=1"}, false},
	} {
		cmd := exec.Command(mk, append([]string{"-n", "-C", "..", "test"}, tt.args...)...)
		// Not the variables of a make that runs this test (make test
		// REQUIRE_ARM64=1 in CI passes them on through MAKEFLAGS).
		for _, kv := range os.Environ() {
			if k, _, _ := strings.Cut(kv, "="); k != "MAKEFLAGS" && k != "MFLAGS" && k != "MAKELEVEL" && k != "REQUIRE_ARM64" {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make -n test %s: %v\n%s", strings.Join(tt.args, " "), err, out)
		}
		skipped := strings.Count(string(out), "test-arm64 skipped: it needs")
		arm64 := strings.Contains(string(out), "GOARCH=arm64")
		if tt.skipped && (skipped != 1 || arm64) || !tt.skipped && (skipped != 0 || !arm64) {
			t.Errorf("make -n test %s: %d lines saying test-arm64 was skipped, arm64 commands %v; want skipped %v\n%s",
				strings.Join(tt.args, " "), skipped, arm64, tt.skipped, out)
		}
	}
}

// TestCIRequiresArm64 checks that CI runs make test with the arm64 stage
// required, so that a runner without its tools fails rather than skip it.
func TestCIRequiresArm64(t *testing.T) {
	b, err := os.ReadFile("../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	var runs []string
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "make" && f[1] == "test" {
			runs = append(runs, line)
		}
	}
	if len(runs) != 1 || !strings.Contains(runs[0], "REQUIRE_ARM64=1") {
		t.Errorf(".ci/run runs %q, want one make test with REQUIRE_ARM64=1", runs)
	}
}
