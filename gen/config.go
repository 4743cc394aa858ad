package main

import (
	"bufio"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// config says what to generate for one package: its section of the
// packages' configuration file (see readPackages), plain data with its
// paths absolute, and what a run adds: the CUDA major, the target and where
// the files go.
type config struct {
	pkg  string // the Go package's name (package)
	dest string // the package's directory, where it lives (dir)
	out  string // the directory the files are written to: dest, or under -out
	// headerDir is the directory of the headers the package binds
	// (headers); without a headers line, the CUDA major's (from).
	headerDir   string
	headers     []string // headers whose functions are the package's (include)
	typeHeaders []string // headers included for their types and constants only (types)
	prefixes    []string // C name prefixes to drop (prefix)
	omit        []string // prefixes of the C names of declarations left out (omit)
	errType     string   // C name of the status type (error)
	// perThread is the macro that, defined, makes the headers select the
	// per-thread default stream entry points (_ptds, _ptsz), or ""
	// (perthread).
	perThread string
	libEnv    string // the environment variable that may name the library's path (lib)
	lib       string // the library's file name: lib's with headers, else the major's
	// use are the generated packages whose types this one references
	// instead of emitting them again (use).
	use  []*config
	from string // the key of the majors' header directory the package owns (from)
	// majors is the directory of the majors' data files (the file's majors
	// line).
	majors string
	// includeDirs are further include directories, whose declarations are
	// not the package's: with from, the major's CUDA headers.
	includeDirs []string
	// cflags, majorConst, tests, symbols and shim ask for a hand-written
	// package's small files (handwritten; see handwrittenFiles).
	cflags, majorConst, tests, symbols, shim bool
	// procs are the driver functions a hand-written package's C calls
	// through cuGetProcAddress, in its order (proc), each at the latest
	// version no later than procBase (procbase), or its first after it:
	// zsymbols.h lists them (see symbolsHeader).
	procs    []string
	procBase int
	// guide is where the library's documentation is (guide, sections), or
	// nil.
	guide *Guide
	// facts are the library's facts (calls, callback, keeps,
	// stringarrays).
	facts libraryFacts
	// attrs and attrPlurals are the package's Attrs and AttrPlurals, by C
	// name (getattr, setattr, getattrs).
	attrs       map[string]AttrFunc
	attrPlurals map[string]string

	// arch is the GOARCH, one of targets, whose C ABI lays the types out.
	arch string
	// check asks for a parse for every target, not only the first, and
	// for files only where they give the same code (-check-targets).
	check bool
	// major is the CUDA major the package is generated for, whose data
	// file gives headerDir and lib; nil with a headers line.
	major *major
}

// handwritten reports whether cfg is a hand-written package's, which gen
// gives only the small files its handwritten line names.
func (cfg config) handwritten() bool {
	return cfg.cflags || cfg.majorConst || cfg.tests || cfg.symbols || cfg.shim
}

// libraryFacts are what gen knows about a library's calls beyond their
// prototypes, from its documentation: whether they may call into the
// program, and which keep a pointer argument after they return. They decide
// the cgo annotations (see annotate.go and the package doc).
type libraryFacts struct {
	// known reports that the package's section has a calls line, which
	// says that gen knows the library's facts. A package without one
	// gets no annotation.
	known bool
	// callbacks are the calls that register a function of the program,
	// each with the calls that may then run it before they return; every
	// ("*") stands for every call of the library, and of the libraries
	// that call into it (a logger: any call may log).
	callbacks map[string][]string
	// calls are the packages whose libraries this one calls into, so that
	// what their callbacks may run inside their calls they may run inside
	// this one's.
	calls []string
	// keeps are the calls that use a pointer argument after they return.
	// It is complete only for the libraries where it is needed: where no
	// callback can run inside every call. Elsewhere no call is annotated
	// whatever it keeps.
	keeps []string
	// stringArrays are the parameters, as "function.parameter", that the
	// headers declare const char ** but that the call reads, arrays of
	// strings, not strings it sets (see stringOut).
	stringArrays []string
	// back are the calls, by C name, that may run a function of the
	// program before they return, with every for all of them (see
	// callsBack).
	back map[string]bool
}

// every stands, in libraryFacts.callbacks, for every call.
const every = "*"

// readData reads one of gen's data files, a CUDA major's or the packages'
// configuration: lines of a key and its values, separated by spaces, and
// comments from a # that starts a word to the end of the line. It calls set
// with each line's number, key and values, and adds the file's name and
// the line's number to set's error.
func readData(path string, set func(line int, key string, values []string) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		fields := strings.Fields(sc.Text())
		for i, w := range fields {
			if strings.HasPrefix(w, "#") {
				fields = fields[:i]
				break
			}
		}
		if len(fields) == 0 {
			continue
		}
		if err := set(n, fields[0], fields[1:]); err != nil {
			return fmt.Errorf("%s:%d: %w", path, n, err)
		}
	}
	return sc.Err()
}

