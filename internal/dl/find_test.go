package dl

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gocuda/cuda/internal/stubtest"
)

// The stand-in libraries' names: a toolkit library with a wheel of its own
// (as libnccl.so.2 has nvidia/nccl/lib) and a driver library (as
// libcuda.so.1), named so that no real library can be found instead.
const (
	toolkitLib = "libgocudatest.so.1"
	driverLib  = "libgocudadrvtest.so.1"
	wheelDir   = "nvidia/gocudatest/lib"
)

// major is the bindings' CUDA major in directory names (cuda-13.0,
// nvidia/cu13/lib), other another major's.
var (
	major = strconv.Itoa(cudaMajor)
	other = strconv.Itoa(cudaMajor - 1)
)

// sandbox points every place the search looks at into a new temporary tree
// and returns its root: /usr/local is root/usr/local, WSL's directory
// root/wsl, $HOME root/home, $PATH root/bin (no python3); the other
// variables are unset. The stand-in
// names are registered as a toolkit library with a wheel and as a driver
// library.
func sandbox(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	oldLocal, oldWSL := usrLocal, wslLib
	usrLocal, wslLib = filepath.Join(root, "usr", "local"), filepath.Join(root, "wsl")
	wheelDirs["libgocudatest"] = wheelDir
	driverLibs[driverLib] = true
	t.Cleanup(func() {
		usrLocal, wslLib = oldLocal, oldWSL
		delete(wheelDirs, "libgocudatest")
		delete(driverLibs, driverLib)
	})
	for _, v := range []string{testEnv, "LD_LIBRARY_PATH", "VIRTUAL_ENV", "CONDA_PREFIX", "CUDA_PATH", "CUDA_HOME", "PYTHONUSERBASE"} {
		t.Setenv(v, "")
	}
	t.Setenv("HOME", filepath.Join(root, "home"))
	t.Setenv("PATH", filepath.Join(root, "bin")) // no python3
	return root
}

