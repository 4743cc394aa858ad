package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gocuda/cuda/internal/stubtest"
)

// childEnv makes the test binary gen itself: TestMain then runs gen's main
// with the binary's arguments, under the limits the variable's value names
// (see childLimits).
const childEnv = "GOCUDA_GEN_CHILD"

// TestMain runs gen in place of the tests where childEnv is set (see
// runGen).
func TestMain(m *testing.M) {
	if v, ok := os.LookupEnv(childEnv); ok {
		if err := childLimits(v); err != nil {
			fmt.Fprintln(os.Stderr, "gen test child:", err)
			os.Exit(3)
		}
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Limits of a child that runs gen (runGen): what a gen that lacks a check
// could exhaust ends the child, not the test binary or the machine.
const (
	childMemory  = 1 << 30  // bytes of the Go runtime's memory
	childAS      = 4 << 30  // bytes of address space (RLIMIT_AS; qemu-user leaves it unset)
	childStack   = 64 << 20 // bytes of one goroutine's stack
	childTimeout = 3 * time.Minute
)

// childLimits sets the limits of a child that runs gen: childMemory,
// childAS and childStack, and those of limits, a comma-separated list
// ("fsize=100": RLIMIT_FSIZE, bytes).
func childLimits(limits string) error {
	debug.SetMaxStack(childStack)
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: childAS, Max: childAS}); err != nil {
		return fmt.Errorf("RLIMIT_AS: %w", err)
	}
	for _, l := range strings.Split(limits, ",") {
		if l == "" {
			continue
		}
		v, ok := strings.CutPrefix(l, "fsize=")
		n, err := strconv.ParseUint(v, 10, 64)
		if !ok || err != nil {
			return fmt.Errorf("limit %q: want fsize=N", l)
		}
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: n, Max: n}); err != nil {
			return fmt.Errorf("RLIMIT_FSIZE: %w", err)
		}
	}
	// RLIMIT_AS bounds C's memory too, but not under qemu-user, which keeps
	// it for itself: the child watches its own.
	go func() {
		s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}}
		for range time.Tick(10 * time.Millisecond) {
			if metrics.Read(s); s[0].Value.Uint64() > childMemory {
				fmt.Fprintf(os.Stderr, "gen test child: over %d bytes of memory\n", childMemory)
				os.Exit(3)
			}
		}
	}()
	return nil
}

// genRun is a run of gen in a child process: its exit and its standard
// error.
type genRun struct {
	err    error // nil where gen exited 0
	stderr string
}

// runGen runs gen with args in dir, in a child process (the test binary,
// under the emulator where the tests run under one) with the limits of
// childLimits and those of limits; start, if not nil, is called once it
// has started.
func runGen(t *testing.T, dir, limits string, start func(*exec.Cmd), args ...string) genRun {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := stubtest.Command(exe, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), childEnv+"="+limits)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(childTimeout, func() { cmd.Process.Kill() })
	defer timer.Stop()
	if start != nil {
		start(cmd)
	}
	err = cmd.Wait()
	if !timer.Stop() {
		t.Fatalf("gen %s: still running after %v: killed\n%s", strings.Join(args, " "), childTimeout, stderr.Bytes())
	}
	return genRun{err, stderr.String()}
}

// writeTree writes files, by slash-separated path relative to dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, s := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// readTree returns the regular files under dir by slash-separated path.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// anyFile reports whether there is a regular file under dir.
func anyFile(dir string) bool {
	found := false
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			found = true
			return filepath.SkipAll
		}
		return nil
	})
	return found
}

// genModule writes a module with a package for gen to generate in a
// temporary directory, p in its directory pkg, from the headers given
// (input.h is the one it binds), and returns the module's directory.
func genModule(t *testing.T, headers map[string]string) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"go.mod":           "module example.com/gentest\n\ngo 1.26\n",
		"pkg/packages.txt": "package p\ndir .\nheaders .\ninclude input.h\nprefix p P_\nlib GOCUDA_P libp.so.1\n",
	}
	for name, s := range headers {
		files["pkg/"+name] = s
	}
	writeTree(t, root, files)
	return root
}

// goodHeader is a header that gen binds.
const goodHeader = `typedef enum pStatus { P_OK = 0, P_FAILED = 1 } pStatus_t;
typedef struct pPair { int a; double b; } pPair;
#define P_SIZE 64
pStatus_t pAdd(int a, int b, int *sum);
pStatus_t pSwap(pPair *p);
`

