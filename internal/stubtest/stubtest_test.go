package stubtest

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCombinedOutputHung checks that, under an emulator, CombinedOutput
// kills a child that hangs and runs the command again, three times at most.
func TestCombinedOutputHung(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip(err)
	}
	t.Setenv(ExecEnv, "emulator")
	defer func(d time.Duration) { hungAfter = d }(hungAfter)
	hungAfter = 300 * time.Millisecond
	for _, tc := range []struct {
		name  string
		hangs int // the runs that hang before one that does not
		want  string
		ok    bool
	}{
		{"no hang", 0, "ran 1", true},
		{"one hang", 1, "ran 2", true},
		{"two hangs", 2, "ran 3", true},
		{"three hangs", 3, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			count := filepath.Join(t.TempDir(), "count")
			// Each run appends a line to count; the first tc.hangs runs sleep.
			script := `echo x >>"$1"; n=$(wc -l <"$1"); if [ "$n" -le "$2" ]; then exec sleep 60; fi; echo ran $n`
			out, err := CombinedOutput(func() *exec.Cmd {
				return exec.Command("sh", "-c", script, "sh", count, string(rune('0'+tc.hangs)))
			})
			switch {
			case tc.ok && (err != nil || strings.TrimSpace(string(out)) != tc.want):
				t.Errorf("CombinedOutput = %q, %v; want %q", out, err, tc.want)
			case !tc.ok && (err == nil || !strings.Contains(err.Error(), "three times")):
				t.Errorf("CombinedOutput = %q, %v; want an error after three runs", out, err)
			}
		})
	}
}
