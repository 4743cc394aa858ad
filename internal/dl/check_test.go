package dl

import (
	"context"
	"debug/elf"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
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

// depChildEnv marks the child process of TestBrokenDependencyRefused, and
// depChildLimit bounds the child's run: a loader blocked opening a named pipe
// ends there, as a failure, rather than blocking the test for ever.
const (
	depChildEnv   = "GOCUDA_TEST_DEP_CHILD"
	depChildLimit = time.Minute
)

// TestBrokenDependencyRefused loads, named by the override, a sound
// library whose dependency (DT_NEEDED) the loader would open from the
// library's own directories, its DT_RUNPATH or DT_RPATH ($ORIGIN, as
// NVIDIA's libraries have), where that file is broken: the library is
// refused with a *DependencyError that names the file, the library that
// needs it and what is wrong, and nothing of it is opened. A broken file the
// loader would not open (a sound copy comes first in its order, or the file
// is of another machine, which the loader passes over) does not stop the
// library from loading. Each case runs in a child process of its own (the
// loader's state is the process's), which dies or blocks where the check is
// missing: a truncated dependency killed the process with SIGBUS, a named
// pipe blocked Load for ever, and a directory, an unreadable file or one
// that is not ELF gave only the loader's message, no *DependencyError (for
// the unreadable file, "No such file or directory"). The unreadable case
// skips where the test runs as root, who reads any file.
func TestBrokenDependencyRefused(t *testing.T) {
	const (
		mainName = "libgocudamain.so.1"
		depName  = "libgocudadep.so.1"
		dep2Name = "libgocudadep2.so.1"
	)
	// The sound builds, which the cases copy: the dependency; a copy of it
	// with another symbol, to tell which copy the loader opened; the same
	// name needing dep2 beside it; and dep2.
	dep := stubtest.Library(t, depName, "int gocuda_dep(void) { return 1; }\n", "-Wl,-soname,"+depName)
	alt := stubtest.Library(t, depName, "int gocuda_dep_alt(void) { return 1; }\n", "-Wl,-soname,"+depName)
	dep2 := stubtest.Library(t, dep2Name, "int gocuda_dep2(void) { return 2; }\n", "-Wl,-soname,"+dep2Name)
	depNeeding := stubtest.Library(t, depName, "int gocuda_dep(void) { return 1; }\n", "-Wl,-soname,"+depName,
		"-Wl,--no-as-needed", dep2, "-Wl,--enable-new-dtags,-rpath,$ORIGIN")
	read := func(p string) []byte {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	sound := map[string][]byte{"dep": read(dep), "alt": read(alt), "dep2": read(dep2), "depNeeding": read(depNeeding)}
	other := elf.EM_AARCH64
	if runtime.GOARCH == "arm64" {
		other = elf.EM_X86_64
	}

	// What a case does to a file: writes a sound build, or breaks it.
	type maker func(t *testing.T, path string, lib []byte) error
	var (
		whole maker = func(t *testing.T, p string, lib []byte) error { return os.WriteFile(p, lib, 0o755) }
		third maker = func(t *testing.T, p string, lib []byte) error { return os.WriteFile(p, lib[:len(lib)/3], 0o755) }
		fifo  maker = func(t *testing.T, p string, _ []byte) error { return syscall.Mkfifo(p, 0o644) }
		dir   maker = func(t *testing.T, p string, _ []byte) error { return os.Mkdir(p, 0o755) }
		text  maker = func(t *testing.T, p string, _ []byte) error {
			return os.WriteFile(p, []byte(strings.Repeat("not a library\n", 64)), 0o755)
		}
		unreadable maker = func(t *testing.T, p string, lib []byte) error {
			if err := os.WriteFile(p, lib, 0); err != nil {
				return err
			}
			if f, err := os.Open(p); err == nil {
				f.Close()
				t.Skip("this user reads a file of mode 0 (root does): no file is unreadable to it")
			}
			return nil
		}
		foreign maker = func(t *testing.T, p string, lib []byte) error {
			c := append([]byte(nil), lib...)
			binary.LittleEndian.PutUint16(c[18:], uint16(other))
			return os.WriteFile(p, c, 0o755)
		}
	)
	// A file of a case: in lib (beside the library), other or ldpath (the
	// child's $LD_LIBRARY_PATH), made by make from the sound build named.
	type file struct {
		dir, name, build string
		make             maker
	}
	for _, tt := range []struct {
		name  string
		rpath string // the library's DT_RUNPATH, in which {other} is the directory other
		old   bool   // DT_RPATH instead
		files []file
		// Refused: the file, and the library that needs it, relative to
		// the case's root, and part of the reason. Else the dependency's
		// symbol that Lookup must find.
		path, needer, reason string
		symbol               string
	}{
		{name: "sound beside", rpath: "$ORIGIN",
			files:  []file{{"lib", depName, "dep", whole}},
			symbol: "gocuda_dep"},
		{name: "truncated beside", rpath: "$ORIGIN",
			files: []file{{"lib", depName, "dep", third}},
			path:  "lib/" + depName, needer: "lib/" + mainName, reason: "truncated: "},
		{name: "truncated beside, DT_RPATH", rpath: "$ORIGIN", old: true,
			files: []file{{"lib", depName, "dep", third}},
			path:  "lib/" + depName, needer: "lib/" + mainName, reason: "truncated: "},
		{name: "named pipe beside", rpath: "$ORIGIN",
			files: []file{{"lib", depName, "dep", fifo}},
			path:  "lib/" + depName, needer: "lib/" + mainName, reason: "not a regular file (a named pipe)"},
		{name: "directory beside", rpath: "$ORIGIN",
			files: []file{{"lib", depName, "dep", dir}},
			path:  "lib/" + depName, needer: "lib/" + mainName, reason: "not a regular file (a directory)"},
		{name: "unreadable beside", rpath: "$ORIGIN",
			files: []file{{"lib", depName, "dep", unreadable}},
			path:  "lib/" + depName, needer: "lib/" + mainName, reason: "cannot be read: "},
		{name: "not ELF beside", rpath: "$ORIGIN",
			files: []file{{"lib", depName, "dep", text}},
			path:  "lib/" + depName, needer: "lib/" + mainName, reason: "not an ELF file"},
		{name: "truncated in DT_RUNPATH's directory", rpath: "{other}",
			files: []file{{"other", depName, "dep", third}},
			path:  "other/" + depName, needer: "lib/" + mainName, reason: "truncated: "},
		{name: "dependency's dependency truncated", rpath: "$ORIGIN",
			files: []file{{"lib", depName, "depNeeding", whole}, {"lib", dep2Name, "dep2", third}},
			path:  "lib/" + dep2Name, needer: "lib/" + depName, reason: "truncated: "},
		{name: "dependency's dependency a named pipe", rpath: "$ORIGIN",
			files: []file{{"lib", depName, "depNeeding", whole}, {"lib", dep2Name, "dep2", fifo}},
			path:  "lib/" + dep2Name, needer: "lib/" + depName, reason: "not a regular file (a named pipe)"},
		{name: "dependency's dependency sound", rpath: "$ORIGIN",
			files:  []file{{"lib", depName, "depNeeding", whole}, {"lib", dep2Name, "dep2", whole}},
			symbol: "gocuda_dep2"},
		// $LD_LIBRARY_PATH comes before DT_RUNPATH: the loader opens its
		// sound copy, never the one beside; after DT_RPATH, it does not.
		{name: "truncated beside, sound copy on LD_LIBRARY_PATH", rpath: "$ORIGIN",
			files:  []file{{"lib", depName, "dep", third}, {"ldpath", depName, "alt", whole}},
			symbol: "gocuda_dep_alt"},
		{name: "truncated beside, DT_RPATH before LD_LIBRARY_PATH", rpath: "$ORIGIN", old: true,
			files: []file{{"lib", depName, "dep", third}, {"ldpath", depName, "alt", whole}},
			path:  "lib/" + depName, needer: "lib/" + mainName, reason: "truncated: "},
		{name: "other machine beside, sound copy further on DT_RUNPATH", rpath: "$ORIGIN:{other}",
			files:  []file{{"lib", depName, "dep", foreign}, {"other", depName, "alt", whole}},
			symbol: "gocuda_dep_alt"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			for _, d := range []string{"lib", "other", "ldpath"} {
				if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			tags := "--enable-new-dtags"
			if tt.old {
				tags = "--disable-new-dtags"
			}
			rpath := strings.ReplaceAll(tt.rpath, "{other}", filepath.Join(root, "other"))
			built := stubtest.Library(t, mainName, "int gocuda_main(void) { return 0; }\n",
				"-Wl,--no-as-needed", dep, "-Wl,"+tags, "-Xlinker", "-rpath", "-Xlinker", rpath)
			main := filepath.Join(root, "lib", mainName)
			if err := os.WriteFile(main, read(built), 0o755); err != nil {
				t.Fatal(err)
			}
			for _, f := range tt.files {
				if err := f.make(t, filepath.Join(root, f.dir, f.name), sound[f.build]); err != nil {
					t.Skip(err)
				}
			}
			env := []string{testEnv + "=" + main, "LD_LIBRARY_PATH=" + filepath.Join(root, "ldpath"),
				"GOCUDA_TEST_SYMBOL=" + tt.symbol, "GOCUDA_TEST_REASON=" + tt.reason}
			if tt.path != "" {
				env = append(env, "GOCUDA_TEST_DEP="+filepath.Join(root, tt.path), "GOCUDA_TEST_NEEDER="+filepath.Join(root, tt.needer))
			}
			depChild(t, "TestBrokenDependencyRefusedChild", env...)
		})
	}
}

func TestBrokenDependencyRefusedChild(t *testing.T) {
	if os.Getenv(depChildEnv) == "" {
		t.Skip("run by TestBrokenDependencyRefused")
	}
	l := New(testEnv, "libgocudamain.so.1")
	err := l.Load()
	if sym := os.Getenv("GOCUDA_TEST_SYMBOL"); sym != "" {
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Lookup(sym); err != nil {
			t.Errorf("the dependency's %s: %v", sym, err)
		}
		return
	}
	main, dep, needer, reason := os.Getenv(testEnv), os.Getenv("GOCUDA_TEST_DEP"), os.Getenv("GOCUDA_TEST_NEEDER"), os.Getenv("GOCUDA_TEST_REASON")
	var de *DependencyError
	if !errors.Is(err, ErrBadDependency) || !errors.As(err, &de) {
		t.Fatalf("Load() = %v, want a *DependencyError for %s", err, dep)
	}
	if de.Path != dep || de.Name != filepath.Base(dep) || de.Library != needer || !strings.Contains(de.Reason, reason) {
		t.Errorf("Load(): %+v, want the file %s, needed by %s as %s, and a reason saying %q", de, dep, needer, filepath.Base(dep), reason)
	}
	var le *LibraryError
	if !errors.As(err, &le) || len(le.Tried) != 1 {
		t.Fatalf("Load() = %v, want a *LibraryError that tried %s alone", err, main)
	}
	for _, s := range []string{main + ": ", dep, reason} {
		if !strings.Contains(le.Tried[0], s) {
			t.Errorf("tried %q, want it to say %q", le.Tried[0], s)
		}
	}
	if needer != main && !strings.Contains(le.Tried[0], needer) {
		t.Errorf("tried %q, want it to name %s, which needs %s", le.Tried[0], needer, dep)
	}
	loaded := loadedNames()
	for _, n := range []string{"libgocudamain.so.1", "libgocudadep.so.1", "libgocudadep2.so.1"} {
		if loaded[n] {
			t.Errorf("%s was opened, and the library refused", n)
		}
	}
}

// depChild runs the test binary's test named child in a process of its own
// with the environment variables env added, and fails t unless child
// passes: where it dies (SIGBUS) or runs past depChildLimit (the loader
// blocked), t fails with the child's output.
func depChild(t *testing.T, child string, env ...string) {
	t.Helper()
	// The child's own timeout ends it first, with its goroutines' stacks.
	ctx, cancel := context.WithTimeout(t.Context(), 2*depChildLimit)
	defer cancel()
	out, err := stubtest.CombinedOutput(func() *exec.Cmd {
		c := stubtest.Command(os.Args[0], "-test.run=^"+child+"$", "-test.v", "-test.timeout="+depChildLimit.String())
		cmd := exec.CommandContext(ctx, c.Path)
		cmd.Args = c.Args
		cmd.Env = append(append(os.Environ(), env...), depChildEnv+"=1")
		cmd.WaitDelay = time.Second
		return cmd
	})
	if err != nil || !strings.Contains(string(out), "--- PASS: "+child) {
		if len(out) > 3000 { // the stacks after why it ended
			out = append(out[:3000:3000], "\n..."...)
		}
		t.Errorf("%s with %s: %v\n%s", child, strings.Join(env, " "), err, out)
	}
}
