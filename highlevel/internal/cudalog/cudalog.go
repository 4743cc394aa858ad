// Package cudalog carries the log messages of the CUDA driver and of the
// toolkit's libraries from the threads that report them to the program:
// to the *slog.Logger set for each library (SetLogger), and, for the
// driver, to the error of the call whose failure a message explains
// (FromDriver, Take).
//
// The libraries call their loggers from inside their own calls, maybe on
// threads of their own, maybe holding locks of theirs: what runs there
// (FromDriver, FromLibrary) copies the message and queues it, and never
// runs the program's code. The queued records go to their loggers on a
// goroutine of the package's, in order, so that a Handler may block, call
// CUDA or panic (which loses its record, not the process). Flush waits for
// the records queued before it.
package cudalog

import (
	"context"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// A Library is a source of log messages.
type Library int

// The libraries whose messages the package carries.
const (
	Driver   Library = iota // the CUDA driver (cuLogsRegisterCallback)
	CUBLAS                  // cuBLAS (cublasSetLoggerCallback)
	CUBLASLt                // cuBLASLt (cublasLtLoggerSetCallback)
	CUSPARSE                // cuSPARSE (cusparseLoggerSetCallback)
	NCCL                    // NCCL (its NCCL_DEBUG_FILE)
	nlibs
)

// names are the libraries' names, the value of a record's "lib"
// attribute.
var names = [nlibs]string{"driver", "cuBLAS", "cuBLASLt", "cuSPARSE", "NCCL"}

func (l Library) String() string { return names[l] }

// LevelTrace is the level of the libraries' API traces (cuBLAS's messages,
// cuBLASLt's and cuSPARSE's level 5): one record per call of the library,
// below slog.LevelDebug so that a logger must ask for them.
const LevelTrace = slog.LevelDebug - 4

// DriverLevel returns the slog level of a driver message of CUlogLevel
// level: CU_LOG_LEVEL_WARNING is slog.LevelWarn; CU_LOG_LEVEL_ERROR, the
// explanation of a failed call, is slog.LevelDebug, because the driver
// explains every failure, those the program (or the package itself, an
// allocation retried once a pool gave memory back) handles too, and the
// error of a failure the program sees carries its explanation already.
func DriverLevel(level int) slog.Level {
	if level == 1 { // CU_LOG_LEVEL_WARNING
		return slog.LevelWarn
	}
	return slog.LevelDebug
}

// LibraryLevel returns the slog level of a message of lib at the
// library's level: cuBLAS's messages, which have none, are its API trace;
// cuBLASLt's and cuSPARSE's levels are 1 errors, 2 traces (of kernels,
// cuBLASLt's of performance), 3 hints (of performance), 4 cuBLASLt's
// heuristics' trace and cuSPARSE's information, 5 API traces.
func LibraryLevel(lib Library, level int) slog.Level {
	switch {
	case lib == CUBLAS || level >= 5:
		return LevelTrace
	case level <= 1:
		return slog.LevelError
	case level == 3 || level == 4 && lib == CUSPARSE:
		return slog.LevelInfo
	}
	return slog.LevelDebug
}

// LibraryMask returns the bit mask of the library's levels (bit i-1 for
// level i, as cublasLtLoggerSetMask and cusparseLoggerSetMask take it)
// whose records l enables: 0 for a nil l.
func LibraryMask(lib Library, l *slog.Logger) int {
	mask := 0
	for level := 1; l != nil && level <= 5; level++ {
		if l.Enabled(context.Background(), LibraryLevel(lib, level)) {
			mask |= 1 << (level - 1)
		}
	}
	return mask
}

// loggers are the libraries' loggers.
var loggers [nlibs]atomic.Pointer[slog.Logger]

// SetLogger sends lib's messages to l from now on; nil drops them. The
// records queued before go to the logger they were queued for.
func SetLogger(lib Library, l *slog.Logger) { loggers[lib].Store(l) }

// Logger returns lib's logger, or nil.
func Logger(lib Library) *slog.Logger { return loggers[lib].Load() }

// A record is a message on its way to its logger.
type record struct {
	t     time.Time
	l     *slog.Logger
	lib   Library
	level slog.Level
	fn    string // the library's function that logged it, if it says
	msg   string
}

// maxQueue bounds the records waiting for delivery: past it, the newest
// are dropped and counted, and a warning says how many.
const maxQueue = 4096

var (
	qmu     sync.Mutex
	more    = sync.NewCond(&qmu) // records queued, for the delivering goroutine
	flushed = sync.NewCond(&qmu) // records delivered, for Flush
	queue   []record
	dropped [nlibs]int // records dropped since the last delivery
	// queued counts the records queued (dropped or not), delivered those
	// delivered (or dropped, or lost to a Handler's runtime.Goexit).
	queued, delivered uint64
	running           bool // the delivering goroutine runs, or is about to

	// deliverer is the delivering goroutine's id.
	deliverer atomic.Uint64
)

// add queues a message of lib at level, if lib has a logger. It neither
// blocks nor calls the program's code: it runs on the libraries' threads.
func add(lib Library, level slog.Level, fn, msg string) {
	l := loggers[lib].Load()
	if l == nil {
		return
	}
	t := time.Now()
	qmu.Lock()
	queued++
	if len(queue) >= maxQueue {
		dropped[lib]++
	} else {
		queue = append(queue, record{t, l, lib, level, fn, msg})
	}
	start := !running
	running = true
	more.Signal()
	qmu.Unlock()
	if start {
		go deliverLoop()
	}
}

// deliverLoop sends the queued records to their loggers, in order, as
// they come. Where a Handler ends the goroutine (runtime.Goexit), the
// rest of its batch is lost, and another goroutine takes over.
func deliverLoop() {
	deliverer.Store(goid())
	var n uint64 // records taken and not yet counted delivered
	defer func() {
		deliverer.Store(0)
		qmu.Lock()
		delivered += n
		restart := len(queue) > 0 || dropped != [nlibs]int{}
		running = restart
		flushed.Broadcast()
		qmu.Unlock()
		if restart {
			go deliverLoop()
		}
	}()
	for {
		qmu.Lock()
		for len(queue) == 0 && dropped == [nlibs]int{} {
			more.Wait()
		}
		batch, lost := queue, dropped
		queue, dropped = nil, [nlibs]int{}
		n = uint64(len(batch))
		for _, k := range lost {
			n += uint64(k)
		}
		qmu.Unlock()
		for lib, k := range lost {
			if l := loggers[lib].Load(); k > 0 && l != nil {
				emit(record{time.Now(), l, Library(lib), slog.LevelWarn, "",
					strconv.Itoa(k) + " messages were dropped: the program's loggers took them too slowly"})
			}
		}
		for _, r := range batch {
			emit(r)
		}
		qmu.Lock()
		delivered += n
		n = 0
		flushed.Broadcast()
		qmu.Unlock()
	}
}

// emit sends r to its logger, as a record of r's time, without a source
// location, with the attributes lib (the library's name) and func (its
// function that logged it, where it says). A Handler's panic loses r.
func emit(r record) {
	defer func() { _ = recover() }()
	h := r.l.Handler()
	ctx := context.Background()
	if !h.Enabled(ctx, r.level) {
		return
	}
	rec := slog.NewRecord(r.t, r.level, r.msg, 0)
	rec.AddAttrs(slog.String("lib", names[r.lib]))
	if r.fn != "" {
		rec.AddAttrs(slog.String("func", r.fn))
	}
	_ = h.Handle(ctx, rec)
}

// Flush returns once the records queued before it have gone to their
// loggers. Called by a Handler the package delivers to, it returns at
// once.
func Flush() {
	if deliverer.Load() == goid() {
		return
	}
	qmu.Lock()
	defer qmu.Unlock()
	for target := queued; delivered < target; {
		flushed.Wait()
	}
}

// FromLibrary queues a message of lib (not the driver), at the library's
// level, from fn where it names one. It is what the libraries' loggers
// call, on whatever thread.
func FromLibrary(lib Library, level int, fn, msg string) {
	add(lib, LibraryLevel(lib, level), fn, clean(msg))
}

// FromNCCL queues a line of NCCL's debug output, "host:pid:tid [dev] NCCL
// INFO message" (NCCL_DEBUG_FILE): NCCL's WARN is slog.LevelWarn; its INFO,
// a detailed account of what it sets up (the version line too), is
// slog.LevelDebug; its TRACE and CALL are LevelTrace. The record's
// message is what follows the level, its func, for a warning, the source
// file and line NCCL names before it; a line of another form is a message
// at slog.LevelDebug, an empty one nothing.
func FromNCCL(line string) {
	line = clean(line)
	if line == "" {
		return
	}
	level, fn, msg := slog.LevelDebug, "", line
	for _, l := range []struct {
		word  string
		level slog.Level
	}{{" NCCL WARN ", slog.LevelWarn}, {" NCCL INFO ", slog.LevelDebug}, {" NCCL TRACE ", LevelTrace}, {" NCCL CALL ", LevelTrace}} {
		before, after, ok := strings.Cut(line, l.word)
		if !ok {
			continue
		}
		level, msg = l.level, after
		if i := strings.LastIndexByte(before, ' '); l.level == slog.LevelWarn && i >= 0 && strings.Contains(before[i:], ":") {
			fn = before[i+1:] // init.cc:1234
		}
		break
	}
	add(NCCL, level, fn, msg)
}

// A Stamp says when, in a thread's calls into the driver, a driver message
// came: the thread's id, and how many of the shim's calls it had begun.
type Stamp struct {
	Tid    int64
	Serial uint64
}

// The driver's lines, waiting for the error of the call that failed, by
// goroutine: those the driver gave during the goroutine's latest call
// into it that it logged for, with the call's Stamp. A goroutine's lines
// are replaced by a later call's, taken by Take, and the oldest dropped
// past maxPending goroutines (those whose failures the package handled
// without an error, whose goroutines may have ended).
type lines struct {
	stamp Stamp
	n     uint64 // when it came, in pending's order
	lines []string
}

const (
	maxPending = 64
	maxLines   = 16   // of a failure
	maxLine    = 1024 // bytes of a line
)

var (
	pmu      sync.Mutex
	pending  = map[uint64]*lines{}
	npending atomic.Int32
	counter  uint64
)

// FromDriver takes a message of the driver, at CUlogLevel level, given
// on the thread and at the point stamp says: it is kept for the error of
// the calling goroutine's failed call (Take) and queued for the driver's
// logger. It is what the shim's logger calls, inside the driver's call.
func FromDriver(level int, msg string, stamp Stamp) {
	fn, text := split(clean(msg))
	add(Driver, DriverLevel(level), fn, text)
	if fn != "" {
		text = fn + ": " + text
	}
	g := goid()
	pmu.Lock()
	defer pmu.Unlock()
	p := pending[g]
	if p == nil || p.stamp != stamp {
		if p == nil && len(pending) >= maxPending {
			var oldest uint64
			for k, q := range pending {
				if oldest == 0 || q.n < pending[oldest].n {
					oldest = k
				}
			}
			delete(pending, oldest)
		}
		counter++
		p = &lines{stamp: stamp, n: counter}
		pending[g] = p
	}
	if len(p.lines) < maxLines {
		p.lines = append(p.lines, text)
	}
	npending.Store(int32(len(pending)))
}

// Pending reports whether any goroutine has driver lines waiting: where
// none has, a failed call's error needs no Take.
func Pending() bool { return npending.Load() > 0 }

// Take returns, and forgets, the calling goroutine's driver lines if they
// came during its latest call into the driver, which it made on the
// thread now says, no call of the shim's on that thread since: the lines
// of the call that failed, where the error is made right after it. Lines
// of an earlier call (whose failure the package handled), or of a call
// made on another thread (the goroutine moved since) are dropped: the
// error then has none, rather than another call's.
func Take(now Stamp) []string {
	g := goid()
	pmu.Lock()
	p := pending[g]
	delete(pending, g)
	npending.Store(int32(len(pending)))
	pmu.Unlock()
	if p == nil || p.stamp != now {
		return nil
	}
	return p.lines
}

// clean makes msg one line of at most maxLine bytes, without the newline
// the driver ends it with.
func clean(msg string) string {
	msg = strings.TrimRight(msg, "\n\x00 ")
	if len(msg) > maxLine {
		msg = msg[:maxLine]
	}
	return strings.ReplaceAll(msg, "\n", " ")
}

// split takes the driver's function from a line of its log, which begins
// with bracketed fields as its log file's do, "[time][thread][CUDA][E]
// [cuMemAlloc] message" (or with the function's alone): it returns the
// function and the message; a line of another form is the message.
func split(line string) (fn, msg string) {
	rest := line
	var fields []string
	for len(fields) < 5 && strings.HasPrefix(rest, "[") {
		end := strings.IndexByte(rest, ']')
		if end < 0 {
			break
		}
		fields = append(fields, rest[1:end])
		rest = rest[end+1:]
	}
	switch len(fields) {
	case 1, 5:
		return fields[len(fields)-1], strings.TrimLeft(rest, " ")
	}
	return "", line
}

// goid returns the calling goroutine's id, from the header of its stack
// trace ("goroutine 18 [running]:"): the one thing that tells a driver
// line that came inside a goroutine's call into the driver, on the
// driver's thread, from another's. It costs about a microsecond, on the
// failure paths only.
func goid() uint64 {
	var buf [64]byte
	s, ok := strings.CutPrefix(string(buf[:runtime.Stack(buf[:], false)]), "goroutine ")
	if !ok {
		return 0
	}
	s, _, _ = strings.Cut(s, " ")
	id, _ := strconv.ParseUint(s, 10, 64)
	return id
}
