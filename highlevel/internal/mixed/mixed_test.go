package mixed

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/gocuda/cuda/cublas"
	"github.com/gocuda/cuda/highlevel"
	"github.com/gocuda/cuda/internal/gpuprobe"
	"github.com/gocuda/cuda/internal/randomtest"
)

// TestGPUMixed runs programs, one per seed, each of which mixes every kind
// of highlevel's work (and linalg's) over 8 goroutines sharing streams,
// events, pools, graphs and blocks of memory: copies of every form,
// staged ones included, kernels compiled with NVRTC, captures in every
// mode on shared non-blocking streams, graphs instantiated, launched,
// updated and closed, graphs built node by node (memset, kernel, child
// graph and empty nodes; while, if, if/else and switch nodes whose
// conditions kernels set) and updated with SetKernelArgs while their
// Graph, GraphExec and module are closed and their memory freed under
// them, events recorded and waited for, host functions,
// streams and events closed while others use them, MemoryPool and
// MemoryAsyncPool memory (the async pools closed with frees queued),
// views, managed memory with Prefetch and Advise, IPC handles, linalg's
// calls on shared streams while ClearCaches destroys their handles, and
// bad input that must be refused. See kinds for the list.
//
// What it checks:
//   - every block of memory the goroutines share (2 to 4 MiB, from a
//     MemoryPool, cuMemAlloc, Arrays and a MemoryAsyncPool) against a model
//     of its bytes on the host, at every read (model_test.go);
//   - every error against the errors the operation may return
//     (expect_test.go): any other fails the program;
//   - after a wait on a stream or event that no capture takes part in
//     returns nil, that every host function queued before has run, and
//     that such a wait never says a capture is in progress (hostfunc);
//   - that Prefetch and Advise refuse bad devices and bad advice (refuse);
//   - that what a graph built node by node writes is what its nodes say,
//     after its updates too, and that the Graph, GraphExec, Module and
//     memory the operation closed or freed refuse with ErrClosed or
//     ErrFreed (ops_built_test.go);
//   - at the end, that every host function queued ran once, and that a
//     program of enough operations built, launched, checked and updated
//     graphs node by node often enough (checkBuilt);
//   - in one program in three, with the memory recorder on, that its
//     profile parses as pprof's and its timeline is written.
//
// A wait that takes longer than $GOCUDA_MIXED_WAIT fails the program, and
// an operation that runs 30 s longer than that is taken for a hang: the
// watchdog prints the seed and every goroutine's stack and exits, rather
// than leave the suite to its timeout.
//
// Knobs, all environment variables:
//
//	GOCUDA_MIXED_PROGRAMS    programs to run, one seed each (default 3, 1 with -short)
//	GOCUDA_MIXED_SEED        the first seed (default 0): GOCUDA_MIXED_SEED=17
//	                         GOCUDA_MIXED_PROGRAMS=1 runs seed 17 alone
//	GOCUDA_MIXED_OPS         operations per program (default 4000)
//	GOCUDA_MIXED_GOROUTINES  goroutines per program (default 8)
//	GOCUDA_MIXED_BLOCKS      shared blocks of 2 to 4 MiB per program (default 12)
//	GOCUDA_MIXED_WAIT        the bound of every wait (default 60s)
//	GOCUDA_MIXED_SKIP        kinds to leave out, such as "capture,linalg"
//	GOCUDA_MIXED_ONLY        the only kinds to run
//	GOCUDA_MIXED_MODES       the capture modes to use (default
//	                         "relaxed,global,thread-local"), to tell a fault
//	                         of one mode from the others'
//	GOCUDA_MIXED_PROCS       processes to run the programs in, at once on one
//	                         GPU (default 1: this one; see children_test.go)
//	GOCUDA_MIXED_LOGDIR      where the processes' whole output goes
//	CUDA_HOME                the CUDA toolkit, whose include directory the
//	                         kernels of the kinds build, cond and update
//	                         include (default /usr/local/cuda)
//
// A program of 4000 operations takes about 1.3 s on an H200, 1.5 to 2 s
// with three others at once, 22 s under -race.
//
// Goroutine g of a program draws its operations from rand.NewPCG(seed, g):
// each goroutine does the same on every run of a seed, whatever the
// interleaving (what an operation picks among depends on what succeeded
// before it).
func TestGPUMixed(t *testing.T) {
	gpuprobe.Require(t)
	ndev, err := highlevel.DeviceCount()
	if err != nil {
		t.Fatal(err)
	}
	cfg := newConfig(t)
	if cfg.procs > 1 && os.Getenv(childEnv) == "" {
		runChildren(t, cfg)
		return
	}
	d, err := highlevel.DefaultDevice()
	if err != nil {
		t.Fatal(err)
	}
	k := loadKernels(t, d)
	for _, name := range builtKinds {
		if !cfg.skip[name] && k.graph == nil {
			k.graph = loadGraphKernels(t, d)
		}
	}
	if err := cublas.Load(); err != nil {
		t.Logf("no cuBLAS, so no linalg: %v", err)
		cfg.skip["linalg"] = true
	}
	sum := newTally()
	for i := range cfg.programs {
		seed := cfg.first + uint64(i)
		// For children_test.go: the seed a process that crashes was running.
		fmt.Fprintf(os.Stderr, "mixed: seed %d begins\n", seed)
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			start := time.Now()
			p := newProgram(t, d, ndev, seed, cfg, k)
			// One program in three records its allocations (issue 49):
			// the recorder must change nothing it sees, and what it
			// writes must parse.
			recording := seed%3 == 0
			if recording {
				highlevel.StartMemoryProfile(nil)
			}
			p.run()
			if recording {
				checkMemoryProfile(t)
				highlevel.StopMemoryProfile()
				sum.add("programs recorded", 1)
			}
			p.checkBuilt()
			sum.merge(p.tally)
			sum.add("program seconds", int64(time.Since(start).Seconds()+0.5))
		})
	}
	t.Logf("%d programs of %d goroutines, %d operations each:\n%s", cfg.programs, cfg.goroutines, cfg.ops, sum)
}

