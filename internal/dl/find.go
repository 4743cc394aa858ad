package dl

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

// cudaMajor (zmajor_*.go) is the CUDA major version the bindings are
// generated for: a toolkit or wheel directory of another major is not
// searched.
//go:generate go run ../../gen -pkg dl

// The system directories searched, variables so that tests can point them
// into a temporary tree.
var (
	usrLocal = "/usr/local"       // cuda, cuda-X.Y and lib/python3.*/*-packages
	wslLib   = "/usr/lib/wsl/lib" // the driver under WSL 2
)

// The system loader's configuration and trusted directories, searched in
// its place when $LD_LIBRARY_PATH keeps it from being asked; variables so
// that tests can point them into a temporary tree.
var (
	ldSoConf      = "/etc/ld.so.conf"
	multiarch     = map[string]string{"amd64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu"}[runtime.GOARCH]
	systemLibDirs = []string{
		"/lib/" + multiarch, "/usr/lib/" + multiarch, "/lib64", "/usr/lib64", "/lib", "/usr/lib",
	}
)

// confDirs returns the absolute directories the loader configuration file
// conf lists, following its include lines (globs, relative to conf's
// directory), each file at most 8 deep.
func confDirs(conf string, depth int) []string {
	b, err := os.ReadFile(conf)
	if err != nil || depth > 8 {
		return nil
	}
	var dirs []string
	for _, line := range strings.Split(string(b), "\n") {
		line, _, _ = strings.Cut(line, "#")
		f := strings.Fields(line)
		switch {
		case len(f) == 0 || f[0] == "hwcap":
		case f[0] == "include" && len(f) == 2:
			pattern := f[1]
			if !filepath.IsAbs(pattern) {
				pattern = filepath.Join(filepath.Dir(conf), pattern)
			}
			files, _ := filepath.Glob(pattern)
			for _, inc := range files {
				dirs = append(dirs, confDirs(inc, depth+1)...)
			}
		case filepath.IsAbs(f[0]):
			dirs = append(dirs, f[0])
		}
	}
	return dirs
}

// driverLibs are the libraries that come with the NVIDIA driver, never with a
// toolkit or a wheel: a toolkit holds only stubs of them, to link against,
// which must never be loaded.
var driverLibs = map[string]bool{"libcuda.so.1": true, "libnvidia-ml.so.1": true}

// wheelDirs maps a library's base name to the directory of site-packages
// where its own NVIDIA wheel puts it (CUDA 12's layout, and NCCL's); CUDA
// 13's toolkit wheels put every library in nvidia/cu13/lib.
var wheelDirs = map[string]string{
	"libcudart":    "nvidia/cuda_runtime/lib",
	"libnvrtc":     "nvidia/cuda_nvrtc/lib",
	"libnvJitLink": "nvidia/nvjitlink/lib",
	"libcublas":    "nvidia/cublas/lib",
	"libcublasLt":  "nvidia/cublas/lib",
	"libcufft":     "nvidia/cufft/lib",
	"libcurand":    "nvidia/curand/lib",
	"libcusolver":  "nvidia/cusolver/lib",
	"libcusparse":  "nvidia/cusparse/lib",
	"libnccl":      "nvidia/nccl/lib",
}

// candidate is a place the library is looked for.
type candidate struct {
	path string // an absolute path, or the bare file name for the system loader
	skip string // why the place is not searched, or ""
}

// search collects the candidates for one file name, each path once.
type search struct {
	name string
	c    []candidate
	seen map[string]bool
}

// find returns the places to look for the file name, in order (see the
// package documentation). Every path is absolute except the bare name given
// to the system loader; places that are not searched are listed with why.
func find(name string) []candidate {
	s := &search{name: name, seen: map[string]bool{}}
	s.loader()
	if driverLibs[name] {
		s.file(wslLib)
		return s.c
	}
	if venv, ok := s.root("$VIRTUAL_ENV", os.Getenv("VIRTUAL_ENV")); ok {
		s.wheels(sitePackages(venv, "site-packages"))
	}
	if prefix, ok := pythonOnPath(); ok {
		s.wheels(sitePackages(prefix, "site-packages"))
	}
	if conda, ok := s.root("$CONDA_PREFIX", os.Getenv("CONDA_PREFIX")); ok {
		s.file(filepath.Join(conda, "lib"))
		s.wheels(sitePackages(conda, "site-packages"))
	}
	for _, env := range []string{"CUDA_PATH", "CUDA_HOME"} {
		if root, ok := s.root("$"+env, os.Getenv(env)); ok {
			s.toolkit(root)
		}
	}
	s.toolkits()
	if base, ok := s.userBase(); ok {
		s.wheels(sitePackages(base, "site-packages"))
	}
	s.wheels(sitePackages(usrLocal, "dist-packages", "site-packages"))
	return s.c
}

// loader adds the bare name, for the system loader's search, unless an
// entry of $LD_LIBRARY_PATH would make the loader take it from the working
// directory: then only the absolute entries are searched.
func (s *search) loader() {
	// An empty entry is the working directory.
	entries := ldLibraryPath()
	for _, e := range entries {
		if filepath.IsAbs(e) {
			continue
		}
		if _, err := os.Stat(filepath.Join(e, s.name)); err == nil {
			s.add(candidate{path: s.name, skip: "not given to the system loader: $LD_LIBRARY_PATH's relative entry " +
				strconv.Quote(e) + " would load it from the working directory"})
			for _, e := range entries {
				if filepath.IsAbs(e) {
					s.file(e)
				}
			}
			// The rest of the loader's own search: its cache, the
			// directories of its configuration (where the cache is
			// missing or stale), then its trusted ones.
			for _, p := range cachePaths(ldSoCache, s.name) {
				s.add(candidate{path: p})
			}
			for _, d := range append(confDirs(ldSoConf, 0), systemLibDirs...) {
				s.file(d)
			}
			return
		}
	}
	s.add(candidate{path: s.name})
}

