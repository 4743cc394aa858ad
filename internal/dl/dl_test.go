package dl

import (
	"errors"
	"strings"
	"testing"
)

func TestMissingLibraryNamesPathsTried(t *testing.T) {
	t.Setenv("GOCUDA_TEST_LIB", "/nonexistent/libgocudatest.so.1")
	t.Setenv("CUDA_PATH", "/opt/nocuda")
	t.Setenv("CUDA_HOME", "")
	l := New("GOCUDA_TEST_LIB", "libgocudatest.so.1")
	_, err := l.Proc("f").Addr()
	var le *LibraryError
	if !errors.As(err, &le) {
		t.Fatalf("Addr error = %v, want *LibraryError", err)
	}
	for _, want := range []string{
		"/nonexistent/libgocudatest.so.1",
		"libgocudatest.so.1",
		"/opt/nocuda/lib64/libgocudatest.so.1",
		"/usr/local/cuda/lib64/libgocudatest.so.1",
	} {
		if !strings.Contains(err.Error(), want+":") {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	for _, tr := range le.Tried {
		path, _, _ := strings.Cut(tr, ": ")
		if strings.Count(tr, path+":") != 1 {
			t.Errorf("tried entry %q repeats its path", tr)
		}
	}
	if len(le.Tried) != 6 {
		t.Errorf("tried %d paths, want 6: %q", len(le.Tried), le.Tried)
	}
	if l.Load() != err {
		t.Errorf("second Load gave a different error")
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
	if !strings.Contains(err.Error(), "cudaNoSuchFunction") || !strings.Contains(err.Error(), "libc.so.6") {
		t.Errorf("error %q should name the symbol and the library", err)
	}
}
