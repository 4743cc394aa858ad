package highlevel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gocuda/cuda/cudadrv"
	"github.com/gocuda/cuda/cudart"
	"github.com/gocuda/cuda/highlevel/internal/cudalog"
	"github.com/gocuda/cuda/highlevel/internal/driver"
	"github.com/gocuda/cuda/internal/stubtest"
	"github.com/gocuda/cuda/internal/testsrc"
)

// driverLogCases are what TestDriverLog checks on the stand-in driver,
// each in a child process of its own, on a driver of the version env says
// (the stand-in explains its refused memsets in its log from CUDA 12.9 on,
// whatever headers it was built with).
var driverLogCases = []struct {
	name  string
	env   []string
	check func(t *testing.T)
}{
	{"a refused call's lines", []string{"STUB_DRIVER_VERSION=12090"}, checkDriverLogLines},
	{"lines of an earlier call", []string{"STUB_DRIVER_VERSION=13000"}, checkDriverLogEarlier},
	{"goroutines", []string{"STUB_DRIVER_VERSION=12090"}, checkDriverLogGoroutines},
	{"driver 12.8", []string{"STUB_DRIVER_VERSION=12080"}, checkDriverLogOld},
}

// TestDriverLog checks, on the stand-in driver, that a refused call's
// error carries the driver's log lines for it, and only its own, that
// SetLogger's logger gets them as records, and that a driver without the
// log (before CUDA 12.9) gives neither, and no error.
func TestDriverLog(t *testing.T) {
	testsrc.Require(t, stubHeaders, stubSources)
	lib := stubDriver(t)
	for _, tc := range driverLogCases {
		t.Run(tc.name, func(t *testing.T) {
			stubtest.Child(t, "TestDriverLogChild", append([]string{
				"GOCUDA_CUDA=" + lib,
				"GOCUDA_CUDART=" + filepath.Join(t.TempDir(), "no-libcudart.so"),
				"HL_DRIVERLOG_CASE=" + tc.name,
			}, tc.env...)...)
		})
	}
}

func TestDriverLogChild(t *testing.T) {
	stubtest.SkipUnlessChild(t, "TestDriverLog")
	for _, tc := range driverLogCases {
		if tc.name == os.Getenv("HL_DRIVERLOG_CASE") {
			tc.check(t)
			return
		}
	}
	t.Fatalf("no case %q", os.Getenv("HL_DRIVERLOG_CASE"))
}

// A logRecord is what recordHandler keeps of a slog.Record.
type logRecord struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

// A recordHandler keeps the records of level and above that it handles.
type recordHandler struct {
	level slog.Level
	mu    sync.Mutex
	recs  []logRecord
}

func (h *recordHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

func (h *recordHandler) Handle(_ context.Context, r slog.Record) error {
	rec := logRecord{level: r.Level, msg: r.Message, attrs: map[string]string{}}
	r.Attrs(func(a slog.Attr) bool {
		rec.attrs[a.Key] = a.Value.String()
		return true
	})
	h.mu.Lock()
	h.recs = append(h.recs, rec)
	h.mu.Unlock()
	return nil
}

func (h *recordHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordHandler) WithGroup(string) slog.Handler      { return h }

// records returns the records h kept, once those logged before are
// delivered.
func (h *recordHandler) records() []logRecord {
	FlushLogs()
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]logRecord(nil), h.recs...)
}

// refusedMemset makes a memset of n bytes, more than m's, which the
// stand-in refuses as not all device memory, explaining why in its log:
// "cuMemsetD8: n bytes at 0x...".
func refusedMemset(t *testing.T, m MemoryPointer, n int) error {
	t.Helper()
	u, err := UnownedMemory(m.Ptr(), n, m)
	if err != nil {
		t.Fatal(err)
	}
	return u.Memset(0, n)
}

// memsetLine is the start of the stand-in's line for a refused memset of
// n bytes.
func memsetLine(n int) string { return fmt.Sprintf("cuMemsetD8: %d bytes at 0x", n) }

