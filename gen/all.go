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
	"strings"
	"sync"
)

// generateAll generates every package under root that a //go:generate line
// runs gen for, as that line says, in one process; like go generate ./...,
// it skips testdata and directories whose names start with . or _. With
// out, each package is written under out, at its path relative to root,
// instead of in place. The packages are generated concurrently, GOMAXPROCS
// at a time, and each is parsed once: the packages that use it share its
// parse. The reports follow, in the packages' order.
func generateAll(root, out string) error {
	var dirs []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if n := d.Name(); path != root && (n == "testdata" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_")) {
			return filepath.SkipDir
		}
		_, args, err := generateArgs(path)
		if args != nil {
			dirs = append(dirs, path)
		}
		return err
	})
	if err != nil {
		return err
	}
	c := &cache{slots: make(chan struct{}, runtime.GOMAXPROCS(0))}
	reports := make([]bytes.Buffer, len(dirs))
	errs := make([]error, len(dirs))
	var wg sync.WaitGroup
	for i, dir := range dirs {
		wg.Go(func() {
			c.slots <- struct{}{}
			defer func() { <-c.slots }()
			if err := generate(c, dir, root, out, &reports[i]); err != nil {
				errs[i] = fmt.Errorf("%s: %w", dir, err)
			}
		})
	}
	wg.Wait()
	for _, r := range reports {
		os.Stderr.Write(r.Bytes())
	}
	return errors.Join(errs...)
}

// generate generates the package in dir, parsed by c for each target, and
// writes its report to w. With out, the package is written under out
// instead of under root.
func generate(c *cache, dir, root, out string, w io.Writer) error {
	var ps []*parser
	for _, arch := range targets {
		p, err := c.load(dir, arch)
		if err != nil {
			return err
		}
		ps = append(ps, p)
	}
	if err := sameCode(ps); err != nil {
		return err
	}
	p := ps[0]
	p.document()
	if err := p.perThreadSymbols(); err != nil {
		return err
	}
	if err := p.annotate(); err != nil {
		return err
	}
	cfg := p.cfg
	if out != "" {
		rel, err := filepath.Rel(root, cfg.out)
		if err != nil {
			return err
		}
		cfg.out = filepath.Join(out, rel)
	}
	return write(p.pkg, cfg, w)
}

// cache parses generated packages as their //go:generate lines say, each
// once for each target: the packages that use one share its parses. It is
// safe for concurrent use. With slots, which bounds the goroutines that
// work at once, a goroutine gives back its slot while it waits for a parse
// that another does.
type cache struct {
	mu     sync.Mutex
	parses map[parseKey]*parsed
	slots  chan struct{}
}

// parseKey names a parse: the package's absolute directory and the target.
type parseKey struct{ dir, arch string }

// parsed is a package's parse, p or err, set once done is closed.
type parsed struct {
	done chan struct{}
	p    *parser
	err  error
}

// load returns the parse for linux/arch of the generated package in dir,
// without its per-thread symbols.
func (c *cache) load(dir, arch string) (*parser, error) {
	a, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	key := parseKey{a, arch}
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
	e.p, e.err = c.parse(dir, arch)
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

// parse parses the generated package in dir for linux/arch.
func (c *cache) parse(dir, arch string) (*parser, error) {
	cfg, err := packageConfig(dir)
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