// isTemporary reports whether the file name is a temporary of gen's,
// which Go's tools ignore: its name starts with a dot.
func isTemporary(name string) bool {
	return strings.HasPrefix(filepath.Base(name), ".")
}

// TestWriteAllOrNothing runs gen where writing its files fails, or where
// it is killed as its first file appears: a file gen writes is there
// whole, with its new contents, or not at all, keeping its old ones; a
// failed run changes none, names what failed and leaves no temporary
// behind; a killed one leaves temporaries alone, hidden from Go, and the
// next run removes them. (Killed, gen left an empty file; under a file
// size limit, one cut short; where an output path was a directory, every
// file before it written.)
func TestWriteAllOrNothing(t *testing.T) {
	root := genModule(t, map[string]string{"input.h": goodHeader})
	pkg := filepath.Join(root, "pkg")
	args := func(out string) []string { return []string{"-config", "packages.txt", "-pkg", "p", "-out", out} }
	want := t.TempDir()
	if r := runGen(t, pkg, "", nil, args(want)...); r.err != nil {
		t.Fatalf("gen: %v\n%s", r.err, r.stderr)
	}
	generated := readTree(t, want)
	names := slices.Sorted(maps.Keys(generated))
	if len(names) < 3 {
		t.Fatalf("gen wrote %q, want more files", names)
	}
	const old = "// the file before gen ran\n"
	for _, tt := range []struct {
		name   string
		limits string
		dir    string // the output path made a directory
		kill   bool   // killed as its first file appears
		err    string // in gen's error
	}{
		{name: "no space", limits: "fsize=0", err: "file too large"},
		{name: "file size limit", limits: "fsize=200", err: "file too large"},
		{name: "directory last", dir: names[len(names)-1], err: names[len(names)-1] + " is a directory"},
		{name: "directory first", dir: names[0], err: names[0] + " is a directory"},
		{name: "killed", kill: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := t.TempDir()
			if !tt.kill {
				olds := map[string]string{}
				for _, n := range names {
					olds[n] = old
				}
				writeTree(t, out, olds)
			}
			if tt.dir != "" {
				p := filepath.Join(out, filepath.FromSlash(tt.dir))
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
				if err := os.Mkdir(p, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			var start func(*exec.Cmd)
			if tt.kill {
				start = func(cmd *exec.Cmd) {
					for deadline := time.Now().Add(childTimeout); time.Now().Before(deadline); {
						if anyFile(out) {
							break
						}
					}
					cmd.Process.Kill()
				}
			}
			r := runGen(t, pkg, tt.limits, start, args(out)...)
			got := readTree(t, out)
			for n, b := range got {
				switch {
				case isTemporary(n) && tt.kill:
				case isTemporary(n):
					t.Errorf("gen failed and left its temporary %s", n)
				case b == old && !tt.kill:
				case b == generated[n] && tt.kill:
				case generated[n] == "":
					t.Errorf("gen wrote %s, which it does not generate", n)
				case tt.kill:
					t.Errorf("gen, killed, left %s with %d bytes of its %d", n, len(b), len(generated[n]))
				default:
					t.Errorf("gen failed and left %s with %d bytes of its new %d (%d old)", n, len(b), len(generated[n]), len(old))
				}
			}
			if tt.kill {
				t.Logf("killed, gen left %q", slices.Sorted(maps.Keys(got)))
				// The next run writes every file and removes the
				// temporaries the killed one left.
				if r := runGen(t, pkg, "", nil, args(out)...); r.err != nil {
					t.Fatalf("gen after a killed run: %v\n%s", r.err, r.stderr)
				}
				if got := readTree(t, out); !maps.Equal(got, generated) {
					t.Errorf("after a killed run, gen left %q, want %q", slices.Sorted(maps.Keys(got)), names)
				}
				return
			}
			var exit *exec.ExitError
			if !errors.As(r.err, &exit) || exit.ExitCode() != 1 {
				t.Errorf("gen: %v, want exit status 1\n%s", r.err, r.stderr)
			}
			if !strings.Contains(r.stderr, tt.err) {
				t.Errorf("gen's error does not say %q:\n%s", tt.err, r.stderr)
			}
		})
	}
}