// configFile returns the packages' configuration file that gen reads
// without -config: gen/packages.txt in dir or the nearest directory above
// it that has one.
func configFile(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := abs; ; d = filepath.Dir(d) {
		f := filepath.Join(d, "gen", "packages.txt")
		if _, err := os.Stat(f); err == nil {
			return f, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no gen/packages.txt in %s or above it (give -config)", abs)
		}
	}
}

// packageKeys are the keys of a package's section, each with the fewest and
// the most values it takes (-1: no limit).
var packageKeys = map[string][2]int{
	"dir":          {1, 1},
	"headers":      {1, 1},
	"from":         {1, 1},
	"include":      {1, -1},
	"types":        {1, -1},
	"prefix":       {1, -1},
	"omit":         {1, -1},
	"error":        {1, 1},
	"perthread":    {1, 1},
	"lib":          {1, 2},
	"use":          {1, -1},
	"handwritten":  {1, 5},
	"proc":         {1, 1},
	"procbase":     {1, 1},
	"guide":        {2, -1},
	"sections":     {0, -1},
	"calls":        {0, -1},
	"callback":     {2, -1},
	"keeps":        {1, -1},
	"stringarrays": {1, -1},
	"getattr":      {3, 4},
	"setattr":      {3, 4},
	"getattrs":     {2, 2},
}

// repeated are the keys a section may have more than once, each line about
// the function its first value names.
var repeated = []string{"callback", "getattr", "setattr", "getattrs", "proc"}

// handwrittenKeys are the keys a hand-written package's section may have.
var handwrittenKeys = []string{"package", "dir", "from", "handwritten", "proc", "procbase"}

// packageSection is a package's section of the configuration file as it is
// read.
type packageSection struct {
	file     string // the configuration file's path
	cfg      *config
	keys     map[string]int // the line of each key given, package's included
	use      []string       // the use line's packages, by name
	sections []string       // the sections line's families
}

