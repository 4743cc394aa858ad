package mixed

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The mode that runs several programs at once on one GPU, as several
// processes sharing it would: with $GOCUDA_MIXED_PROCS above 1, the test
// runs its own binary again as that many child processes, all at once,
// each running its share of the seeds one after the other, and fails if
// any child fails or dies (a crash in cgo kills the process: only a child
// can report it). It names each failed child's seeds, the seed it was
// running when it ended, and the tail of its output; $GOCUDA_MIXED_LOGDIR
// keeps each child's whole output.

// childEnv marks a child process: it runs its seeds itself.
const childEnv = "GOCUDA_MIXED_CHILD"

// A child is one child process and what came of it.
type child struct {
	i, first, programs int
	out                *lockedBuffer
	err                error
	took               time.Duration
}

// runChildren runs cfg.programs seeds from cfg.first in cfg.procs child
// processes.
func runChildren(t *testing.T, cfg *config) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The children end before the parent's deadline, with their stacks.
	timeout := time.Duration(0)
	if d, ok := t.Deadline(); ok {
		if timeout = time.Until(d) - 15*time.Second; timeout < time.Minute {
			timeout = time.Until(d) * 3 / 4
		}
	}
	args := []string{"-test.run=^TestGPUMixed$", "-test.count=1", "-test.v"}
	if timeout > 0 {
		args = append(args, "-test.timeout="+timeout.Round(time.Second).String())
	}
	if testing.Short() {
		args = append(args, "-test.short")
	}
	var children []*child
	per, extra := cfg.programs/cfg.procs, cfg.programs%cfg.procs
	next := int(cfg.first)
	for i := range cfg.procs {
		n := per
		if i < extra {
			n++
		}
		if n == 0 {
			break
		}
		children = append(children, &child{i: i, first: next, programs: n, out: &lockedBuffer{}})
		next += n
	}
	var wg sync.WaitGroup
	for _, c := range children {
		cmd := exec.Command(exe, args...)
		cmd.Env = append(os.Environ(), childEnv+"=1", "GOCUDA_MIXED_PROCS=1",
			"GOCUDA_MIXED_SEED="+strconv.Itoa(c.first), "GOCUDA_MIXED_PROGRAMS="+strconv.Itoa(c.programs))
		var w io.Writer = c.out
		if cfg.logDir != "" {
			f, err := os.Create(filepath.Join(cfg.logDir, fmt.Sprintf("mixed-child%d-seeds%d-%d.log", c.i, c.first, c.first+c.programs-1)))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			w = io.MultiWriter(c.out, f)
		}
		cmd.Stdout, cmd.Stderr = w, w
		start := time.Now()
		if err := cmd.Start(); err != nil {
			t.Fatalf("child %d: %v", c.i, err)
		}
		wg.Go(func() {
			c.err = cmd.Wait()
			c.took = time.Since(start)
		})
	}
	wg.Wait()
	for _, c := range children {
		out := c.out.String()
		if c.err == nil {
			t.Logf("child %d, seeds %d..%d: passed in %v; %s", c.i, c.first, c.first+c.programs-1, c.took.Round(time.Second), summary(out))
			continue
		}
		t.Errorf("child %d, seeds %d..%d: %v after %v; seeds that failed: %s; the seed it was running last: %s "+
			"(rerun one: GOCUDA_MIXED_SEED=N GOCUDA_MIXED_PROGRAMS=1); the end of its output:\n%s",
			c.i, c.first, c.first+c.programs-1, c.err, c.took.Round(time.Second), failedSeeds(out), lastSeed(out), tail(out, 120, 24<<10))
	}
}

var (
	seedBegins = regexp.MustCompile(`(?m)^mixed: seed (\d+) begins$`)
	seedFails  = regexp.MustCompile(`(?m)^\s*--- FAIL: TestGPUMixed/seed(\d+)`)
)

// lastSeed returns the seed a child's output says it began last.
func lastSeed(out string) string {
	m := seedBegins.FindAllStringSubmatch(out, -1)
	if len(m) == 0 {
		return "none"
	}
	return m[len(m)-1][1]
}

// failedSeeds returns the seeds a child's output says failed.
func failedSeeds(out string) string {
	var s []string
	for _, m := range seedFails.FindAllStringSubmatch(out, -1) {
		s = append(s, m[1])
	}
	if len(s) == 0 {
		return "none reported (it died)"
	}
	return strings.Join(s, ", ")
}

// summary returns the line of a child's output that counts its
// operations.
func summary(out string) string {
	if i := strings.Index(out, "operations:"); i >= 0 {
		line, _, _ := strings.Cut(out[i:], "\n")
		return line
	}
	return "(no summary)"
}

// tail returns the last lines of out, at most n of them and max bytes.
func tail(out string, n, max int) string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	s := strings.Join(lines, "\n")
	if len(s) > max {
		s = "..." + s[len(s)-max:]
	}
	return s
}

// A lockedBuffer is a bytes.Buffer for the output of a child, which its
// stdout and stderr write at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
