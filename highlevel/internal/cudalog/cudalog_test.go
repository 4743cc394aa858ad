package cudalog

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

// reset forgets the lines kept and the loggers, for a test.
func reset(t *testing.T) {
	t.Helper()
	clear := func() {
		for lib := range nlibs {
			SetLogger(lib, nil)
		}
		Flush()
		pmu.Lock()
		pending = map[uint64]*lines{}
		npending.Store(0)
		pmu.Unlock()
	}
	clear()
	t.Cleanup(clear)
}

// TestTake checks that a goroutine takes the driver's lines of its own
// latest call, stamped as now is, and no one else's: not another
// goroutine's with the same stamp (the goroutine moved to the thread the
// other's call was on), not its own of an earlier stamp (a call whose
// failure made no error), and each once.
func TestTake(t *testing.T) {
	reset(t)
	s := Stamp{Tid: 7, Serial: 3}
	FromDriver(0, "[12:00:00.000][7][CUDA][E][cuMemAlloc] out of memory\n", s)
	FromDriver(0, "[cuMemAlloc] the second line", s)
	if !Pending() {
		t.Fatal("no lines pending")
	}
	done := make(chan []string)
	go func() { done <- Take(s) }()
	if got := <-done; got != nil {
		t.Errorf("another goroutine took %q", got)
	}
	if got, want := Take(Stamp{Tid: 8, Serial: 3}), []string(nil); !slices.Equal(got, want) {
		t.Errorf("Take on another thread: %q, want none", got)
	}
	FromDriver(0, "cuMemAlloc: out of memory", s)
	if got := Take(Stamp{Tid: 7, Serial: 4}); got != nil {
		t.Errorf("Take after another call on the thread: %q, want none", got)
	}
	FromDriver(0, "[12:00:00.000][7][CUDA][E][cuMemAlloc] out of memory\n", s)
	FromDriver(1, "a line of no function", s)
	want := []string{"cuMemAlloc: out of memory", "a line of no function"}
	if got := Take(s); !slices.Equal(got, want) {
		t.Errorf("Take = %q, want %q", got, want)
	}
	if got := Take(s); got != nil || Pending() {
		t.Errorf("a second Take = %q, pending %v: want none", got, Pending())
	}

	// A later call's lines replace an earlier one's.
	FromDriver(0, "first call", s)
	s2 := Stamp{Tid: 7, Serial: 9}
	FromDriver(0, "second call", s2)
	if got := Take(s2); !slices.Equal(got, []string{"second call"}) {
		t.Errorf("Take = %q, want the second call's line alone", got)
	}
}

// TestTakeGoroutines keeps lines for goroutines at once, each of its own
// stamp: each takes its own, and past maxPending goroutines the oldest
// are dropped.
func TestTakeGoroutines(t *testing.T) {
	reset(t)
	var wg sync.WaitGroup
	for g := range 2 * maxPending {
		wg.Go(func() {
			s := Stamp{Tid: int64(g), Serial: 1}
			FromDriver(0, fmt.Sprint("line ", g), s)
			runtime.Gosched()
			if got := Take(s); got != nil && !slices.Equal(got, []string{fmt.Sprint("line ", g)}) {
				t.Errorf("goroutine %d took %q", g, got)
			}
		})
	}
	wg.Wait()
	pmu.Lock()
	n := len(pending)
	pmu.Unlock()
	if n != 0 || Pending() {
		t.Errorf("%d goroutines' lines left", n)
	}
	pmu.Lock()
	before := counter
	pmu.Unlock()
	block := make(chan struct{})
	for g := range maxPending + 5 {
		wg.Go(func() {
			FromDriver(0, "x", Stamp{Tid: int64(g)})
			<-block
		})
	}
	for {
		pmu.Lock()
		n = int(counter - before)
		pmu.Unlock()
		if n >= maxPending+5 {
			break
		}
		runtime.Gosched()
	}
	pmu.Lock()
	n = len(pending)
	pmu.Unlock()
	close(block)
	wg.Wait()
	if n != maxPending {
		t.Errorf("%d goroutines' lines kept, want %d: the oldest dropped", n, maxPending)
	}
}