// readPackages reads the packages' configuration file at path
// (gen/packages.txt): its majors line, then a section for each package,
// from its package line to the next (the package doc lists the keys). It
// returns the packages in the order of the file, with their paths made
// absolute, relative to the file, and what they name of each other
// resolved: the packages they use and the facts of those they call into.
func readPackages(path string) ([]*config, error) {
	path, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(path)
	var (
		secs     []*packageSection
		majors   string
		majorsAt int // the line of majors
		byName   = map[string]*packageSection{}
	)
	err = readData(path, func(n int, key string, v []string) error {
		switch {
		case key == "package":
			if len(v) != 1 {
				return arity(key, 1, 1, len(v))
			}
			if s := byName[v[0]]; s != nil {
				return fmt.Errorf("package %s: a second section (the first is at line %d)", v[0], s.keys["package"])
			}
			s := &packageSection{file: path, cfg: &config{pkg: v[0], from: "cuda"}, keys: map[string]int{"package": n}}
			secs = append(secs, s)
			byName[v[0]] = s
			return nil
		case key == "majors":
			switch {
			case len(secs) > 0:
				return fmt.Errorf("majors is the file's, not a package's: it goes before the first package line")
			case len(v) != 1:
				return arity(key, 1, 1, len(v))
			case majors != "":
				return fmt.Errorf("a second majors line (the first is at line %d)", majorsAt)
			}
			majors, majorsAt = filepath.Join(dir, v[0]), n
			return nil
		case len(secs) == 0:
			if _, ok := packageKeys[key]; ok {
				return fmt.Errorf("%s before the first package line: which package's is it?", key)
			}
			return fmt.Errorf("unknown key %q", key)
		}
		return secs[len(secs)-1].set(n, key, v, dir)
	})
	if err != nil {
		return nil, err
	}
	if len(secs) == 0 {
		return nil, fmt.Errorf("%s: no package line", path)
	}
	for _, s := range secs {
		if err := s.check(majors); err != nil {
			return nil, err
		}
	}
	cfgs := make([]*config, len(secs))
	for i, s := range secs {
		if err := s.resolve(byName); err != nil {
			return nil, err
		}
		cfgs[i] = s.cfg
	}
	facts := map[string]*libraryFacts{}
	for _, c := range cfgs {
		facts[c.pkg] = &c.facts
	}
	for _, c := range cfgs {
		c.facts.back = callsBack(c.pkg, facts)
	}
	return cfgs, nil
}

// arity returns the error of a line of key with n values, where it takes
// from min to max (-1: no limit).
func arity(key string, min, max, n int) error {
	values := func(n int) string {
		if n == 1 {
			return "1 value"
		}
		return fmt.Sprintf("%d values", n)
	}
	switch {
	case min == max:
		return fmt.Errorf("%s takes %s, not %d", key, values(min), n)
	case max < 0:
		return fmt.Errorf("%s takes at least %s, not %d", key, values(min), n)
	default:
		return fmt.Errorf("%s takes %d to %d values, not %d", key, min, max, n)
	}
}