// A config is what the knobs chose.
type config struct {
	first      uint64
	programs   int
	ops        int // per program
	goroutines int
	blocks     int
	procs      int
	wait       time.Duration
	skip       map[string]bool
	modes      []highlevel.CaptureMode
	logDir     string
}

func newConfig(t *testing.T) *config {
	cfg := &config{logDir: os.Getenv("GOCUDA_MIXED_LOGDIR")}
	programs := 3
	if testing.Short() {
		programs = 1
	}
	cfg.programs = randomtest.Int(t, "GOCUDA_MIXED_PROGRAMS", programs)
	cfg.first, _ = randomtest.Seed(t, "GOCUDA_MIXED_SEED")
	cfg.ops = randomtest.Int(t, "GOCUDA_MIXED_OPS", 4000)
	cfg.goroutines = randomtest.Int(t, "GOCUDA_MIXED_GOROUTINES", 8)
	cfg.blocks = randomtest.Int(t, "GOCUDA_MIXED_BLOCKS", 12)
	cfg.procs = randomtest.Int(t, "GOCUDA_MIXED_PROCS", 1)
	cfg.wait = 60 * time.Second
	if s := os.Getenv("GOCUDA_MIXED_WAIT"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			t.Fatalf("$GOCUDA_MIXED_WAIT = %q: want a duration, such as 60s", s)
		}
		cfg.wait = d
	}
	cfg.modes = []highlevel.CaptureMode{highlevel.CaptureRelaxed, highlevel.CaptureGlobal, highlevel.CaptureThreadLocal}
	if s := os.Getenv("GOCUDA_MIXED_MODES"); s != "" {
		var modes []highlevel.CaptureMode
		for _, name := range strings.Split(s, ",") {
			i := slices.IndexFunc(cfg.modes, func(m highlevel.CaptureMode) bool { return m.String() == strings.TrimSpace(name) })
			if i < 0 {
				t.Fatalf("$GOCUDA_MIXED_MODES names %q: the modes are relaxed, global and thread-local", name)
			}
			modes = append(modes, cfg.modes[i])
		}
		cfg.modes = modes
	}
	var names []string
	for _, k := range kinds {
		names = append(names, k.name)
	}
	cfg.skip = randomtest.Skipped(t, "GOCUDA_MIXED_SKIP", "GOCUDA_MIXED_ONLY", names)
	// cond runs only where $GOCUDA_MIXED_ONLY names it: on an H200
	// (driver 580.159.04, 2026-12-02) a graph with a while node ended in
	// CUDA_ERROR_LAUNCH_FAILED while kernels or memsets ran on four other
	// streams, in C as in Go (highlevel/testdata/whilefault.c), which the
	// other kinds do, and while other processes' work ran (1 program of 16
	// in 4 processes of the kind alone). Alone in one process, its graphs
	// take turns (condTurns) and run clean: scripts/gpu.sh runs it so.
	if !strings.Contains(os.Getenv("GOCUDA_MIXED_ONLY"), "cond") {
		cfg.skip["cond"] = true
	}
	return cfg
}

// A kind is a kind of operation: its name (for $GOCUDA_MIXED_SKIP and the
// summary), how often it is drawn, and what it does.
type kind struct {
	name   string
	weight int
	do     func(*worker)
}

