package dl

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestRequirements builds the package where it cannot work: the error must
// say what is needed, not "build constraints exclude all Go files".
func TestRequirements(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the package three times")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	for _, env := range [][]string{{"CGO_ENABLED=0"}, {"GOOS=darwin"}, {"GOOS=windows"}} {
		cmd := exec.Command(goTool, "build", ".")
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Errorf("%v: the build worked", env)
			continue
		}
		if !strings.Contains(string(out), "need_linux_and_cgo") {
			t.Errorf("%v: the build failed without saying what is needed:\n%s", env, out)
		}
	}
}