// TestSplit checks how a driver's line is read: the bracketed fields of
// its log file's lines, the function's alone, or none.
func TestSplit(t *testing.T) {
	for _, tc := range []struct{ line, fn, msg string }{
		{"[22:21:32.099][25642][CUDA][E][cuLogsDumpToMemory] buffer cannot be NULL", "cuLogsDumpToMemory", "buffer cannot be NULL"},
		{"[cuMemAlloc] out of memory", "cuMemAlloc", "out of memory"},
		{"out of memory", "", "out of memory"},
		{"[a][b] two fields", "", "[a][b] two fields"},
		{"[unclosed", "", "[unclosed"},
	} {
		if fn, msg := split(tc.line); fn != tc.fn || msg != tc.msg {
			t.Errorf("split(%q) = %q, %q; want %q, %q", tc.line, fn, msg, tc.fn, tc.msg)
		}
	}
	if got := clean("a\nb\n\x00"); got != "a b" {
		t.Errorf("clean = %q", got)
	}
	if got := clean(strings.Repeat("x", 2*maxLine)); len(got) != maxLine {
		t.Errorf("clean kept %d bytes, want %d", len(got), maxLine)
	}
}

// TestLevels checks the levels' mapping and the libraries' masks.
func TestLevels(t *testing.T) {
	if DriverLevel(0) != slog.LevelDebug || DriverLevel(1) != slog.LevelWarn {
		t.Errorf("driver levels: error %v, warning %v", DriverLevel(0), DriverLevel(1))
	}
	for _, tc := range []struct {
		lib    Library
		levels [6]slog.Level // by the library's level, 0 unused
	}{
		{CUBLAS, [6]slog.Level{1: LevelTrace, LevelTrace, LevelTrace, LevelTrace, LevelTrace}},
		{CUBLASLt, [6]slog.Level{1: slog.LevelError, slog.LevelDebug, slog.LevelInfo, slog.LevelDebug, LevelTrace}},
		{CUSPARSE, [6]slog.Level{1: slog.LevelError, slog.LevelDebug, slog.LevelInfo, slog.LevelInfo, LevelTrace}},
	} {
		for level := 1; level <= 5; level++ {
			if got := LibraryLevel(tc.lib, level); got != tc.levels[level] {
				t.Errorf("%v level %d: %v, want %v", tc.lib, level, got, tc.levels[level])
			}
		}
	}
	logger := func(l slog.Level) *slog.Logger {
		return slog.New(slog.NewTextHandler(nil, &slog.HandlerOptions{Level: l}))
	}
	for _, tc := range []struct {
		l    *slog.Logger
		lt   int
		spar int
	}{
		{nil, 0, 0},
		{logger(slog.LevelError + 1), 0, 0},
		{logger(slog.LevelWarn), 1, 1},
		{logger(slog.LevelInfo), 1 | 4, 1 | 4 | 8},
		{logger(slog.LevelDebug), 1 | 2 | 4 | 8, 1 | 2 | 4 | 8},
		{logger(LevelTrace), 31, 31},
	} {
		if lt, sp := LibraryMask(CUBLASLt, tc.l), LibraryMask(CUSPARSE, tc.l); lt != tc.lt || sp != tc.spar {
			t.Errorf("masks: cuBLASLt %#x, cuSPARSE %#x; want %#x, %#x", lt, sp, tc.lt, tc.spar)
		}
	}
}

// A recorder keeps the records it handles; its handle, if set, runs
// first.
type recorder struct {
	mu     sync.Mutex
	recs   []slog.Record
	handle func(r slog.Record)
}

func (h *recorder) Enabled(_ context.Context, l slog.Level) bool { return l >= LevelTrace }
func (h *recorder) Handle(_ context.Context, r slog.Record) error {
	if h.handle != nil {
		h.handle(r)
	}
	h.mu.Lock()
	h.recs = append(h.recs, r)
	h.mu.Unlock()
	return nil
}
func (h *recorder) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recorder) WithGroup(string) slog.Handler      { return h }