// kinds are the kinds of operation, in the order of the summary.
var kinds []kind

func init() {
	// Set in init: the operations refer to kinds' names.
	kinds = []kind{
		{"write", 18, (*worker).write},         // write a span of a shared block in one of nine ways (ops_blocks)
		{"read", 18, (*worker).read},           // read a span of a shared block in one of eight ways, and compare
		{"block", 3, (*worker).replace},        // free or drop a shared block, allocate another, fill it
		{"kernel", 7, (*worker).kernel},        // busy kernels on any stream, waited for or not (ops_misc)
		{"linalg", 6, (*worker).linalg},        // Axpy, Dot, Gemv, Gemm on shared streams, checked; ClearCaches beside
		{"clear", 1, (*worker).clear},          // ClearCaches
		{"capture", 5, (*worker).capture},      // capture in any mode, instantiate, launch, close (ops_graphs)
		{"gexec", 4, (*worker).gexec},          // shared GraphExecs: launch, update, replace, close
		{"build", 2, (*worker).build},          // graphs built node by node, launched, checked; closes and frees race them (ops_built)
		{"cond", 2, (*worker).cond},            // while and if (if/else, switch) nodes, launched, checked
		{"update", 2, (*worker).update},        // GraphExec.SetKernelArgs, launched, checked; Close of the GraphExec races them
		{"stream", 2, (*worker).replaceStream}, // close a shared stream, busy or capturing, and replace it (ops_streams)
		{"event", 2, (*worker).replaceEvent},
		{"busyclose", 2, (*worker).busyClose}, // close a stream and an event under helpers that use them
		{"recordwait", 3, (*worker).recordWait},
		{"wait", 4, (*worker).wait},           // waits of every form on shared streams and events
		{"hostfunc", 6, (*worker).hostFunc},   // host functions, then a wait that must see them run, captures beside
		{"asyncpool", 4, (*worker).asyncPool}, // MemoryAsyncPool memory freed on streams; the pool replaced and closed (ops_misc)
		{"pool", 3, (*worker).poolOrder},      // MemoryPool blocks freed with work queued; pools closed with blocks in use
		{"managed", 2, (*worker).managed},     // Prefetch and Advise of managed memory, checked
		{"refuse", 2, (*worker).refuse},       // bad devices, advice, sizes: each must be refused
		{"ipc", 1, (*worker).ipc},             // IPC handles of memory and events, opened in the process
		{"gc", 1, (*worker).gc},
		{"devsync", 1, (*worker).devsync}, // Device.Synchronize, whatever captures
	}
}

// staged is the size from which copies with pageable memory are staged
// through pinned buffers (highlevel's stagingThreshold).
const staged = 2 << 20

// kernelSource holds the program's kernels. pattern writes, at n words
// from word base of a block, what a write w puts there (see patternWord);
// fill writes v to n words; check counts in *bad the words that differ
// from v; spin keeps the device busy.
const kernelSource = `
extern "C" __global__ void pattern(unsigned *p, unsigned w, unsigned base, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) p[i] = ((w & 0xFFFu) << 20) | ((base + (unsigned)i) & 0xFFFFFu);
}
extern "C" __global__ void fill(unsigned *p, unsigned v, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) p[i] = v;
}
extern "C" __global__ void check(const unsigned *p, unsigned v, int n, int *bad) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n && p[i] != v) atomicAdd(bad, 1);
}
extern "C" __global__ void spin(unsigned *p, int n, int rounds) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n) return;
	unsigned x = p[i];
	for (int r = 0; r < rounds; r++) x = x * 1664525u + 1013904223u;
	p[i] = x;
}
`

// kernels are the program's kernels, loaded once for all programs.
type kernels struct {
	pattern, fill, check, spin *highlevel.Kernel
	graph                      *graphKernels // nil where the kinds of ops_built_test.go are all skipped
}

