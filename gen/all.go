package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
)

// generateAll generates every package under root that a //go:generate line
// runs gen for, as that line says, in one process; like go generate ./...,
// it skips testdata and directories whose names start with . or _. With
// out, each package is written under out, at its path relative to root,
// instead of in place; with check (-check-targets), each is parsed for
// every target (see config.targets). The packages are generated
// concurrently, GOMAXPROCS at a time, once for each CUDA major (once with
// -headers), and each is parsed once for each: the packages that use it
// share its parse. The reports follow, in the packages' order.
func generateAll(root, out string, check bool) error {
	type job struct {
		dir string
		cfg config
		m   *major
	}
	var jobs []job
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if n := d.Name(); path != root && (n == "testdata" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_")) {
			return filepath.SkipDir
		}
		if _, args, err := generateArgs(path); args == nil || err != nil {
			return err
		}
		cfg, err := packageConfig(path)
		if err != nil {
			return err
		}
		cfg.check = check
		majors, err := majorsOf(cfg)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		for _, m := range majors {
			jobs = append(jobs, job{path, cfg, m})
		}
		return nil
	})
	if err != nil {
		return err
	}
	c := &cache{slots: make(chan struct{}, runtime.GOMAXPROCS(0))}
	stage := new(staged)
	reports := make([]bytes.Buffer, len(jobs))
	pkgs := make([]*Package, len(jobs))
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Go(func() {
			c.slots <- struct{}{}
			defer func() { <-c.slots }()
			var err error
			if pkgs[i], err = generate(c, j.dir, j.cfg, j.m, root, out, &reports[i], stage); err != nil {
				errs[i] = fmt.Errorf("%s: %w", j.dir, err)
			}
		})
	}
	wg.Wait()
	for _, r := range reports {
		os.Stderr.Write(r.Bytes())
	}
	// The jobs of a package are consecutive, one for each major.
	for i := 0; i < len(jobs); {
		n := 1
		for i+n < len(jobs) && jobs[i+n].dir == jobs[i].dir {
			n++
		}
		if !slices.Contains(pkgs[i:i+n], nil) {
			if err := checkFacts(pkgs[i : i+n]); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", jobs[i].dir, err))
			}
		}
		i += n
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return stage.write()
}

// generate generates the package in dir, which cfg describes, for the
// CUDA major m, parsed by c for each of cfg.targets, writes its report to
// w and returns it (nil for a hand-written package). With out, the package
// is written under out instead of under root. Its files are staged in
// stage, to be written once every package has been generated.
func generate(c *cache, dir string, cfg config, m *major, root, out string, w io.Writer, stage *staged) (*Package, error) {
	var pkg *Package
	if cfg.handwritten() {
		var err error
		if cfg, err = cfg.forMajor(m); err != nil {
			return nil, err
		}
	} else {
		var ps []*parser
		for _, arch := range cfg.targets() {
			p, err := c.load(dir, arch, m)
			if err != nil {
				return nil, err
			}
			ps = append(ps, p)
		}
		p, err := oneModel(ps)
		if err != nil {
			return nil, err
		}
		cfg, pkg = p.cfg, p.pkg
	}
	if out != "" {
		rel, err := filepath.Rel(root, cfg.out)
		if err != nil {
			return nil, err
		}
		cfg.out = filepath.Join(out, rel)
	}
	if pkg == nil {
		files, err := handwrittenFiles(cfg)
		if err != nil {
			return nil, err
		}
		stage.add(cfg.out, files)
		return nil, nil
	}
	return pkg, write(pkg, cfg, w, stage)
}

// cache parses generated packages as their //go:generate lines say, each
// once for each target asked for: the packages that use one share its
// parses. It is safe for concurrent use. With slots, which bounds the
// goroutines that work at once, a goroutine gives back its slot while it
// waits for a parse that another does.
type cache struct {
	mu     sync.Mutex
	parses map[parseKey]*parsed
	slots  chan struct{}
}

// parseKey names a parse: the package's absolute directory, the target and
// the CUDA major's suffix ("" with -headers).
type parseKey struct{ dir, arch, major string }

// parsed is a package's parse, p or err, set once done is closed.
type parsed struct {
	done chan struct{}
	p    *parser
	err  error
}

// load returns the parse for linux/arch and the CUDA major m (nil with
// -headers) of the generated package in dir, without its per-thread
// symbols.
func (c *cache) load(dir, arch string, m *major) (*parser, error) {
	a, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	key := parseKey{dir: a, arch: arch}
	if m != nil {
		key.major = m.suffix
	}
	c.mu.Lock()
	e, ok := c.parses[key]
	if !ok {
		if c.parses == nil {
			c.parses = map[parseKey]*parsed{}
		}
		e = &parsed{done: make(chan struct{})}
		c.parses[key] = e
	}
	c.mu.Unlock()
	if ok {
		c.wait(e.done)
		return e.p, e.err
	}
	e.p, e.err = c.parse(dir, arch, m)
	close(e.done)
	return e.p, e.err
}

// wait waits until done is closed, giving back the goroutine's slot, if
// any, while it does.
func (c *cache) wait(done chan struct{}) {
	select {
	case <-done:
		return
	default:
	}
	if c.slots != nil {
		<-c.slots
		defer func() { c.slots <- struct{}{} }()
	}
	<-done
}

// parse parses the generated package in dir for linux/arch and the CUDA
// major m.
func (c *cache) parse(dir, arch string, m *major) (*parser, error) {
	cfg, err := packageConfig(dir)
	if err != nil {
		return nil, err
	}
	if cfg, err = cfg.forMajor(m); err != nil {
		return nil, err
	}
	cfg.arch = arch
	p, err := newParser(cfg, c)
	if err != nil {
		return nil, err
	}
	p.run()
	return p, nil
}
