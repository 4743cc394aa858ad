package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/gocuda/cuda/internal/genline"
)

func main() {
	// Every parse, one of each package for each CUDA major (two with
	// -check-targets), lives until the end, without its AST: collecting
	// garbage a quarter as often as by default saves about a fifth of
	// gen's CPU time, for more memory (0.5 to 0.7 GB in all for make
	// generate of two majors, against 0.35 GB; 0.8 to 1.1 GB with
	// -check-targets).
	debug.SetGCPercent(400)
	cfg, model, all, err := flags(flag.CommandLine, os.Args[1:])
	if err == nil && all == "" {
		cfg.majors, err = majorsDir(cfg.majors, ".")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		flag.Usage()
		os.Exit(2)
	}
	if all != "" {
		err = generateAll(all, cfg.out, cfg.check)
	} else {
		err = run(cfg, model)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

// flags parses gen's command line into a config, -model and -all.
func flags(fs *flag.FlagSet, args []string) (cfg config, model bool, all string, err error) {
	var include, types, prefix, lib, inc, use, omit string
	fs.StringVar(&cfg.dir, "headers", "", "directory of the headers the package owns; without it, the package is generated once for each CUDA major that -majors describes")
	fs.StringVar(&cfg.majors, "majors", "", "directory of the CUDA majors' data files, cuda*.txt (default headers/ of the module)")
	fs.StringVar(&cfg.from, "from", "cuda", "without -headers: the majors' header directory that the package owns, cuda or nccl (whose headers include CUDA's, which go on the include path too)")
	fs.StringVar(&inc, "I", "", "comma-separated further include directories, whose declarations are not emitted")
	fs.StringVar(&cfg.out, "out", "", "output directory (default .; with -all, the directory the packages are written under instead of in place)")
	fs.StringVar(&cfg.dest, "dest", "", "directory the package will live in, for cgo's relative include path (default -out)")
	fs.StringVar(&cfg.pkg, "pkg", "", "Go package name")
	fs.StringVar(&include, "include", "", "comma-separated headers whose functions are bound")
	fs.StringVar(&types, "types", "", "comma-separated headers included for their types and constants only")
	fs.StringVar(&use, "use", "", "comma-separated directories of generated packages whose types are referenced, not emitted again")
	fs.StringVar(&prefix, "prefix", "", "comma-separated C name prefixes to drop")
	fs.StringVar(&omit, "omit", "", "comma-separated prefixes of the C names of declarations to leave out (NCCL's pnccl profiling aliases)")
	fs.StringVar(&lib, "lib", "", "the shared library to open: the environment variable that may name its path, whose file name each major gives (GOCUDA_CUDART); with -headers, ENV=FILE")
	fs.StringVar(&cfg.errType, "error", "", "C name of the status type, whose values are errors")
	fs.StringVar(&cfg.perThread, "perthread", "", "macro that selects the per-thread default stream entry points when defined")
	fs.BoolVar(&cfg.cflags, "cflags", false, "for a hand-written package: write zcflags_<major>.go, which puts each major's CUDA headers on cgo's include path")
	fs.BoolVar(&cfg.majorConst, "major", false, "for a hand-written package: write zmajor_<major>.go, the constants cudaMajor and MinDriver and the versions lines as releases")
	fs.BoolVar(&cfg.tests, "tests", false, "for a hand-written package: write zversion_<major>_test.go, the constants its tests read")
	fs.BoolVar(&cfg.check, "check-targets", false, "parse each package for linux/"+strings.Join(targets, " and linux/")+", not for the first alone, and write nothing where they would give different code")
	fs.BoolVar(&model, "model", false, "print the model as JSON instead of writing files")
	fs.StringVar(&all, "all", "", "generate every package under this directory as its //go:generate line says, in one process")
	if err = fs.Parse(args); err != nil {
		return
	}
	if all != "" {
		fs.Visit(func(f *flag.Flag) {
			if f.Name != "all" && f.Name != "out" && f.Name != "check-targets" {
				err = fmt.Errorf("-all takes no flag but -out and -check-targets, not -%s", f.Name)
			}
		})
		return
	}
	cfg.headers = list(include)
	cfg.typeHeaders = list(types)
	cfg.prefixes = list(prefix)
	cfg.includeDirs = list(inc)
	cfg.use = list(use)
	cfg.omit = list(omit)
	if cfg.out == "" {
		cfg.out = "."
	}
	if cfg.dest == "" {
		cfg.dest = cfg.out
	}
	var hasFile bool
	cfg.libEnv, cfg.lib, hasFile = strings.Cut(lib, "=")
	switch {
	case cfg.pkg == "":
		err = fmt.Errorf("-pkg is required")
	case cfg.handwritten():
		if include != "" || lib != "" || cfg.dir != "" {
			err = fmt.Errorf("-cflags, -major and -tests are for a hand-written package: no -include, -lib or -headers")
		}
	case include == "" || lib == "":
		err = fmt.Errorf("-include and -lib are required")
	case cfg.dir != "" && !hasFile:
		err = fmt.Errorf("with -headers, -lib is ENV=FILE")
	case cfg.dir == "" && hasFile:
		err = fmt.Errorf("-lib ENV=FILE needs -headers: else each major gives the file name")
	}
	return
}

// handwritten reports whether cfg is a hand-written package's, which gen
// gives only the small files of -cflags, -major and -tests.
func (cfg config) handwritten() bool { return cfg.cflags || cfg.majorConst || cfg.tests }

// forMajor returns cfg for the CUDA major m: its header directories and
// library file name. With -headers (m is nil), it returns cfg.
func (cfg config) forMajor(m *major) (config, error) {
	if m == nil {
		return cfg, nil
	}
	dir, ok := m.headers[cfg.from]
	if !ok {
		return cfg, fmt.Errorf("%s has no headers %s line", m.file, cfg.from)
	}
	cfg.dir, cfg.major = dir, m
	if cfg.from != "cuda" {
		cfg.includeDirs = append(slices.Clip(cfg.includeDirs), m.headers["cuda"])
	}
	if !cfg.handwritten() {
		if cfg.lib, ok = m.libs[cfg.libEnv]; !ok {
			return cfg, fmt.Errorf("%s has no lib %s line", m.file, cfg.libEnv)
		}
	}
	return cfg, nil
}

// majorsOf returns the CUDA majors cfg is generated for: nil alone with
// -headers.
func majorsOf(cfg config) ([]*major, error) {
	if cfg.dir != "" {
		return []*major{nil}, nil
	}
	return readMajors(cfg.majors)
}

// list splits a comma-separated flag value; "" is the empty list.
func list(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// generateArgs returns the arguments of the //go:generate line of the
// package in dir, and the file that has it, or nil when no file has one.
func generateArgs(dir string) (file string, args []string, err error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return "", nil, err
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			return "", nil, err
		}
		if args := genline.Args(src); args != nil {
			return f, args, nil
		}
	}
	return "", nil, nil
}

// packageConfig reads the configuration of the package in dir from its
// //go:generate line, with the paths in it made relative to the current
// directory.
func packageConfig(dir string) (config, error) {
	f, args, err := generateArgs(dir)
	if err != nil {
		return config{}, err
	}
	if args == nil {
		return config{}, fmt.Errorf("no //go:generate go run ../gen line in %s", dir)
	}
	cfg, _, _, err := flags(flag.NewFlagSet(f, flag.ContinueOnError), args)
	if err != nil {
		return config{}, fmt.Errorf("%s: %w", f, err)
	}
	if cfg.dir != "" {
		cfg.dir = filepath.Join(dir, cfg.dir)
	}
	if cfg.majors, err = majorsDir(cfg.majors, dir); err != nil {
		return config{}, err
	}
	cfg.out = filepath.Join(dir, cfg.out)
	cfg.dest = filepath.Join(dir, cfg.dest)
	for i, d := range cfg.includeDirs {
		cfg.includeDirs[i] = filepath.Join(dir, d)
	}
	for i, d := range cfg.use {
		cfg.use[i] = filepath.Join(dir, d)
	}
	return cfg, nil
}

// run generates the package cfg describes, or prints its model: once with
// -headers, else once for each CUDA major.
func run(cfg config, model bool) error {
	majors, err := majorsOf(cfg)
	if err != nil {
		return err
	}
	c := new(cache)
	out := new(staged)
	var pkgs []*Package
	for _, m := range majors {
		mcfg, err := cfg.forMajor(m)
		if err != nil {
			return err
		}
		if cfg.handwritten() {
			files, err := handwrittenFiles(mcfg)
			if err != nil {
				return err
			}
			out.add(mcfg.out, files)
			continue
		}
		pkg, err := parse(mcfg, c)
		if err != nil {
			return err
		}
		pkgs = append(pkgs, pkg)
		if model {
			enc := json.NewEncoder(os.Stdout)
			enc.SetIndent("", "\t")
			if err := enc.Encode(pkg); err != nil {
				return err
			}
			continue
		}
		if err := write(pkg, mcfg, os.Stderr, out); err != nil {
			return err
		}
	}
	if pkgs != nil {
		if err := checkFacts(pkgs); err != nil {
			return err
		}
	}
	return out.write()
}

// staged holds the files of a run until every package and major has been
// generated: a run that fails writes none, and leaves no package with
// one major's files new and another's old. It is safe for concurrent use.
type staged struct {
	mu    sync.Mutex
	files map[string][]byte // by path
}

// add stages files, by path relative to dir.
func (s *staged) add(dir string, files map[string][]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.files == nil {
		s.files = map[string][]byte{}
	}
	for name, b := range files {
		s.files[filepath.Join(dir, name)] = b
	}
}

// write writes the staged files.
func (s *staged) write() error {
	return writeFiles("", s.files)
}

// write emits pkg, stages its files in cfg.out and writes its report to w.
func write(pkg *Package, cfg config, w io.Writer, out *staged) error {
	absDest, err := filepath.Abs(cfg.dest)
	if err != nil {
		return err
	}
	var dirs []string
	for _, d := range append([]string{cfg.dir}, cfg.includeDirs...) {
		a, err := filepath.Abs(d)
		if err != nil {
			return err
		}
		dirs = append(dirs, a)
	}
	files, err := emit(pkg, absDest, dirs, cfg.major)
	if err != nil {
		return err
	}
	out.add(cfg.out, files)
	report(w, pkg, cfg.major)
	return nil
}

// writeFiles writes files, by path relative to dir.
func writeFiles(dir string, files map[string][]byte) error {
	for _, name := range sortedKeys(files) {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, files[name], 0o644); err != nil {
			return err
		}
	}
	return nil
}

