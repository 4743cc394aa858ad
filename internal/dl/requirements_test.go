package dl

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// goCommand returns a go command run in the package's directory with the
// environment variables env set, and none of the build's own that name the
// platform or the C compiler (a cross-built test's GOARCH, CC and
// CGO_ENABLED), so that the go command decides those as it would for a user.
func goCommand(t *testing.T, env []string, args ...string) *exec.Cmd {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	cmd := exec.Command(goTool, args...)
	for _, v := range os.Environ() {
		switch name, _, _ := strings.Cut(v, "="); name {
		case "GOOS", "GOARCH", "CC", "CGO_ENABLED":
		default:
			cmd.Env = append(cmd.Env, v)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

// TestRequirements builds the package where it cannot work: the error must
// say what is needed, not "build constraints exclude all Go files".
func TestRequirements(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the package three times")
	}
	for _, env := range [][]string{{"CGO_ENABLED=0"}, {"GOOS=darwin"}, {"GOOS=windows"}} {
		out, err := goCommand(t, env, "build", ".").CombinedOutput()
		if err == nil {
			t.Errorf("%v: the build worked", env)
			continue
		}
		if !strings.Contains(string(out), "need_linux_amd64_or_arm64_and_cgo") {
			t.Errorf("%v: the build failed without saying what is needed:\n%s", env, out)
		}
	}
}

// TestRequirementsPlatforms checks the platforms whose build stops at
// requirements.go: all but linux/amd64 and linux/arm64 with cgo, the ones
// whose C layout gen writes the types for.
func TestRequirementsPlatforms(t *testing.T) {
	for _, tc := range []struct {
		env   []string
		stops bool
	}{
		{[]string{"GOOS=linux", "GOARCH=amd64", "CGO_ENABLED=1"}, false},
		{[]string{"GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=1"}, false},
		{[]string{"GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0"}, true},
		{[]string{"GOOS=linux", "GOARCH=386", "CGO_ENABLED=1"}, true},
		{[]string{"GOOS=linux", "GOARCH=riscv64", "CGO_ENABLED=1"}, true},
		{[]string{"GOOS=darwin", "GOARCH=arm64", "CGO_ENABLED=1"}, true},
	} {
		out, err := goCommand(t, tc.env, "list", "-f", "{{.GoFiles}}", ".").CombinedOutput()
		if err != nil {
			t.Fatalf("%v: go list: %v\n%s", tc.env, err, out)
		}
		if stops := strings.Contains(string(out), "requirements.go"); stops != tc.stops {
			t.Errorf("%v: the build stops at requirements.go: %v, want %v (files %s)", tc.env, stops, tc.stops, out)
		}
	}
}