// set records the line n of the section, key and its values v, with paths
// relative to dir.
func (s *packageSection) set(n int, key string, v []string, dir string) error {
	want, ok := packageKeys[key]
	switch {
	case !ok:
		return fmt.Errorf("unknown key %q", key)
	case len(v) < want[0] || want[1] >= 0 && len(v) > want[1]:
		return arity(key, want[0], want[1], len(v))
	}
	if first, dup := s.keys[key]; dup && !slices.Contains(repeated, key) {
		return fmt.Errorf("a second %s line (the first is at line %d)", key, first)
	}
	s.keys[key] = n
	c := s.cfg
	switch key {
	case "dir":
		c.dest = filepath.Join(dir, v[0])
	case "headers":
		c.headerDir = filepath.Join(dir, v[0])
	case "from":
		c.from = v[0]
	case "include":
		c.headers = v
	case "types":
		c.typeHeaders = v
	case "prefix":
		c.prefixes = v
	case "omit":
		c.omit = v
	case "error":
		c.errType = v[0]
	case "perthread":
		c.perThread = v[0]
	case "lib":
		c.libEnv = v[0]
		if len(v) == 2 {
			c.lib = v[1]
		}
	case "use":
		s.use = v
	case "handwritten":
		for _, f := range v {
			switch f {
			case "cflags":
				c.cflags = true
			case "major":
				c.majorConst = true
			case "tests":
				c.tests = true
			case "symbols":
				c.symbols = true
			case "shim":
				c.shim = true
			default:
				return fmt.Errorf("handwritten %s: the files are cflags, major, tests, symbols and shim", f)
			}
		}
	case "proc":
		if slices.Contains(c.procs, v[0]) {
			return fmt.Errorf("proc %s: a second line for %[1]s", v[0])
		}
		c.procs = append(c.procs, v[0])
	case "procbase":
		b, err := strconv.Atoi(v[0])
		if err != nil || b <= 0 {
			return fmt.Errorf("procbase %s: a CUDA version as the driver numbers it (12000 for 12.0)", v[0])
		}
		c.procBase = b
	case "guide":
		c.guide = &Guide{URL: v[0], Title: strings.Join(v[1:], " ")}
		if !strings.HasPrefix(v[0], "https://") {
			return fmt.Errorf("guide %s: the guide's URL, https://..., comes first", v[0])
		}
	case "sections":
		s.sections = v
	case "calls":
		c.facts.known, c.facts.calls = true, v
	case "getattr", "setattr":
		if _, dup := c.attrs[v[0]]; dup {
			return fmt.Errorf("%s %s: a second line for %[2]s", key, v[0])
		}
		if c.attrs == nil {
			c.attrs = map[string]AttrFunc{}
		}
		a := AttrFunc{Attr: v[1], Value: v[2], Set: key == "setattr"}
		if len(v) == 4 {
			a.Size = v[3]
		}
		c.attrs[v[0]] = a
	case "getattrs":
		if _, dup := c.attrPlurals[v[0]]; dup {
			return fmt.Errorf("getattrs %s: a second line for %[1]s", v[0])
		}
		if c.attrPlurals == nil {
			c.attrPlurals = map[string]string{}
		}
		c.attrPlurals[v[0]] = v[1]
	case "callback":
		if _, dup := c.facts.callbacks[v[0]]; dup {
			return fmt.Errorf("callback %s: a second line", v[0])
		}
		if c.facts.callbacks == nil {
			c.facts.callbacks = map[string][]string{}
		}
		c.facts.callbacks[v[0]] = v[1:]
	case "keeps":
		c.facts.keeps = v
	case "stringarrays":
		for _, p := range v {
			if f, prm, ok := strings.Cut(p, "."); !ok || f == "" || prm == "" {
				return fmt.Errorf("stringarrays %s: not function.parameter", p)
			}
		}
		c.facts.stringArrays = v
	}
	return nil
}

// errorf returns an error about the section's package at the line of key,
// or of its package line where it has no key line.
func (s *packageSection) errorf(key, format string, args ...any) error {
	n, ok := s.keys[key]
	if !ok {
		n = s.keys["package"]
	}
	return fmt.Errorf("%s:%d: package %s: %s", s.file, n, s.cfg.pkg, fmt.Sprintf(format, args...))
}

