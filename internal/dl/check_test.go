package dl

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gocuda/cuda/internal/stubtest"
)

// TestBadFilesRefused gives the loader's search, and the override, files
// that are not libraries of this process: each is refused with its reason
// before the loader sees it, and the search goes on to a good copy. (A
// truncated library killed the process with SIGBUS, a named pipe blocked
// Load for ever, and a library of another machine was reported as "No such
// file or directory".)
func TestBadFilesRefused(t *testing.T) {
	const name = "libgocudatest.so.1"
	dir := t.TempDir()
	good, err := standIn(dir, name)
	if err != nil {
		t.Skip(err)
	}
	lib, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	other := elf.EM_AARCH64
	if runtime.GOARCH == "arm64" {
		other = elf.EM_X86_64
	}
	patched := func(at int, b ...byte) []byte {
		c := append([]byte(nil), lib...)
		copy(c[at:], b)
		return c
	}
	var machine [2]byte
	binary.LittleEndian.PutUint16(machine[:], uint16(other))
	write := func(data []byte) func(string) error {
		return func(p string) error { return os.WriteFile(p, data, 0o755) }
	}
	for _, tt := range []struct {
		name   string
		make   func(path string) error
		reason string
	}{
		{"truncated", write(lib[:len(lib)/3]), "truncated: "},
		{"named pipe", func(p string) error { return syscall.Mkfifo(p, 0o644) }, "not a regular file (a named pipe)"},
		{"directory", func(p string) error { return os.Mkdir(p, 0o755) }, "not a regular file (a directory)"},
		{"other machine", write(patched(18, machine[:]...)), "built for ELFCLASS64 " + other.String()},
		{"other class", write(patched(elf.EI_CLASS, byte(elf.ELFCLASS32))), "built for ELFCLASS32"},
		{"not ELF", write([]byte(strings.Repeat("not a library\n", 64))), "not an ELF file"},
		{"executable", write(patched(16, byte(elf.ET_EXEC))), "not a shared object"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			bad := filepath.Join(root, "bad", "lib64", name)
			goodDir := filepath.Join(root, "good", "lib64")
			for _, d := range []string{filepath.Dir(bad), goodDir} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := tt.make(bad); err != nil {
				t.Skip(err)
			}
			if err := os.WriteFile(filepath.Join(goodDir, name), lib, 0o755); err != nil {
				t.Fatal(err)
			}
			t.Setenv("LD_LIBRARY_PATH", "")
			load := func(l *Library) error {
				t.Helper()
				done := make(chan error, 1)
				go func() { done <- l.Load() }()
				select {
				case err := <-done:
					return err
				case <-time.After(10 * time.Second):
					t.Fatal("Load still runs after 10 s")
					return nil
				}
			}

			// Named by the override: the documented error, with the reason.
			t.Setenv(testEnv, bad)
			err := load(New(testEnv, name))
			var le *LibraryError
			if !errors.As(err, &le) || le.Env != testEnv || len(le.Tried) != 1 ||
				!strings.HasPrefix(le.Tried[0], bad+": ") || !strings.Contains(le.Tried[0], tt.reason) {
				t.Errorf("$%s=%s: Load() = %v, want a *LibraryError of $%s whose one try says %q", testEnv, bad, err, testEnv, tt.reason)
			}

			// Found by the search ($CUDA_PATH before $CUDA_HOME): refused,
			// and the good copy after it loads.
			t.Setenv(testEnv, "")
			t.Setenv("CUDA_PATH", filepath.Join(root, "bad"))
			t.Setenv("CUDA_HOME", filepath.Join(root, "good"))
			l := New(testEnv, name)
			if err := load(l); err != nil {
				t.Fatalf("search past %s: %v", bad, err)
			}
			if want := filepath.Join(goodDir, name); l.Path() != want {
				t.Errorf("search past %s: Path() = %s, want %s", bad, l.Path(), want)
			}
		})
	}
}

