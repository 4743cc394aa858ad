package dl

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gocuda/cuda/internal/stubtest"
)

const testEnv = "GOCUDA_TEST_LIB"

// standIn builds a shared library named name in dir with the C compiler cgo
// uses, and returns its path.
func standIn(dir, name string) (string, error) {
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	src, lib := filepath.Join(dir, "standin.c"), filepath.Join(dir, name)
	if err := os.WriteFile(src, []byte("int gocuda_standin(void) { return 42; }\n"), 0o644); err != nil {
		return "", err
	}
	if out, err := stubtest.CombinedOutput(func() *exec.Cmd { return exec.Command(cc, "-shared", "-fPIC", "-o", lib, src) }); err != nil {
		return "", fmt.Errorf("no C compiler to build a stand-in library: %v\n%s", err, out)
	}
	return lib, nil
}

func TestMissingLibraryNamesPathsTried(t *testing.T) {
	t.Setenv(testEnv, "")
	t.Setenv("CUDA_PATH", "/usr/local/cuda")
	t.Setenv("CUDA_HOME", "/usr/local/cuda")
	l := New(testEnv, "libgocudatest.so.1")
	_, err := l.Proc("f").Addr()
	var le *LibraryError
	if !errors.As(err, &le) {
		t.Fatalf("Addr error = %v, want *LibraryError", err)
	}
	if le.Env != "" {
		t.Errorf("Env = %q with the variable unset, want \"\"", le.Env)
	}
	if set := "(set $" + testEnv + " to its path)"; le.Override != testEnv || strings.Count(err.Error(), set) != 1 {
		t.Errorf("Override %q, message %q: want the variable, and %q once", le.Override, err, set)
	}
	want := l.Candidates()
	if len(le.Tried) != len(want) {
		t.Fatalf("tried %q, want each of %q once", le.Tried, want)
	}
	for i, tr := range le.Tried {
		if !strings.HasPrefix(tr, want[i]+": ") || strings.Count(tr, want[i]+":") != 1 {
			t.Errorf("tried entry %q does not name %s once", tr, want[i])
		}
	}
	if l.Load() != err {
		t.Errorf("second Load gave a different error")
	}
	if p := l.Path(); p != "" {
		t.Errorf("Path() = %q after a failure, want \"\"", p)
	}
}

// TestOverrideIsOnlyCandidate checks that a file named by the environment
// variable that cannot be opened is the error, even though a library of that
// name would be found elsewhere: through the system loader (libm.so.6) or
// $CUDA_PATH (a stand-in library).
func TestOverrideIsOnlyCandidate(t *testing.T) {
	dir := t.TempDir()
	cuda := filepath.Join(dir, "cuda")
	if err := os.MkdirAll(filepath.Join(cuda, "lib64"), 0o755); err != nil {
		t.Fatal(err)
	}
	names := []string{"libm.so.6"}
	if _, err := standIn(filepath.Join(cuda, "lib64"), "libgocudatest.so.1"); err != nil {
		t.Log(err)
	} else {
		names = append(names, "libgocudatest.so.1")
	}
	text := filepath.Join(dir, "notalib.so")
	if err := os.WriteFile(text, []byte(strings.Repeat("not a shared library\n", 8)), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.so")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CUDA_PATH", cuda)
	t.Setenv("CUDA_HOME", "")

	for _, name := range names {
		t.Setenv(testEnv, "")
		if err := New(testEnv, name).Load(); err != nil {
			t.Fatalf("%s without $%s: %v", name, testEnv, err)
		}
		for _, tt := range []struct {
			file, reason string // reason: part of dlerror's text, or "" for any
		}{
			{filepath.Join(dir, "nonexistent", name), "No such file"},
			{text, ""},
			{empty, ""},
			{dir, ""},
		} {
			t.Setenv(testEnv, tt.file)
			l := New(testEnv, name)
			err := l.Load()
			var le *LibraryError
			if !errors.As(err, &le) {
				t.Errorf("%s with $%s=%s: Load() = %v, want *LibraryError", name, testEnv, tt.file, err)
				continue
			}
			if le.Env != testEnv || len(le.Tried) != 1 {
				t.Errorf("%s with $%s=%s: Env %q, tried %q; want %s and the file alone", name, testEnv, tt.file, le.Env, le.Tried, testEnv)
				continue
			}
			msg := err.Error()
			reason, ok := strings.CutPrefix(le.Tried[0], tt.file+": ")
			if !ok || reason == "" || !strings.Contains(reason, tt.reason) {
				t.Errorf("%s with $%s=%s: tried %q, want the file and dlerror's reason (%q)", name, testEnv, tt.file, le.Tried[0], tt.reason)
			}
			if !strings.Contains(msg, "$"+testEnv) || !strings.Contains(msg, tt.file) || !strings.Contains(msg, reason) {
				t.Errorf("%s with $%s=%s: error %q does not name the variable, the file and the reason", name, testEnv, tt.file, msg)
			}
			if l.Path() != "" {
				t.Errorf("%s with $%s=%s: Path() = %q, want \"\"", name, testEnv, tt.file, l.Path())
			}
		}
	}
}

