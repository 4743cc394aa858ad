package testsrc

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gocuda/cuda/internal/stubtest"
)

// TestRequire checks the three outcomes of Require, in child processes:
// a file that is there runs the test, a missing one skips it, and fails it
// where $GOCUDA_TEST_SOURCES is 1.
func TestRequire(t *testing.T) {
	if p := os.Getenv("TESTSRC_CHILD"); p != "" {
		Require(t, p)
		return
	}
	here, err := filepath.Abs("testsrc.go")
	if err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "missing.c")
	for _, tc := range []struct {
		path, env, want string
	}{
		{here, "", "--- PASS"},
		{missing, "", "--- SKIP"},
		{missing, "0", "--- SKIP"},
		{missing, "1", "--- FAIL"},
		{here, "1", "--- PASS"},
	} {
		out, _ := stubtest.CombinedOutput(func() *exec.Cmd {
			cmd := stubtest.Command(os.Args[0], "-test.run=^TestRequire$", "-test.v") // under qemu for arm64
			cmd.Env = append(os.Environ(), "TESTSRC_CHILD="+tc.path, Env+"="+tc.env)
			return cmd
		})
		if !strings.Contains(string(out), tc.want) {
			t.Errorf("%s with $%s=%q: want %s, got:\n%s", filepath.Base(tc.path), Env, tc.env, tc.want, out)
		}
	}
}