// checkDriverLogLines checks a refused memset's error and records: the
// error is still CUDA_ERROR_INVALID_VALUE and cudaErrorInvalidValue, an
// error with the stand-in's line (DriverLog), on one line; the logger gets the
// line as a record at slog.LevelDebug, of lib driver and func cuMemsetD8;
// a later refusal carries its own line, not the first's, also with no
// logger set. The goroutine stays on its thread: one the scheduler moves
// between a failed call and its error gets none (docs/logging.md).
func checkDriverLogLines(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	h := &recordHandler{level: slog.LevelDebug}
	SetLogger(slog.New(h))
	defer SetLogger(nil)
	m, err := Device(0).Alloc(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	err = refusedMemset(t, m, 8192)
	checkMessage(t, "refused memset", err, "memset 8192 bytes")
	if !errors.Is(err, cudadrv.ERROR_INVALID_VALUE) || !errors.Is(err, cudart.ErrorInvalidValue) {
		t.Errorf("%v does not match CUDA_ERROR_INVALID_VALUE and cudaErrorInvalidValue", err)
	}
	var res cudadrv.Result
	if !errors.As(err, &res) || res != cudadrv.ERROR_INVALID_VALUE {
		t.Errorf("errors.As(%v, *cudadrv.Result): %v", err, res)
	}
	if log := DriverLog(err); len(log) != 1 || !strings.HasPrefix(log[0], memsetLine(8192)) ||
		!strings.Contains(log[0], "not all in one allocation") {
		t.Fatalf("%v: DriverLog = %q, want the stand-in's line %q...", err, log, memsetLine(8192))
	}
	if msg := err.Error(); strings.Contains(msg, "\n") ||
		!strings.Contains(msg, "CUDA_ERROR_INVALID_VALUE: ") || !strings.Contains(msg, "(the driver's log: "+memsetLine(8192)) {
		t.Errorf("Error() = %q: want one line, the status, then the driver's", msg)
	}
	recs := h.records()
	if len(recs) != 1 || recs[0].level != slog.LevelDebug || !strings.HasPrefix(recs[0].msg, "8192 bytes at 0x") ||
		recs[0].attrs["lib"] != "driver" || recs[0].attrs["func"] != "cuMemsetD8" {
		t.Errorf("the logger's records: %+v, want one of the stand-in's line at DEBUG, lib driver, func cuMemsetD8", recs)
	}

	if err := m.Memset(0, 4096); err != nil {
		t.Fatal(err)
	}
	SetLogger(nil)
	err = refusedMemset(t, m, 12288)
	if log := DriverLog(err); len(log) != 1 || !strings.HasPrefix(log[0], memsetLine(12288)) {
		t.Errorf("a second refusal, with no logger: %v, want its own line alone", err)
	}
	if n := len(h.records()); n != 1 {
		t.Errorf("the logger got %d records, want 1: none once SetLogger(nil)", n)
	}
}

// checkDriverLogEarlier checks that lines the driver gave for a call whose
// failure made no error (here a raw call of the shim's) are not attached
// to a later failure on the same goroutine and thread, which the driver
// did not explain; and that they would have been to the call's own error.
func checkDriverLogEarlier(t *testing.T) {
	runtime.LockOSThread() // the same thread throughout, where a stale stamp would match
	defer runtime.UnlockOSThread()
	m, err := Device(0).Alloc(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	ctx, err := Device(0).context()
	if err != nil {
		t.Fatal(err)
	}
	bad := func() int32 { return driver.Memset(uintptr(ctx), uintptr(m.Ptr()), 0, 8192, 0, 0) }
	if err := check("cuMemsetD8", bad()); DriverLog(err) == nil {
		t.Fatalf("the error made right after the call: %v, want its lines", err)
	}
	if r := bad(); r == 0 {
		t.Fatal("the stand-in did a memset past its allocation")
	}
	if !cudalog.Pending() {
		t.Fatal("the refused call's lines are not kept")
	}
	err = check("cuEventQuery", driver.EventQuery(ctx, 0xbad0))
	if !errors.Is(err, cudadrv.ERROR_INVALID_HANDLE) && !errors.Is(err, cudadrv.ERROR_INVALID_VALUE) {
		t.Fatalf("a query of no event: %v", err)
	}
	if DriverLog(err) != nil {
		t.Errorf("a failure the driver did not explain carries an earlier call's lines: %v", err)
	}
	if cudalog.Pending() {
		t.Errorf("the goroutine's stale lines are still kept")
	}
}

// checkDriverLogGoroutines refuses memsets of sizes of their own from
// goroutines at once, among successful calls: each error carries its own
// call's line or none, never another's; those of the goroutines that stay
// on their threads carry theirs, every one.
func checkDriverLogGoroutines(t *testing.T) {
	const goroutines, calls = 8, 200
	var wg sync.WaitGroup
	for g := range goroutines {
		locked := g%2 == 0
		wg.Go(func() {
			if locked {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
			}
			m, err := Device(0).Alloc(4096)
			if err != nil {
				t.Error(err)
				return
			}
			defer m.Free()
			for i := range calls {
				n := 4096 + 8*(g*calls+i+1)
				err := refusedMemset(t, m, n)
				if !errors.Is(err, cudadrv.ERROR_INVALID_VALUE) {
					t.Errorf("memset of %d bytes: %v", n, err)
					return
				}
				if err := m.Memset(1, 64); err != nil {
					t.Error(err)
					return
				}
				log := DriverLog(err)
				if log == nil && !locked {
					continue
				}
				if len(log) != 1 || !strings.HasPrefix(log[0], memsetLine(n)) {
					t.Errorf("memset of %d bytes (thread locked %v): lines %q", n, locked, log)
					return
				}
				runtime.Gosched()
			}
		})
	}
	wg.Wait()
}

// checkDriverLogOld checks a driver of CUDA 12.8, which has no error log:
// the package loads and works, a refused call's error is the status
// alone, and the logger gets nothing.
func checkDriverLogOld(t *testing.T) {
	h := &recordHandler{level: slog.LevelDebug}
	SetLogger(slog.New(h))
	defer SetLogger(nil)
	m, err := Device(0).Alloc(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	err = refusedMemset(t, m, 8192)
	if !errors.Is(err, cudadrv.ERROR_INVALID_VALUE) || DriverLog(err) != nil {
		t.Errorf("%v: want CUDA_ERROR_INVALID_VALUE alone", err)
	}
	if recs := h.records(); len(recs) != 0 || cudalog.Pending() {
		t.Errorf("records %+v, lines kept %v: want none", recs, cudalog.Pending())
	}
	if err := m.Memset(0, 4096); err != nil {
		t.Error(err)
	}
}

// TestDriverLogMessage checks the message of an error with the driver's
// lines, what it matches, and DriverLog's answers, without a driver.
func TestDriverLogMessage(t *testing.T) {
	lines := []string{"cuMemsetD8: a", "cuMemsetD8: b"}
	err := opErr("memset 8 bytes", &driverLogError{status: driverStatus(cudadrv.ERROR_INVALID_VALUE), log: lines})
	want := "highlevel: memset 8 bytes: " + cudadrv.ERROR_INVALID_VALUE.Error() + " (the driver's log: cuMemsetD8: a; cuMemsetD8: b)"
	if err.Error() != want {
		t.Errorf("Error() = %q, want %q", err.Error(), want)
	}
	if !errors.Is(err, cudadrv.ERROR_INVALID_VALUE) || !errors.Is(err, cudart.ErrorInvalidValue) || errors.Is(err, cudadrv.ERROR_OUT_OF_MEMORY) {
		t.Errorf("%v matches the wrong statuses", err)
	}
	var e cudart.Error
	if !errors.As(err, &e) || e != cudart.ErrorInvalidValue {
		t.Errorf("errors.As(*cudart.Error) = %v", e)
	}
	got := DriverLog(fmt.Errorf("wrapped: %w", err))
	if !slices.Equal(got, lines) {
		t.Errorf("DriverLog = %q, want %q", got, lines)
	}
	got[0] = "changed"
	if DriverLog(err)[0] != lines[0] {
		t.Error("DriverLog returns the error's own slice")
	}
	for _, err := range []error{nil, driverStatus(cudadrv.ERROR_INVALID_VALUE), ErrClosed} {
		if got := DriverLog(err); got != nil {
			t.Errorf("DriverLog(%v) = %q, want nil", err, got)
		}
	}
}
