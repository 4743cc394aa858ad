//go:build linux

package nvtx_test

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gocuda/cuda/internal/stubtest"
	"github.com/gocuda/cuda/nvtx"
)

// injectSource is the C source of an NVTX injection library that logs
// every event. It is compiled into the test binary, which may run where
// there is no source tree.
//
//go:embed testdata/inject.c
var injectSource string

// helperEnv makes the test binary a helper process run by TestTool
// ("tool") or TestNoTool ("none").
const helperEnv = "GOCUDA_NVTX_TEST_HELPER"

// TestHelperProcess is not a test: it is the body of the processes that
// TestTool and TestNoTool start, since NVTX looks for a tool only once per
// process.
func TestHelperProcess(t *testing.T) {
	switch os.Getenv(helperEnv) {
	case "tool":
		helperTool(t)
	case "none":
		helperNone(t)
	}
}

// runHelper runs TestHelperProcess in a new process of this test binary,
// with NVTX's and this test's variables removed from the environment and
// then env added, and fails t if the process fails.
func runHelper(t *testing.T, mode string, env ...string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out, err := stubtest.CombinedOutput(func() *exec.Cmd {
		cmd := stubtest.Command(exe, "-test.run=^TestHelperProcess$", "-test.count=1", "-test.v")
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "NVTX_") && !strings.HasPrefix(kv, helperEnv+"=") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		cmd.Env = append(cmd.Env, helperEnv+"="+mode)
		cmd.Env = append(cmd.Env, env...)
		return cmd
	})
	if err != nil {
		t.Fatalf("helper process %q: %v\n%s", mode, err, out)
	}
}

// compiler returns the command line of the C compiler: $CC, else cc, else
// gcc. It skips t if there is none.
func compiler(t *testing.T) []string {
	t.Helper()
	if cc := strings.Fields(os.Getenv("CC")); len(cc) > 0 {
		if _, err := exec.LookPath(cc[0]); err == nil {
			return cc
		}
	}
	for _, name := range []string{"cc", "gcc"} {
		if _, err := exec.LookPath(name); err == nil {
			return []string{name}
		}
	}
	t.Skip("no C compiler ($CC, cc or gcc) to build the NVTX injection library")
	return nil
}

type event struct {
	kind, level string
	tid         int
	attr, msg   string
}

func (e event) String() string {
	return fmt.Sprintf("%s level=%s tid=%d [%s] %q", e.kind, e.level, e.tid, e.attr, e.msg)
}

func readEvents(t *testing.T, path string) []event {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var events []event
	for line := range strings.Lines(string(data)) {
		f := strings.SplitN(strings.TrimSuffix(line, "\n"), "\t", 5)
		if len(f) != 5 {
			t.Fatalf("bad log line %q", line)
		}
		tid, err := strconv.Atoi(f[2])
		if err != nil {
			t.Fatalf("bad thread in log line %q", line)
		}
		events = append(events, event{f[0], f[1], tid, f[3], f[4]})
	}
	return events
}

// attr is how the injection library logs the attributes that MarkC and
// RangePushC pass: version NVTX_VERSION, size 48 (sizeof
// nvtxEventAttributes_v2 on LP64), colorType NVTX_COLOR_ARGB, messageType
// NVTX_MESSAGE_TYPE_ASCII.
func attr(argb uint32) string {
	return fmt.Sprintf("version=3 size=48 colorType=1 color=%08x messageType=1", argb)
}

// Messages that take the shim's stack buffer (up to 255 bytes) and its
// malloc path.
var (
	msg255  = strings.Repeat("a", 255)
	msg256  = strings.Repeat("b", 256)
	msgLong = strings.Repeat("0123456789", 100)
)

// helperTool makes the calls whose events TestTool expects.
func helperTool(t *testing.T) {
	check := func(call string, got, want int) {
		t.Helper()
		if got != want {
			t.Errorf("%s = %d, want %d", call, got, want)
		}
	}

	runtime.LockOSThread()
	nvtx.Mark("tid " + strconv.Itoa(syscall.Gettid()))
	nvtx.MarkC("colored mark", 0xff00ff00)
	check("RangePush(outer)", nvtx.RangePush("outer"), 0)
	check("RangePushC(inner)", nvtx.RangePushC("inner", 0x80112233), 1)
	check(`RangePush("")`, nvtx.RangePush(""), 2)
	check("RangePop()", nvtx.RangePop(), 2)
	check("RangePop()", nvtx.RangePop(), 1)
	check("RangePop()", nvtx.RangePop(), 0)
	check("RangePop() with no open range", nvtx.RangePop(), -1)
	check("RangePushC(long)", nvtx.RangePushC(msgLong, 0xffffffff), 0)
	check("RangePop()", nvtx.RangePop(), 0)
	nvtx.Mark(msg255)
	nvtx.Mark(msg256)
	nvtx.Mark("cut\x00here")
	runtime.UnlockOSThread()

	// Range and RangeC must keep the goroutine on one thread while other
	// goroutines compete for the Ps and the goroutine blocks.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 * runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
					runtime.Gosched()
				}
			}
		})
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer nvtx.Range("range")()
		nvtx.Mark("tid " + strconv.Itoa(syscall.Gettid()))
		end := nvtx.RangeC("rangeC", 0xff0000ff)
		for range 20 {
			time.Sleep(100 * time.Microsecond)
			runtime.Gosched()
		}
		runtime.GC()
		end()
	}()
	<-done
	close(stop)
	wg.Wait()
}