// TestPathIsFileOpened checks that Path reports the file the loader opened,
// not the name asked for.
func TestPathIsFileOpened(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("CUDA_PATH", "")
	t.Setenv("CUDA_HOME", "")
	tests := []struct {
		env, name string
		want      string // "" for any existing absolute path
	}{
		{"", "libm.so.6", ""},
	}
	if lib, err := standIn(dir, "libgocudatest.so.1"); err != nil {
		t.Log(err)
	} else {
		tests = append(tests, struct{ env, name, want string }{lib, "libgocudatest.so.1", lib})
	}
	for _, tt := range tests {
		t.Setenv(testEnv, tt.env)
		l := New(testEnv, tt.name)
		if err := l.Load(); err != nil {
			t.Fatalf("$%s=%q %s: %v", testEnv, tt.env, tt.name, err)
		}
		p := l.Path()
		fi, err := os.Stat(p)
		if !filepath.IsAbs(p) || err != nil {
			t.Errorf("$%s=%q %s: Path() = %q (%v), want an absolute path that exists", testEnv, tt.env, tt.name, p, err)
			continue
		}
		if tt.want != "" {
			if want, err := os.Stat(tt.want); err != nil || !os.SameFile(fi, want) {
				t.Errorf("$%s=%q %s: Path() = %q, want %s", testEnv, tt.env, tt.name, p, tt.want)
			}
		}
	}
}

func TestMissingSymbolNamesFunction(t *testing.T) {
	l := New("", "libc.so.6")
	if err := l.Load(); err != nil {
		t.Skipf("no libc.so.6 here: %v", err)
	}
	if _, err := l.Proc("getpid").Addr(); err != nil {
		t.Fatalf("getpid: %v", err)
	}
	_, err := l.Proc("cudaNoSuchFunction").Addr()
	var se *SymbolError
	if !errors.As(err, &se) || se.Symbol != "cudaNoSuchFunction" {
		t.Fatalf("error = %v, want *SymbolError for cudaNoSuchFunction", err)
	}
	if se.Library != l.Path() || se.Reason == "" {
		t.Errorf("error %+v should name the library %s and the loader's reason", se, l.Path())
	}
	if !strings.Contains(err.Error(), "cudaNoSuchFunction") || !strings.Contains(err.Error(), "libc.so.6") {
		t.Errorf("error %q should name the symbol and the library", err)
	}
}

// TestCheck checks SetCheck: the check runs once, on the first use of a
// function that is not exempt or on Load, and its error is theirs; exempt
// functions, Lookup and Path work without it.
func TestCheck(t *testing.T) {
	lib, err := standIn(t.TempDir(), "libgocudatest.so.1")
	if err != nil {
		t.Skip(err)
	}
	t.Setenv(testEnv, lib)
	errOld := errors.New("too old")
	for _, exempt := range []bool{false, true} {
		l := New(testEnv, "libgocudatest.so.1")
		runs := 0
		check := func() error {
			runs++
			if _, err := l.Lookup("gocuda_standin"); err != nil {
				t.Errorf("Lookup in the check: %v", err)
			}
			return errOld
		}
		var names []string
		if exempt {
			names = []string{"gocuda_standin"}
		}
		if err := l.SetCheck(check, names...); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Lookup("gocuda_standin"); err != nil || runs != 0 {
			t.Errorf("Lookup: %v, after %d checks; want no error and no check", err, runs)
		}
		_, err := l.Proc("gocuda_standin").Addr()
		if exempt && (err != nil || runs != 0) {
			t.Errorf("exempt function: %v, after %d checks; want no error and no check", err, runs)
		}
		if !exempt && (err != errOld || runs != 1) {
			t.Errorf("function: %v, after %d checks; want the check's error after one", err, runs)
		}
		if err := l.Load(); err != errOld {
			t.Errorf("Load: %v, want the check's error", err)
		}
		if _, err := l.Proc("gocuda_other").Addr(); err != errOld {
			t.Errorf("another function: %v, want the check's error", err)
		}
		if runs != 1 {
			t.Errorf("the check ran %d times, want once", runs)
		}
		if l.Path() != lib {
			t.Errorf("Path() = %q, want %s: the library is open", l.Path(), lib)
		}
		if err := l.SetCheck(func() error { return nil }); err == nil {
			t.Errorf("SetCheck after loading succeeded")
		}
	}
}
