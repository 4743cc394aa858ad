package driver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestShimMayCallBack checks that no call into the shim is marked #cgo
// nocallback: every shim function reaches the driver, whose logger
// (cudadrv.LogsRegisterCallback) may run a Go function inside the call, and
// the Go runtime kills a program whose nocallback call calls back into Go.
func TestShimMayCallBack(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 3 && f[0] == "#cgo" && (f[1] == "nocallback" || f[1] == "noescape") {
				t.Errorf("%s:%d: %s: the driver may call back into Go", name, i+1, line)
			}
		}
	}
}
