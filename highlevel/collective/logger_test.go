package collective

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocuda/cuda/highlevel"
	"github.com/gocuda/cuda/internal/stubtest"
)

// TestSetLogger runs TestSetLoggerChild with NCCL_DEBUG unset, and set by
// the program.
func TestSetLogger(t *testing.T) {
	for _, env := range []string{"NCCL_DEBUG=", "NCCL_DEBUG=WARN"} {
		t.Run(env, func(t *testing.T) {
			stubtest.Child(t, "TestSetLoggerChild", env, "COLLECTIVE_NCCL_DEBUG="+strings.TrimPrefix(env, "NCCL_DEBUG="))
		})
	}
}

// A recorder keeps the records it handles, as strings.
type recorder struct {
	mu   sync.Mutex
	recs []string
}

func (h *recorder) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelDebug }
func (h *recorder) Handle(_ context.Context, r slog.Record) error {
	s := r.Level.String() + " " + r.Message
	r.Attrs(func(a slog.Attr) bool {
		s += " " + a.String()
		return true
	})
	h.mu.Lock()
	h.recs = append(h.recs, s)
	h.mu.Unlock()
	return nil
}
func (h *recorder) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recorder) WithGroup(string) slog.Handler      { return h }

// TestSetLoggerChild plays NCCL after SetLogger: it opens NCCL_DEBUG_FILE
// as NCCL does and writes its lines, which reach the logger at slog's
// levels, a line too long for the reader's buffer included; NCCL_DEBUG is
// INFO for a logger of slog.LevelDebug, or the program's.
func TestSetLoggerChild(t *testing.T) {
	stubtest.SkipUnlessChild(t, "TestSetLogger")
	h := &recorder{}
	if err := SetLogger(slog.New(h)); err != nil {
		t.Fatal(err)
	}
	defer SetLogger(nil)
	want := cmp.Or(os.Getenv("COLLECTIVE_NCCL_DEBUG"), "INFO")
	if got := os.Getenv("NCCL_DEBUG"); got != want {
		t.Errorf("NCCL_DEBUG = %q, want %q", got, want)
	}
	path := os.Getenv("NCCL_DEBUG_FILE")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatalf("NCCL_DEBUG_FILE=%s: %v", path, err)
	}
	long := strings.Repeat("x", 100000)
	fmt.Fprintf(f, "host:1:2 [0] NCCL INFO NCCL version 2.28.3+cuda13.0\n")
	fmt.Fprintf(f, "\nhost:1:2 [0] init.cc:42 NCCL WARN peer gone\n")
	fmt.Fprintf(f, "host:1:2 [0] NCCL INFO %s\n", long)
	fmt.Fprintf(f, "host:1:2 [0] NCCL INFO after the long line\n")
	f.Close()
	var got []string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		highlevel.FlushLogs()
		h.mu.Lock()
		got = slices.Clone(h.recs)
		h.mu.Unlock()
		if len(got) > 0 && strings.Contains(got[len(got)-1], "after the long line") {
			break
		}
	}
	if len(got) < 4 || got[0] != "DEBUG NCCL version 2.28.3+cuda13.0 lib=NCCL" ||
		got[1] != "WARN peer gone lib=NCCL func=init.cc:42" || got[len(got)-1] != "DEBUG after the long line lib=NCCL" {
		t.Errorf("records: %.200q", got)
	}
	// Once NCCL has made a communicator, the program's variables are back:
	// a child process inherits no path of this one's descriptors.
	ncclStarted()
	if v, ok := os.LookupEnv("NCCL_DEBUG_FILE"); ok {
		t.Errorf("NCCL_DEBUG_FILE=%q after the first communicator, want it unset, as before SetLogger", v)
	}
	if v := os.Getenv("NCCL_DEBUG"); v != os.Getenv("COLLECTIVE_NCCL_DEBUG") {
		t.Errorf("NCCL_DEBUG=%q after the first communicator, want %q, as before SetLogger", v, os.Getenv("COLLECTIVE_NCCL_DEBUG"))
	}
}