// root returns the directory named by what (an environment variable), if
// it is set and absolute; a relative one is listed as not searched.
func (s *search) root(what, dir string) (string, bool) {
	if dir == "" {
		return "", false
	}
	if !filepath.IsAbs(dir) {
		s.add(candidate{path: what + "=" + dir, skip: "not an absolute path, not searched"})
		return "", false
	}
	return dir, true
}

// pythonOnPath returns the prefix of the first python3 in the absolute
// entries of $PATH: the environment whose bin is on the path, as a
// virtualenv's is in containers that never activate it.
func pythonOnPath() (string, bool) {
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if !filepath.IsAbs(dir) {
			continue
		}
		if fi, err := os.Stat(filepath.Join(dir, "python3")); err == nil && !fi.IsDir() {
			return filepath.Dir(dir), true
		}
	}
	return "", false
}

// userBase returns Python's user base directory: $PYTHONUSERBASE, else
// ~/.local.
func (s *search) userBase() (string, bool) {
	if b := os.Getenv("PYTHONUSERBASE"); b != "" {
		return s.root("$PYTHONUSERBASE", b)
	}
	if h := os.Getenv("HOME"); h != "" {
		if b, ok := s.root("$HOME", h); ok {
			return filepath.Join(b, ".local"), true
		}
	}
	return "", false
}

// toolkit adds the library directories of the CUDA toolkit at root.
func (s *search) toolkit(root string) {
	s.file(filepath.Join(root, "lib64"))
	s.file(filepath.Join(root, "lib"))
}

// toolkits adds the toolkits under /usr/local: cuda, unless it links to a
// toolkit of another major; cuda-X, the major's chosen one; then cuda-X.Y,
// the newest first (X is cudaMajor).
func (s *search) toolkits() {
	cuda := filepath.Join(usrLocal, "cuda")
	if dst, err := filepath.EvalSymlinks(cuda); err == nil {
		if v, ok := toolkitVersion(filepath.Base(dst)); ok && v[0] != cudaMajor {
			// Named by $CUDA_PATH or $CUDA_HOME, it was searched already.
			if !s.seen[filepath.Join(cuda, "lib64", s.name)] {
				s.add(candidate{path: cuda, skip: "links to " + dst + ", not a CUDA " + strconv.Itoa(cudaMajor) + " toolkit; not searched"})
			}
		} else {
			s.toolkit(cuda)
		}
	} else {
		s.toolkit(cuda)
	}
	s.toolkit(filepath.Join(usrLocal, "cuda-"+strconv.Itoa(cudaMajor)))
	dirs, _ := filepath.Glob(filepath.Join(usrLocal, "cuda-"+strconv.Itoa(cudaMajor)+".*"))
	type versioned struct {
		dir string
		v   []int
	}
	var found []versioned
	for _, d := range dirs {
		if v, ok := toolkitVersion(filepath.Base(d)); ok {
			found = append(found, versioned{d, v})
		}
	}
	slices.SortFunc(found, func(a, b versioned) int { return slices.Compare(b.v, a.v) })
	for _, f := range found {
		s.toolkit(f.dir)
	}
}

// toolkitVersion parses a toolkit directory's name, cuda-X or cuda-X.Y[.Z].
func toolkitVersion(base string) ([]int, bool) {
	rest, ok := strings.CutPrefix(base, "cuda-")
	if !ok {
		return nil, false
	}
	var v []int
	for _, f := range strings.Split(rest, ".") {
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 {
			return nil, false
		}
		v = append(v, n)
	}
	return v, true
}

// sitePackages returns prefix/lib/python3.N/<kind> for each kind and every
// Python 3 found there, the newest Python first.
func sitePackages(prefix string, kinds ...string) []string {
	pys, _ := filepath.Glob(filepath.Join(prefix, "lib", "python3.*"))
	slices.SortStableFunc(pys, func(a, b string) int {
		if c := pythonMinor(b) - pythonMinor(a); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	var dirs []string
	for _, py := range pys {
		for _, k := range kinds {
			if fi, err := os.Stat(filepath.Join(py, k)); err == nil && fi.IsDir() {
				dirs = append(dirs, filepath.Join(py, k))
			}
		}
	}
	return dirs
}

// pythonMinor returns N of a directory python3.N (or python3.Nt).
func pythonMinor(dir string) int {
	v := strings.TrimPrefix(filepath.Base(dir), "python3.")
	i := 0
	for i < len(v) && '0' <= v[i] && v[i] <= '9' {
		i++
	}
	n, _ := strconv.Atoi(v[:i])
	return n
}

// wheels adds the NVIDIA wheels' directories of each site-packages:
// nvidia/cuX/lib (X is cudaMajor), then the library's own wheel's directory.
func (s *search) wheels(sitePackages []string) {
	base, _, _ := strings.Cut(s.name, ".so")
	for _, sp := range sitePackages {
		s.file(filepath.Join(sp, "nvidia", "cu"+strconv.Itoa(cudaMajor), "lib"))
		if d, ok := wheelDirs[base]; ok {
			s.file(filepath.Join(sp, filepath.FromSlash(d)))
		}
	}
}

// file adds the library's file in dir.
func (s *search) file(dir string) {
	s.add(candidate{path: filepath.Join(dir, s.name)})
}

func (s *search) add(c candidate) {
	if !s.seen[c.path] {
		s.seen[c.path] = true
		s.c = append(s.c, c)
	}
}
