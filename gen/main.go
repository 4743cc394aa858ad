package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
)

func main() {
	// Every parse, one of each package for each CUDA major (two with
	// -check-targets), lives until the end, without its AST: collecting
	// garbage a quarter as often as by default saves about a fifth of
	// gen's CPU time, for more memory (0.5 to 0.7 GB in all for make
	// generate of two majors, against 0.35 GB; 0.8 to 1.1 GB with
	// -check-targets).
	debug.SetGCPercent(400)
	// Past a file size limit (RLIMIT_FSIZE), a write fails with EFBIG,
	// which gen reports, rather than killing it.
	signal.Ignore(syscall.SIGXFSZ)
	o, err := flags(flag.CommandLine, os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		flag.Usage()
		os.Exit(2)
	}
	if err := o.run(); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

// options are gen's command line.
type options struct {
	pkg    string // the package to generate, by name
	config string // the packages' configuration file
	out    string // where to write instead of the packages' directories
	all    string // generate every package under this directory
	check  bool   // -check-targets
	model  bool   // print the model instead of writing files
}

// flags parses gen's command line.
func flags(fs *flag.FlagSet, args []string) (o options, err error) {
	fs.StringVar(&o.pkg, "pkg", "", "the package to generate, by the name its section of the configuration file gives")
	fs.StringVar(&o.config, "config", "", "the packages' configuration file (default gen/packages.txt in the current directory or the nearest above it that has one)")
	fs.StringVar(&o.out, "out", "", "write the files to this directory instead of the package's (with -all, each package's under it, at the package's path relative to -all's directory)")
	fs.StringVar(&o.all, "all", "", "generate every package of the configuration file that is in this directory or under it, in one process")
	fs.BoolVar(&o.check, "check-targets", false, "parse each package for linux/"+strings.Join(targets, " and linux/")+", not for the first alone, and write nothing where they would give different code")
	fs.BoolVar(&o.model, "model", false, "print the model as JSON instead of writing files")
	if err = fs.Parse(args); err != nil {
		return
	}
	switch {
	case fs.NArg() > 0:
		err = fmt.Errorf("arguments %q: a package's configuration is in the configuration file, and -pkg names it", fs.Args())
	case o.all == "" && o.pkg == "":
		err = fmt.Errorf("-pkg or -all is required")
	case o.all != "" && o.pkg != "":
		err = fmt.Errorf("-all generates every package: no -pkg")
	case o.all != "" && o.model:
		err = fmt.Errorf("-model prints one package's model: no -all")
	}
	return
}

// run reads the configuration file and generates what o asks for.
func (o options) run() error {
	file := o.config
	if file == "" {
		var err error
		if file, err = configFile("."); err != nil {
			return err
		}
	}
	cfgs, err := readPackages(file)
	if err != nil {
		return err
	}
	if o.all != "" {
		return generateAll(cfgs, o.all, o.out, o.check)
	}
	i := slices.IndexFunc(cfgs, func(c *config) bool { return c.pkg == o.pkg })
	if i < 0 {
		return fmt.Errorf("%s has no package %s", file, o.pkg)
	}
	cfg := *cfgs[i]
	cfg.out, cfg.check = cfg.dest, o.check
	if o.out != "" {
		cfg.out = o.out
	}
	return run(cfg, o.model)
}

// forMajor returns cfg for the CUDA major m: its header directories and
// library file name. With a headers line (m is nil), it returns cfg.
func (cfg config) forMajor(m *major) (config, error) {
	if m == nil {
		return cfg, nil
	}
	dir, ok := m.headers[cfg.from]
	if !ok {
		return cfg, fmt.Errorf("%s has no headers %s line", m.file, cfg.from)
	}
	cfg.headerDir, cfg.major = dir, m
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

// majorsOf returns the CUDA majors cfg is generated for: nil alone with a
// headers line.
func majorsOf(cfg config) ([]*major, error) {
	if cfg.headerDir != "" {
		return []*major{nil}, nil
	}
	return readMajors(cfg.majors)
}

// run generates the package cfg describes, or prints its model: once with a
// headers line, else once for each CUDA major.
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
	// differ are the paths staged twice with different contents: a file
	// that is not the CUDA major's (zsymbols.h, zshim.go) comes out of each
	// major's generation, and they must agree.
	differ []string
}

// add stages files, by path relative to dir.
func (s *staged) add(dir string, files map[string][]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.files == nil {
		s.files = map[string][]byte{}
	}
	for name, b := range files {
		path := filepath.Join(dir, name)
		if old, ok := s.files[path]; ok && !bytes.Equal(old, b) {
			s.differ = append(s.differ, path)
		}
		s.files[path] = b
	}
}

// write writes the staged files, all or none (see writeFiles), unless two
// majors gave one of them different contents.
func (s *staged) write() error {
	if len(s.differ) > 0 {
		slices.Sort(s.differ)
		return fmt.Errorf("the CUDA majors give different contents to %s", strings.Join(s.differ, ", "))
	}
	return writeFiles("", s.files)
}

// write emits pkg, stages its files in cfg.out and writes its report to w.
func write(pkg *Package, cfg config, w io.Writer, out *staged) error {
	absDest, err := filepath.Abs(cfg.dest)
	if err != nil {
		return err
	}
	var dirs []string
	for _, d := range append([]string{cfg.headerDir}, cfg.includeDirs...) {
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