// TestTool attaches an NVTX injection library built from testdata/inject.c
// to a helper process and checks every event it saw: kind, nesting level,
// thread, attributes and message, and the levels RangePush and RangePop
// pass back from the tool.
func TestTool(t *testing.T) {
	cc := compiler(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "inject.c")
	lib := filepath.Join(dir, "libinject.so")
	logPath := filepath.Join(dir, "events.log")
	if err := os.WriteFile(src, []byte(injectSource), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append(cc[1:len(cc):len(cc)], "-shared", "-fPIC", "-o", lib, src)
	if out, err := stubtest.CombinedOutput(func() *exec.Cmd { return exec.Command(cc[0], args...) }); err != nil {
		t.Fatalf("%s %s: %v\n%s", cc[0], strings.Join(args, " "), err, out)
	}
	runHelper(t, "tool", "NVTX_INJECTION64_PATH="+lib, "NVTX_TEST_LOG="+logPath)

	got := readEvents(t, logPath)
	// The threads are the ones the helper logged in its "tid N" marks.
	tid := func(i int) int {
		if i >= len(got) || !strings.HasPrefix(got[i].msg, "tid ") {
			return -1
		}
		n, _ := strconv.Atoi(strings.TrimPrefix(got[i].msg, "tid "))
		return n
	}
	t1, t2 := tid(1), tid(16)
	want := []event{
		{"Init", "-", t1, "", "sizeof(nvtxEventAttributes_t)=48"},
		{"MarkA", "-", t1, "", fmt.Sprintf("tid %d", t1)},
		{"MarkEx", "-", t1, attr(0xff00ff00), "colored mark"},
		{"RangePushA", "0", t1, "", "outer"},
		{"RangePushEx", "1", t1, attr(0x80112233), "inner"},
		{"RangePushA", "2", t1, "", ""},
		{"RangePop", "2", t1, "", ""},
		{"RangePop", "1", t1, "", ""},
		{"RangePop", "0", t1, "", ""},
		{"RangePop", "-1", t1, "", ""},
		{"RangePushEx", "0", t1, attr(0xffffffff), msgLong},
		{"RangePop", "0", t1, "", ""},
		{"MarkA", "-", t1, "", msg255},
		{"MarkA", "-", t1, "", msg256},
		{"MarkA", "-", t1, "", "cut"},
		{"RangePushA", "0", t2, "", "range"},
		{"MarkA", "-", t2, "", fmt.Sprintf("tid %d", t2)},
		{"RangePushEx", "1", t2, attr(0xff0000ff), "rangeC"},
		{"RangePop", "1", t2, "", ""},
		{"RangePop", "0", t2, "", ""},
	}
	for i := range max(len(got), len(want)) {
		switch {
		case i >= len(got):
			t.Errorf("event %d: missing, want %v", i, want[i])
		case i >= len(want):
			t.Errorf("event %d: %v, want none", i, got[i])
		case got[i] != want[i]:
			t.Errorf("event %d:\n got %v\nwant %v", i, got[i], want[i])
		}
	}
}

// helperNone checks that without a tool every call returns at once, the
// range calls return NoPushPopTracking, and none allocates.
func helperNone(t *testing.T) {
	if got := nvtx.RangePush("outer"); got != nvtx.NoPushPopTracking {
		t.Errorf("RangePush = %d, want NoPushPopTracking (%d)", got, nvtx.NoPushPopTracking)
	}
	if got := nvtx.RangePushC(msgLong, 0xff00ff00); got != nvtx.NoPushPopTracking {
		t.Errorf("RangePushC = %d, want NoPushPopTracking", got)
	}
	for range 3 { // more pops than pushes
		if got := nvtx.RangePop(); got != nvtx.NoPushPopTracking {
			t.Errorf("RangePop = %d, want NoPushPopTracking", got)
		}
	}
	nvtx.Mark("")
	nvtx.Mark(msg256)
	nvtx.MarkC("colored", 0xff00ff00)
	nvtx.Range("range")()
	nvtx.RangeC("rangeC", 0xff0000ff)()

	allocs := testing.AllocsPerRun(100, func() {
		nvtx.Mark("mark")
		nvtx.MarkC("mark", 0xff00ff00)
		nvtx.RangePush("push")
		nvtx.RangePushC("push", 0xff00ff00)
		nvtx.RangePop()
		nvtx.RangePop()
		nvtx.Range("range")()
		nvtx.RangeC("range", 0xff00ff00)()
	})
	if allocs != 0 {
		t.Errorf("calls allocate %v times, want 0", allocs)
	}
}

// TestNoTool runs helperNone in a process without $NVTX_INJECTION64_PATH.
func TestNoTool(t *testing.T) {
	runHelper(t, "none")
}

// TestBadTool checks that a tool NVTX cannot load leaves the calls no-ops.
func TestBadTool(t *testing.T) {
	lib := filepath.Join(t.TempDir(), "missing.so")
	if _, err := os.Stat(lib); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("stat %s: %v", lib, err)
	}
	runHelper(t, "none", "NVTX_INJECTION64_PATH="+lib)
}

func BenchmarkRangePushPop(b *testing.B) {
	b.ReportAllocs()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for b.Loop() {
		nvtx.RangePush("step")
		nvtx.RangePop()
	}
}

func BenchmarkRangePushPopLong(b *testing.B) {
	b.ReportAllocs()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for b.Loop() {
		nvtx.RangePush(msg256)
		nvtx.RangePop()
	}
}

func BenchmarkRange(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		nvtx.Range("step")()
	}
}

func BenchmarkMarkC(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		nvtx.MarkC("mark", 0xff00ff00)
	}
}