// place copies the stand-in library lib to each path, making directories.
func place(t *testing.T, lib string, paths ...string) {
	t.Helper()
	b, err := os.ReadFile(lib)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// buildStandIn builds a stand-in library outside the searched tree, or
// skips the test without a C compiler.
func buildStandIn(t *testing.T) string {
	t.Helper()
	lib, err := standIn(t.TempDir(), "standin.so")
	if err != nil {
		t.Skip(err)
	}
	return lib
}

// loaded opens name with a new Library and returns the file opened, or
// fails the test.
func loaded(t *testing.T, name string) string {
	t.Helper()
	l := New(testEnv, name)
	if err := l.Load(); err != nil {
		t.Fatalf("Load %s: %v", name, err)
	}
	return l.Path()
}

// notLoaded checks that name cannot be loaded and returns the error.
func notLoaded(t *testing.T, name string) *LibraryError {
	t.Helper()
	l := New(testEnv, name)
	err := l.Load()
	var le *LibraryError
	if !errors.As(err, &le) {
		t.Fatalf("Load %s = %v (opened %s), want a *LibraryError", name, err, l.Path())
	}
	return le
}

// toolkitPlaces makes a tree with each kind of place for a toolkit library
// (with two Pythons and two toolkits of the bindings' major) under root, sets the variables
// naming them ($PATH to a Python environment's bin), and returns the library's paths in the order the search must
// try them.
func toolkitPlaces(t *testing.T, root string) []string {
	t.Helper()
	venv, conda := filepath.Join(root, "venv"), filepath.Join(root, "conda")
	cudaPath, cudaHome := filepath.Join(root, "cudapath"), filepath.Join(root, "cudahome")
	home := filepath.Join(root, "home")
	t.Setenv("VIRTUAL_ENV", venv)
	t.Setenv("CONDA_PREFIX", conda)
	t.Setenv("CUDA_PATH", cudaPath)
	t.Setenv("CUDA_HOME", cudaHome)
	var dirs []string
	wheels := func(sp string) {
		dirs = append(dirs, filepath.Join(sp, "nvidia/cu"+major+"/lib"), filepath.Join(sp, wheelDir))
	}
	wheels(filepath.Join(venv, "lib/python3.12/site-packages"))
	wheels(filepath.Join(venv, "lib/python3.9/site-packages"))
	pyenv := filepath.Join(root, "pyenv")
	python := filepath.Join(pyenv, "bin", "python3")
	if err := os.MkdirAll(filepath.Dir(python), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(python, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	// A relative entry and one without python3 come before the environment's.
	t.Setenv("PATH", strings.Join([]string{"bin", filepath.Join(root, "nopython"), filepath.Dir(python)}, string(filepath.ListSeparator)))
	wheels(filepath.Join(pyenv, "lib/python3.12/site-packages"))
	dirs = append(dirs, filepath.Join(conda, "lib"))
	wheels(filepath.Join(conda, "lib/python3.11/site-packages"))
	for _, tk := range []string{cudaPath, cudaHome, usrLocal + "/cuda", usrLocal + "/cuda-" + major, usrLocal + "/cuda-" + major + ".10", usrLocal + "/cuda-" + major + ".2"} {
		dirs = append(dirs, filepath.Join(tk, "lib64"), filepath.Join(tk, "lib"))
	}
	wheels(filepath.Join(home, ".local/lib/python3.13/site-packages"))
	wheels(filepath.Join(usrLocal, "lib/python3.12/dist-packages"))
	wheels(filepath.Join(usrLocal, "lib/python3.12/site-packages"))
	var paths []string
	for _, d := range dirs {
		// The globbed directories (Pythons, cuda-N.Y) must exist to count.
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, filepath.Join(d, toolkitLib))
	}
	return paths
}

// TestFindOrder checks the whole order for a toolkit library and for a
// driver library, every variable set and every kind of place present.
func TestFindOrder(t *testing.T) {
	root := sandbox(t)
	want := append([]string{toolkitLib}, toolkitPlaces(t, root)...)
	// Toolkits and wheels of another major are not places.
	for _, d := range []string{usrLocal + "/cuda-" + other + ".6/lib64", root + "/venv/lib/python3.12/site-packages/nvidia/cu" + other + "/lib"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if got := New(testEnv, toolkitLib).Candidates(); !slices.Equal(got, want) {
		t.Errorf("toolkit library: Candidates() =\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
	want = []string{driverLib, filepath.Join(wslLib, driverLib)}
	if got := New(testEnv, driverLib).Candidates(); !slices.Equal(got, want) {
		t.Errorf("driver library: Candidates() = %q, want %q", got, want)
	}
	t.Setenv("CUDA_HOME", os.Getenv("CUDA_PATH"))
	t.Setenv("CONDA_PREFIX", os.Getenv("VIRTUAL_ENV"))
	c := New(testEnv, toolkitLib).Candidates()
	for i, p := range c {
		if slices.Contains(c[:i], p) {
			t.Errorf("CUDA_HOME=CUDA_PATH, CONDA_PREFIX=VIRTUAL_ENV: %s is tried twice", p)
		}
	}
}

// The dynamic loader returns an open library again for its path, whatever
// the file system holds by then, so each load below is made in a new tree.

// TestFindEachPlace checks, for each kind of place, that a library placed
// only there is found and opened from there.
func TestFindEachPlace(t *testing.T) {
	lib := buildStandIn(t)
	root := sandbox(t)
	var rels []string
	for _, p := range toolkitPlaces(t, root) {
		rel, _ := filepath.Rel(root, filepath.Dir(p))
		rels = append(rels, rel)
	}
	for i, rel := range rels {
		t.Run(rel, func(t *testing.T) {
			p := toolkitPlaces(t, sandbox(t))[i]
			place(t, lib, p)
			if got := loaded(t, toolkitLib); got != p {
				t.Errorf("opened %s, want %s", got, p)
			}
		})
	}
	t.Run("wsl", func(t *testing.T) {
		sandbox(t)
		p := filepath.Join(wslLib, driverLib)
		place(t, lib, p)
		if got := loaded(t, driverLib); got != p {
			t.Errorf("opened %s, want %s", got, p)
		}
	})
	t.Run("PYTHONUSERBASE", func(t *testing.T) {
		base := filepath.Join(sandbox(t), "userbase")
		t.Setenv("PYTHONUSERBASE", base)
		p := filepath.Join(base, "lib/python3.12/site-packages/nvidia/cu"+major+"/lib", toolkitLib)
		place(t, lib, p)
		if got := loaded(t, toolkitLib); got != p {
			t.Errorf("opened %s, want %s", got, p)
		}
	})
}

// TestFindPrecedence places the library in every place from the i-th of
// the documented order on, for each i: the i-th is the one opened.
func TestFindPrecedence(t *testing.T) {
	lib := buildStandIn(t)
	n := len(toolkitPlaces(t, sandbox(t)))
	for i := range n {
		paths := toolkitPlaces(t, sandbox(t))
		place(t, lib, paths[i:]...)
		if got := loaded(t, toolkitLib); got != paths[i] {
			t.Errorf("with the library in places %d.. of the order: opened %s, want %s", i, got, paths[i])
		}
	}
}

// TestFindRightMajor checks that toolkits and wheels of another CUDA major
// are never searched, and /usr/local/cuda not when it links to one.
func TestFindRightMajor(t *testing.T) {
	lib := buildStandIn(t)
	root := sandbox(t)
	venv := filepath.Join(root, "venv")
	t.Setenv("VIRTUAL_ENV", venv)
	otherTk := filepath.Join(usrLocal, "cuda-"+other+".6")
	place(t, lib,
		filepath.Join(otherTk, "lib64", toolkitLib),
		filepath.Join(usrLocal, "cuda-"+other, "lib64", toolkitLib),
		filepath.Join(venv, "lib/python3.12/site-packages/nvidia/cu"+other+"/lib", toolkitLib))
	if err := os.Symlink(otherTk, filepath.Join(usrLocal, "cuda")); err != nil {
		t.Fatal(err)
	}
	le := notLoaded(t, toolkitLib)
	note := filepath.Join(usrLocal, "cuda") + ": links to " + otherTk
	if !slices.ContainsFunc(le.Tried, func(s string) bool { return strings.HasPrefix(s, note) }) {
		t.Errorf("tried %q, want a line saying %s... is not searched", le.Tried, note)
	}
	// Named by $CUDA_PATH, the user's choice, it is searched, and not
	// also said to be not searched.
	t.Setenv("CUDA_PATH", filepath.Join(usrLocal, "cuda"))
	if err := os.Remove(filepath.Join(otherTk, "lib64", toolkitLib)); err != nil {
		t.Fatal(err)
	}
	le = notLoaded(t, toolkitLib)
	if slices.ContainsFunc(le.Tried, func(s string) bool { return strings.HasPrefix(s, note) }) {
		t.Errorf("tried %q, want %s searched as $CUDA_PATH and no line saying it is not", le.Tried, note)
	}
	// Pointed at a toolkit of the bindings' major, /usr/local/cuda is
	// searched.
	tk := filepath.Join(usrLocal, "cuda-"+major+".0")
	place(t, lib, filepath.Join(tk, "lib64", toolkitLib))
	if err := os.Remove(filepath.Join(usrLocal, "cuda")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(tk, filepath.Join(usrLocal, "cuda")); err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(usrLocal, "cuda", "lib64", toolkitLib)
	if got := loaded(t, toolkitLib); got != want {
		t.Errorf("opened %s, want %s", got, want)
	}
}

// TestFindDriverOnlyFromDriverPlaces checks that a driver library is not
// taken from a toolkit or a wheel, where only stubs of it are.
func TestFindDriverOnlyFromDriverPlaces(t *testing.T) {
	lib := buildStandIn(t)
	root := sandbox(t)
	var paths []string
	for _, p := range toolkitPlaces(t, root) {
		paths = append(paths, filepath.Join(filepath.Dir(p), driverLib))
	}
	place(t, lib, paths...)
	le := notLoaded(t, driverLib)
	if len(le.Tried) != 2 {
		t.Errorf("tried %q, want the loader's search and WSL's directory", le.Tried)
	}
}

// TestFindNeverWorkingDirectory checks that a library in the working
// directory, or under relative paths in the variables, is not loaded.
func TestFindNeverWorkingDirectory(t *testing.T) {
	lib := buildStandIn(t)
	dir := t.TempDir()
	sandbox(t)
	place(t, lib,
		filepath.Join(dir, toolkitLib),
		filepath.Join(dir, "cuda/lib64", toolkitLib),
		filepath.Join(dir, "cuda/lib", toolkitLib),
		filepath.Join(dir, "venv/lib/python3.12/site-packages/nvidia/cu"+major+"/lib", toolkitLib),
		filepath.Join(dir, "conda/lib", toolkitLib),
		filepath.Join(dir, "home/.local/lib/python3.12/site-packages/nvidia/cu"+major+"/lib", toolkitLib),
		filepath.Join(dir, "base/lib/python3.12/site-packages/nvidia/cu"+major+"/lib", toolkitLib),
		filepath.Join(dir, "lib/python3.12/site-packages/nvidia/cu"+major+"/lib", toolkitLib))
	place(t, lib, filepath.Join(dir, "bin/python3")) // a relative entry of $PATH
	t.Setenv("PATH", "bin")
	t.Chdir(dir)
	vars := map[string]string{"CUDA_PATH": "cuda", "CUDA_HOME": "./cuda", "VIRTUAL_ENV": "venv", "CONDA_PREFIX": "conda", "HOME": "home"}
	for v, val := range vars {
		t.Setenv(v, val)
	}
	for _, name := range []string{toolkitLib, driverLib} {
		for _, p := range New(testEnv, name).Candidates() {
			if p != name && !filepath.IsAbs(p) {
				t.Errorf("%s: candidate %s is relative", name, p)
			}
		}
	}
	le := notLoaded(t, toolkitLib)
	for v, val := range vars {
		note := "$" + v + "=" + val + ": not an absolute path"
		if !slices.ContainsFunc(le.Tried, func(s string) bool { return strings.HasPrefix(s, note) }) {
			t.Errorf("tried %q, want a line %q", le.Tried, note)
		}
	}
	t.Setenv("HOME", "")
	t.Setenv("PYTHONUSERBASE", "base")
	notLoaded(t, toolkitLib)

	// The override variable too must be absolute.
	for _, rel := range []string{toolkitLib, "./" + toolkitLib, "cuda/lib64/" + toolkitLib} {
		t.Setenv(testEnv, rel)
		le := notLoaded(t, toolkitLib)
		if le.Env != testEnv || len(le.Tried) != 1 || le.Tried[0] != rel+": not an absolute path" {
			t.Errorf("$%s=%s: Env %q, tried %q; want the variable and %q", testEnv, rel, le.Env, le.Tried, rel+": not an absolute path")
		}
	}
}

// TestLoaderPathRelativeEntry checks that an empty entry of LD_LIBRARY_PATH
// (a trailing colon), which the system loader takes for the working
// directory, does not load a library planted there. The loader reads
// LD_LIBRARY_PATH when the process starts, so the test runs in a child.
func TestLoaderPathRelativeEntry(t *testing.T) {
	if os.Getenv("GOCUDA_DL_CHILD") != "" {
		le := notLoaded(t, toolkitLib)
		if len(le.Tried) == 0 || !strings.Contains(le.Tried[0], "relative entry \"\"") {
			t.Errorf("tried %q, want first the note that the loader's search was skipped", le.Tried)
		}
		if !slices.Contains(New(testEnv, toolkitLib).Candidates(), "/nonexistent/"+toolkitLib) {
			t.Errorf("the absolute entry of LD_LIBRARY_PATH is not searched")
		}
		// What the search avoided: the loader itself takes the planted file.
		if h, path, msg := dlopen(toolkitLib); h == nil {
			t.Errorf("the system loader did not find the planted library (%s): the test proves nothing", msg)
		} else {
			t.Logf("the system loader alone opens %s", path)
		}
		return
	}
	lib := buildStandIn(t)
	dir := t.TempDir()
	place(t, lib, filepath.Join(dir, toolkitLib))
	// The child runs in dir: the test binary by its absolute path.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out, err := stubtest.CombinedOutput(func() *exec.Cmd {
		cmd := stubtest.Command(exe, "-test.run=^TestLoaderPathRelativeEntry$", "-test.v")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOCUDA_DL_CHILD=1", "LD_LIBRARY_PATH=/nonexistent:", testEnv+"=")
		return cmd
	})
	if err != nil || !strings.Contains(string(out), "--- PASS") {
		t.Errorf("child: %v\n%s", err, out)
	}
}

// TestSystemCopyBesideRelativeEntry checks that where an empty entry of
// LD_LIBRARY_PATH keeps the system loader from being asked (a copy is
// planted in the working directory), the directories of the loader's
// configuration are searched in its place, after the absolute entries:
// the system's own copy loads. (Only the absolute entries were searched.)
func TestSystemCopyBesideRelativeEntry(t *testing.T) {
	const name = "libgocudasys.so.1"
	root := t.TempDir()
	sys, cwd, confD := filepath.Join(root, "sys"), filepath.Join(root, "cwd"), filepath.Join(root, "ld.so.conf.d")
	for _, d := range []string{sys, cwd, confD} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	lib, err := standIn(sys, name)
	if err != nil {
		t.Skip(err)
	}
	place(t, lib, filepath.Join(cwd, name))
	conf := filepath.Join(root, "ld.so.conf")
	for file, text := range map[string]string{
		conf:                             "include ld.so.conf.d/*.conf\n",
		filepath.Join(confD, "sys.conf"): "# the system's libraries\n" + sys + "\nhwcap 0 nosegneg\n",
	} {
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	savedConf, savedDirs := ldSoConf, systemLibDirs
	ldSoConf, systemLibDirs = conf, nil
	t.Cleanup(func() { ldSoConf, systemLibDirs = savedConf, savedDirs })
	checkSystemCopy(t, name, lib, cwd, "the configuration's")
}

// checkSystemCopy checks that, with an empty entry in $LD_LIBRARY_PATH and
// cwd the working directory, the search for name leaves the bare name to
// no loader and tries /nonexistent's copy, then lib (from's), which Load
// opens.
func checkSystemCopy(t *testing.T, name, lib, cwd, from string) {
	t.Helper()
	t.Setenv("LD_LIBRARY_PATH", "/nonexistent:")
	t.Setenv(testEnv, "")
	t.Chdir(cwd)
	l := New(testEnv, name)
	c := l.Candidates()
	i, j := slices.Index(c, "/nonexistent/"+name), slices.Index(c, lib)
	if slices.Contains(c, name) || i < 0 || j < i {
		t.Errorf("candidates %q: want no bare name, then /nonexistent's, then %s %s", c, from, lib)
	}
	if err := l.Load(); err != nil || l.Path() != lib {
		t.Errorf("Load() = %v, Path() = %q; want %s copy %s", err, l.Path(), from, lib)
	}
}
