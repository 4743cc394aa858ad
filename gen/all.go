package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
)

// generateAll generates every package of cfgs, the configuration file's,
// whose directory is root or under it, in one process. With out, each
// package is written under out, at its path relative to root, instead of in
// place; with check (-check-targets), each is parsed for every target (see
// config.targets). The packages are generated concurrently, GOMAXPROCS at a
// time, once for each CUDA major (once with a headers line), and each is
// parsed once for each: the packages that use it share its parse. The
// reports follow, in the packages' order.
func generateAll(cfgs []*config, root, out string, check bool) error {
	type job struct {
		cfg config
		m   *major
	}
	root, err := filepath.Abs(root)
	if err != nil {
		return err
	}
	var jobs []job
	for _, c := range cfgs {
		rel, err := filepath.Rel(root, c.dest)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			continue
		}
		cfg := *c
		cfg.out, cfg.check = cfg.dest, check
		if out != "" {
			cfg.out = filepath.Join(out, rel)
		}
		majors, err := majorsOf(cfg)
		if err != nil {
			return fmt.Errorf("%s: %w", cfg.pkg, err)
		}
		for _, m := range majors {
			jobs = append(jobs, job{cfg, m})
		}
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
			if pkgs[i], err = generate(c, j.cfg, j.m, &reports[i], stage); err != nil {
				errs[i] = fmt.Errorf("%s: %w", j.cfg.pkg, err)
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
		for i+n < len(jobs) && jobs[i+n].cfg.pkg == jobs[i].cfg.pkg {
			n++
		}
		if !slices.Contains(pkgs[i:i+n], nil) {
			if err := checkFacts(pkgs[i : i+n]); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", jobs[i].cfg.pkg, err))
			}
		}
		i += n
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return stage.write()
}

// generate generates the package cfg describes for the CUDA major m,
// parsed by c for each of cfg.targets, writes its report to w and returns
// it (nil for a hand-written package). Its files are staged in stage, to
// be written once every package has been generated.
func generate(c *cache, cfg config, m *major, w io.Writer, stage *staged) (*Package, error) {
	mcfg, err := cfg.forMajor(m)
	if err != nil {
		return nil, err
	}
	if cfg.handwritten() {
		files, err := handwrittenFiles(mcfg)
		if err != nil {
			return nil, err
		}
		stage.add(mcfg.out, files)
		return nil, nil
	}
	var ps []*parser
	for _, arch := range cfg.targets() {
		p, err := c.load(cfg, arch, m)
		if err != nil {
			return nil, err
		}
		ps = append(ps, p)
	}
	p, err := oneModel(ps)
	if err != nil {
		return nil, err
	}
	return p.pkg, write(p.pkg, mcfg, w, stage)
}

// cache parses generated packages as their configurations say, each once
// for each target asked for: the packages that use one share its
// parses. It is safe for concurrent use. With slots, which bounds the
// goroutines that work at once, a goroutine gives back its slot while it
// waits for a parse that another does.
type cache struct {
	mu     sync.Mutex
	parses map[parseKey]*parsed
	slots  chan struct{}
}

// parseKey names a parse: the package's absolute directory, the target and
// the CUDA major's suffix ("" with a headers line).
type parseKey struct{ dir, arch, major string }

// parsed is a package's parse, p or err, set once done is closed.
type parsed struct {
	done chan struct{}
	p    *parser
	err  error
}

// load returns the parse for linux/arch and the CUDA major m (nil with a
// headers line) of the generated package cfg describes, without its
// per-thread symbols.
func (c *cache) load(cfg config, arch string, m *major) (*parser, error) {
	key := parseKey{dir: cfg.dest, arch: arch}
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
	e.p, e.err = c.parse(cfg, arch, m)
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

// parse parses the generated package cfg describes for linux/arch and the
// CUDA major m.
func (c *cache) parse(cfg config, arch string, m *major) (*parser, error) {
	cfg, err := cfg.forMajor(m)
	if err != nil {
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