// check checks that the section is whole and consistent once read, and
// gives it the file's majors directory.
func (s *packageSection) check(majors string) error {
	c := s.cfg
	has := func(key string) bool { _, ok := s.keys[key]; return ok }
	if !has("dir") {
		return s.errorf("package", "no dir line")
	}
	if c.handwritten() {
		keys := slices.SortedFunc(maps.Keys(s.keys), func(a, b string) int { return s.keys[a] - s.keys[b] })
		for _, key := range keys { // the first in the file
			if !slices.Contains(handwrittenKeys, key) {
				return s.errorf(key, "a hand-written package (handwritten) has no %s line: gen generates none of its code", key)
			}
		}
		if c.symbols && (len(c.procs) == 0 || c.procBase == 0) {
			return s.errorf("handwritten", "handwritten symbols needs proc lines and a procbase line")
		}
		if c.shim && !c.cflags {
			return s.errorf("handwritten", "handwritten shim needs cflags: gen parses shim.h with the major's headers on the include path, where zcflags puts them for cgo")
		}
		for _, key := range []string{"proc", "procbase"} {
			if has(key) && !c.symbols {
				return s.errorf(key, "a %s line without handwritten symbols, the file that lists them", key)
			}
		}
	} else {
		for _, key := range []string{"include", "lib"} {
			if !has(key) {
				return s.errorf("package", "no %s line", key)
			}
		}
		switch {
		case c.headerDir != "" && c.lib == "":
			return s.errorf("lib", "lib %s: with a headers line, lib names the library's file too (lib %[1]s libx.so.1)", c.libEnv)
		case c.headerDir == "" && c.lib != "":
			return s.errorf("lib", "lib %s %s: the library's file is each CUDA major's, which its data file's lib line names, unless the package has a headers line", c.libEnv, c.lib)
		}
	}
	switch {
	case c.headerDir != "" && has("from"):
		return s.errorf("from", "from picks a CUDA major's header directory: not with a headers line")
	case c.headerDir == "" && majors == "":
		return s.errorf("package", "no headers line, and no majors line before the first package to say where the CUDA majors' data files are")
	case has("sections") && c.guide == nil:
		return s.errorf("sections", "sections without a guide line")
	}
	for _, key := range []string{"callback", "keeps"} {
		if has(key) && !c.facts.known {
			return s.errorf(key, "%s without a calls line, which says that gen knows the library's facts", key)
		}
	}
	for plural, one := range c.attrPlurals {
		if _, ok := c.attrs[one]; !ok {
			return s.errorf("getattrs", "getattrs %s %s: no getattr line for %[2]s", plural, one)
		}
	}
	if has("sections") {
		c.guide.Sections, c.guide.Families = true, s.sections
	}
	c.majors = majors
	return nil
}

// resolve resolves the packages the section's use and calls lines name, by
// name, among byName, and refuses a cycle of use lines.
func (s *packageSection) resolve(byName map[string]*packageSection) error {
	c := s.cfg
	for _, name := range s.use {
		u := byName[name]
		switch {
		case u == nil:
			return s.errorf("use", "use %s: no such package", name)
		case u.cfg.handwritten():
			return s.errorf("use", "use %s: a hand-written package, whose types gen does not know", name)
		}
		if chain := u.uses(s, byName, nil); chain != nil {
			return s.errorf("use", "use %s: a cycle: %s", name, strings.Join(append([]string{c.pkg}, chain...), " uses "))
		}
		c.use = append(c.use, u.cfg)
	}
	for _, name := range c.facts.calls {
		switch u := byName[name]; {
		case u == nil:
			return s.errorf("calls", "calls %s: no such package", name)
		case !u.cfg.facts.known:
			return s.errorf("calls", "calls %s, which has no calls line: what its callbacks may run is not known", name)
		}
	}
	return nil
}

// uses returns the chain of packages, s first, through whose use lines s
// uses target, or nil when it does not; seen are the packages on the chain
// so far.
func (s *packageSection) uses(target *packageSection, byName map[string]*packageSection, seen []string) []string {
	if s == target {
		return []string{s.cfg.pkg}
	}
	if slices.Contains(seen, s.cfg.pkg) {
		return nil
	}
	seen = append(seen, s.cfg.pkg)
	for _, name := range s.use {
		if u := byName[name]; u != nil {
			if chain := u.uses(target, byName, seen); chain != nil {
				return append([]string{s.cfg.pkg}, chain...)
			}
		}
	}
	return nil
}

// callsBack returns the calls of package pkg, by C name, that may run a
// function of the program before they return, with every for all of them:
// those its callbacks name, and every of those of the libraries it calls
// into, by facts, the packages' facts by name.
func callsBack(pkg string, facts map[string]*libraryFacts) map[string]bool {
	r := map[string]bool{}
	seen := map[string]bool{}
	var walk func(pkg string, own bool)
	walk = func(pkg string, own bool) {
		f := facts[pkg]
		if seen[pkg] || f == nil {
			return
		}
		seen[pkg] = true
		for _, run := range f.callbacks {
			for _, c := range run {
				if c == every || own {
					r[c] = true
				}
			}
		}
		for _, u := range f.calls {
			walk(u, false)
		}
	}
	walk(pkg, true)
	return r
}