// report prints the closing counts: what was emitted, and what was skipped
// and why, naming the package and its CUDA major.
func report(w io.Writer, pkg *Package, m *major) {
	name := pkg.Name
	if m != nil {
		name += " (" + m.suffix + ")"
	}
	var fields, values int
	for _, r := range pkg.Records {
		fields += len(r.Fields)
	}
	for _, e := range pkg.Enums {
		values += len(e.Values)
	}
	fmt.Fprintf(w, "gen %s: emitted %d functions, %d enums (%d values), %d structs and unions (%d fields), %d typedefs, %d constants\n",
		name, len(pkg.Funcs), len(pkg.Enums), values, len(pkg.Records), fields, len(pkg.Typedefs), len(pkg.Consts))
	if len(pkg.Targets) > 1 {
		fmt.Fprintf(w, "gen %s: the same code for linux/%s\n", name, strings.Join(pkg.Targets, " and linux/"))
	}
	if pkg.PerThread != "" {
		n := 0
		for _, f := range pkg.Funcs {
			if f.PerThread != "" {
				n++
			}
		}
		fmt.Fprintf(w, "gen %s: %d functions have a per-thread default stream variant (%s)\n", name, n, pkg.PerThread)
		for _, s := range pkg.Wrappers {
			fmt.Fprintf(w, "gen %s: %s is defined inline by the headers, not exported: its function keeps the default symbol\n", name, s)
		}
	}
	for _, r := range pkg.Renamed {
		fmt.Fprintf(w, "gen %s: renamed %s to %s\n", name, r.CName, r.Reason)
	}
	for _, c := range pkg.Unfacted {
		fmt.Fprintf(w, "gen %s: the headers lack %s, which gen's facts name: its facts still hold\n", name, c)
	}
	byReason := map[string][]string{}
	for _, s := range pkg.Skipped {
		k := s.Kind + ": " + s.Reason
		byReason[k] = append(byReason[k], s.CName)
	}
	fmt.Fprintf(w, "gen %s: skipped %d\n", name, len(pkg.Skipped))
	keys := sortedKeys(byReason)
	for _, k := range keys {
		names := byReason[k]
		sort.Strings(names)
		fmt.Fprintf(w, "\t%d %s: %s\n", len(names), k, strings.Join(names, " "))
	}
}