// TestDependencyBesideFirst loads, named by the override, a library that
// needs another beside it, with an empty entry in $LD_LIBRARY_PATH and a
// library of the dependency's name planted in the working directory: the
// one beside it is loaded, never the planted one. (The system loader took
// the planted one.)
func TestDependencyBesideFirst(t *testing.T) {
	const dep = "libgocudadep.so.1"
	beside := stubtest.Library(t, dep, "int gocuda_dep_beside(void) { return 1; }\n", "-Wl,-soname,"+dep)
	planted := stubtest.Library(t, dep, "int gocuda_dep_planted(void) { return 2; }\n", "-Wl,-soname,"+dep)
	main := stubtest.Library(t, "libgocudamain.so.1", "int gocuda_main(void) { return 0; }\n", "-Wl,--no-as-needed", beside)
	b, err := os.ReadFile(beside)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(main), dep), b, 0o755); err != nil {
		t.Fatal(err)
	}
	stubtest.Child(t, "TestDependencyBesideFirstChild",
		"LD_LIBRARY_PATH=/nonexistent:", testEnv+"="+main, "GOCUDA_TEST_CWD="+filepath.Dir(planted))
}

func TestDependencyBesideFirstChild(t *testing.T) {
	stubtest.SkipUnlessChild(t, "TestDependencyBesideFirst")
	if err := os.Chdir(os.Getenv("GOCUDA_TEST_CWD")); err != nil {
		t.Fatal(err)
	}
	l := New(testEnv, "libgocudamain.so.1")
	if err := l.Load(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Lookup("gocuda_dep_beside"); err != nil {
		t.Errorf("the dependency beside the library is not loaded: %v", err)
	}
	if _, err := l.Lookup("gocuda_dep_planted"); err == nil {
		t.Errorf("the dependency planted in the working directory is loaded")
	}
}

// TestDependencyElsewhere loads, named by the override, a library whose
// dependency is not beside it but in the directory of its DT_RUNPATH,
// with an empty entry in $LD_LIBRARY_PATH (which the loader searches
// before DT_RUNPATH) and a library of the dependency's name planted in the
// working directory: the one of DT_RUNPATH is loaded, never the planted
// one; and where only the planted one is, the library is refused, saying
// why. (The system loader took the planted one.)
func TestDependencyElsewhere(t *testing.T) {
	const dep = "libgocudafar.so.1"
	planted := stubtest.Library(t, dep, "int gocuda_far_planted(void) { return 2; }\n", "-Wl,-soname,"+dep)
	for _, tt := range []struct {
		name   string
		remove bool // the dependency is only in the working directory
	}{
		{"in DT_RUNPATH", false},
		{"only in the working directory", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			far := stubtest.Library(t, dep, "int gocuda_far_runpath(void) { return 1; }\n", "-Wl,-soname,"+dep)
			main := stubtest.Library(t, "libgocudanear.so.1", "int gocuda_near(void) { return 0; }\n",
				"-Wl,--no-as-needed", far, "-Wl,--enable-new-dtags,-rpath,"+filepath.Dir(far))
			if tt.remove {
				if err := os.Remove(far); err != nil {
					t.Fatal(err)
				}
			}
			stubtest.Child(t, "TestDependencyElsewhereChild",
				"LD_LIBRARY_PATH=/nonexistent:", testEnv+"="+main, "GOCUDA_TEST_CWD="+filepath.Dir(planted),
				"GOCUDA_TEST_REFUSED="+strconv.FormatBool(tt.remove))
		})
	}
}

func TestDependencyElsewhereChild(t *testing.T) {
	stubtest.SkipUnlessChild(t, "TestDependencyElsewhere")
	if err := os.Chdir(os.Getenv("GOCUDA_TEST_CWD")); err != nil {
		t.Fatal(err)
	}
	l := New(testEnv, "libgocudanear.so.1")
	err := l.Load()
	if os.Getenv("GOCUDA_TEST_REFUSED") == "true" {
		var le *LibraryError
		if !errors.As(err, &le) || len(le.Tried) != 1 || !strings.Contains(le.Tried[0], "needs libgocudafar.so.1, which $LD_LIBRARY_PATH's relative entry \"\"") {
			t.Errorf("Load() = %v, want a *LibraryError saying the dependency would come from the working directory", err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Lookup("gocuda_far_runpath"); err != nil {
		t.Errorf("the dependency in DT_RUNPATH is not loaded: %v", err)
	}
	if _, err := l.Lookup("gocuda_far_planted"); err == nil {
		t.Errorf("the dependency planted in the working directory is loaded")
	}
}