func (h *recorder) messages() []string {
	Flush()
	h.mu.Lock()
	defer h.mu.Unlock()
	var msgs []string
	for _, r := range h.recs {
		s := r.Level.String() + " " + r.Message
		r.Attrs(func(a slog.Attr) bool {
			s += " " + a.String()
			return true
		})
		msgs = append(msgs, s)
	}
	return msgs
}

// TestDelivery checks the records' way to their loggers: in order, with
// their level and attributes, none for a library without a logger, none
// lost to a Handler that panics, ends its goroutine or flushes.
func TestDelivery(t *testing.T) {
	reset(t)
	h := &recorder{}
	SetLogger(Driver, slog.New(h))
	SetLogger(CUBLASLt, slog.New(h))
	FromDriver(1, "[cuMemAlloc] low on memory", Stamp{})
	FromLibrary(CUBLASLt, 3, "cublasLtMatmul", "a hint")
	FromLibrary(CUSPARSE, 1, "cusparseSpMV", "no logger")
	want := []string{"WARN low on memory lib=driver func=cuMemAlloc", "INFO a hint lib=cuBLASLt func=cublasLtMatmul"}
	if got := h.messages(); !slices.Equal(got, want) {
		t.Errorf("records %q, want %q", got, want)
	}

	calls := 0
	h.handle = func(r slog.Record) {
		calls++
		Flush() // returns at once
		switch r.Message {
		case "panic":
			panic("in a Handler")
		case "goexit":
			runtime.Goexit()
		}
	}
	for _, msg := range []string{"panic", "after the panic", "goexit", "after the Goexit"} {
		FromLibrary(CUBLASLt, 1, "", msg)
		Flush()
	}
	got := h.messages()[2:]
	want = []string{"ERROR after the panic lib=cuBLASLt", "ERROR after the Goexit lib=cuBLASLt"}
	if !slices.Equal(got, want) || calls != 4 {
		t.Errorf("records %q (Handle called %d times), want %q", got, calls, want)
	}
}

// TestDropped checks that records past maxQueue are dropped and counted,
// in a warning, while the Handler is slow.
func TestDropped(t *testing.T) {
	reset(t)
	entered, release := make(chan struct{}), make(chan struct{})
	h := &recorder{}
	h.handle = func(r slog.Record) {
		if r.Message == "first" {
			close(entered)
			<-release
		}
	}
	SetLogger(CUSPARSE, slog.New(h))
	FromLibrary(CUSPARSE, 1, "", "first")
	<-entered
	for range maxQueue + 10 {
		FromLibrary(CUSPARSE, 1, "", "more")
	}
	close(release)
	msgs := h.messages()
	if len(msgs) != maxQueue+2 || msgs[1] != "WARN 10 messages were dropped: the program's loggers took them too slowly lib=cuSPARSE" {
		t.Errorf("%d records, the second %q", len(msgs), msgs[min(1, len(msgs)-1)])
	}
}

// TestFromNCCL checks how NCCL's debug lines become records.
func TestFromNCCL(t *testing.T) {
	reset(t)
	h := &recorder{}
	SetLogger(NCCL, slog.New(h))
	for _, line := range []string{
		"",
		"host:4711:4712 [0] NCCL INFO NCCL version 2.28.3+cuda13.0",
		"host:4711:4712 [1] init.cc:1234 NCCL WARN Cuda failure 'out of memory'",
		"host:4711:4712 [0] 12.5 enqueue.cc:99 NCCL TRACE a trace",
		"host:4711:4712 NCCL CALL ncclAllReduce(...)",
		"something else\n",
	} {
		FromNCCL(line)
	}
	want := []string{
		"DEBUG NCCL version 2.28.3+cuda13.0 lib=NCCL",
		"WARN Cuda failure 'out of memory' lib=NCCL func=init.cc:1234",
		"DEBUG-4 a trace lib=NCCL",
		"DEBUG-4 ncclAllReduce(...) lib=NCCL",
		"DEBUG something else lib=NCCL",
	}
	if got := h.messages(); !slices.Equal(got, want) {
		t.Errorf("records\n%q\nwant\n%q", got, want)
	}
}