func loadKernels(t *testing.T, d highlevel.Device) *kernels {
	c, err := highlevel.Compile(kernelSource, &highlevel.CompileOptions{Name: "mixed.cu"})
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	m, err := highlevel.LoadModule(c.Image)
	if err != nil {
		t.Fatalf("LoadModule: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	k := &kernels{}
	for name, kp := range map[string]**highlevel.Kernel{"pattern": &k.pattern, "fill": &k.fill, "check": &k.check, "spin": &k.spin} {
		if *kp, err = m.Kernel(name); err != nil {
			t.Fatalf("Kernel(%q): %v", name, err)
		}
	}
	// Load the kernels into the device before any capture: a strict
	// capture refuses the loading, at a kernel's first launch.
	warm, err := d.Alloc(8)
	if err != nil {
		t.Fatal(err)
	}
	bad, _ := warm.Add(4)
	errs := []error{
		k.pattern.Launch(nil, grid(1), warm, uint32(0), uint32(0), int32(1)),
		k.fill.Launch(nil, grid(1), warm, uint32(0), int32(1)),
		k.check.Launch(nil, grid(1), warm, uint32(0), int32(1), bad),
		k.spin.Launch(nil, grid(1), warm, int32(1), int32(1)),
		d.Synchronize(),
		warm.Free(),
	}
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return k
}

// grid is a launch configuration for n threads.
func grid(n int) highlevel.LaunchConfig {
	return highlevel.LaunchConfig{Grid: highlevel.Dim3{X: (n + 255) / 256}, Block: highlevel.Dim3{X: 256}}
}

// run runs the program's goroutines, the watchdog beside them, then checks
// and frees what they share.
func (p *program) run() {
	stop := make(chan struct{})
	var wd sync.WaitGroup
	wd.Go(func() { p.watch(stop) })
	var wg sync.WaitGroup
	for _, w := range p.workers {
		wg.Go(w.run)
	}
	wg.Wait()
	p.progress[len(p.workers)].begin(-1, "finish")
	p.finish()
	close(stop)
	wd.Wait()
}

// run runs the worker's operations, then frees what it owns.
func (w *worker) run() {
	total := 0
	for _, k := range kinds {
		total += k.weight
	}
	perG := (w.cfg.ops + w.cfg.goroutines - 1) / w.cfg.goroutines
	for w.n = range perG {
		x, seed := w.main.IntN(total), w.main.Uint64()
		var k kind
		for _, k = range kinds {
			if x -= k.weight; x < 0 {
				break
			}
		}
		w.kind = k.name
		if w.cfg.skip[k.name] {
			w.note("skipped " + k.name)
			continue
		}
		w.r = rand.New(rand.NewPCG(seed, w.seed))
		w.win = w.window()
		w.progress[w.g].begin(w.n, k.name)
		k.do(w)
		w.progress[w.g].end()
		w.note("op " + k.name)
	}
	w.n, w.kind = perG, "teardown"
	w.win = w.window()
	w.progress[w.g].begin(w.n, w.kind)
	w.teardown()
	w.progress[w.g].end()
}

// progress is what a goroutine is doing, for the watchdog.
type progress struct {
	mu    sync.Mutex
	since time.Time // zero when idle
	op    int
	kind  string
}

func (g *progress) begin(op int, kind string) {
	g.mu.Lock()
	g.since, g.op, g.kind = time.Now(), op, kind
	g.mu.Unlock()
}

func (g *progress) end() {
	g.mu.Lock()
	g.since = time.Time{}
	g.mu.Unlock()
}

// watch takes an operation that runs 30 s longer than the bound of a wait
// for a hang: it prints the seed, what each goroutine does and all their
// stacks, and ends the process, which would otherwise hang until the
// test's timeout with no word of the seed.
func (p *program) watch(stop chan struct{}) {
	limit := p.cfg.wait + 30*time.Second
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		var stuck []string
		for g := range p.progress {
			pr := &p.progress[g]
			pr.mu.Lock()
			if !pr.since.IsZero() && time.Since(pr.since) > limit {
				stuck = append(stuck, fmt.Sprintf("goroutine %d op %d (%s) for %v", g, pr.op, pr.kind, time.Since(pr.since).Round(time.Second)))
			}
			pr.mu.Unlock()
		}
		if len(stuck) == 0 {
			continue
		}
		fmt.Fprintf(os.Stderr, "mixed: seed %d hangs (rerun: GOCUDA_MIXED_SEED=%d GOCUDA_MIXED_PROGRAMS=1): %s\n%s\nmixed: the goroutines:\n",
			p.seed, p.seed, strings.Join(stuck, "; "), p.tally)
		pprof.Lookup("goroutine").WriteTo(os.Stderr, 2)
		fmt.Fprintf(os.Stderr, "mixed: seed %d hangs: FAIL\n", p.seed)
		os.Exit(2)
	}
}

// checkMemoryProfile checks that the memory recorder's profile and
// timeline of a program's allocations are written and that the profile
// parses as pprof's.
func checkMemoryProfile(t *testing.T) {
	var b bytes.Buffer
	if err := highlevel.WriteMemoryProfile(&b); err != nil {
		t.Errorf("WriteMemoryProfile: %v", err)
	} else if _, err := profile.Parse(&b); err != nil {
		t.Errorf("the memory profile does not parse: %v", err)
	}
	if err := highlevel.WriteMemoryTimeline(io.Discard); err != nil {
		t.Errorf("WriteMemoryTimeline: %v", err)
	}
}
