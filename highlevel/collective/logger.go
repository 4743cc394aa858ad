package collective

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"

	"github.com/gocuda/cuda/highlevel/internal/cudalog"
)

var (
	ncclLogMu sync.Mutex
	// ncclLog is the write end of the pipe NCCL writes its debug output
	// into (NCCL_DEBUG_FILE names it), kept open for the process's life.
	ncclLog *os.File
	// ncclEnv are the variables SetLogger set, with the values they had,
	// put back once NCCL has read them (ncclStarted).
	ncclEnv []envVar
)

// An envVar is an environment variable's value, and whether it was set.
type envVar struct {
	name, value string
	set         bool
}

// SetLogger sends NCCL's debug output to l (nil: drops it). NCCL has no
// logger to register (nccl.h 2.28 declares none): it writes its debug
// output, as $NCCL_DEBUG asks, to $NCCL_DEBUG_FILE or stdout, and reads
// both once, at its first call in the process. SetLogger, called before
// that first call (before the first communicator), sets NCCL_DEBUG_FILE to
// a pipe of its own, whose lines go to l as records of lib NCCL, through
// highlevel's delivering goroutine as the driver's and the libraries' do
// (highlevel.FlushLogs waits for them); and, where the program has not
// set NCCL_DEBUG, it sets it to what l enables: INFO where l enables
// slog.LevelDebug, TRACE where slog.LevelDebug-4, else WARN. NCCL's levels
// map to slog's so:
//
//	WARN         slog.LevelWarn (func: NCCL's source file and line)
//	INFO         slog.LevelDebug (what NCCL sets up, its version)
//	TRACE, CALL  slog.LevelDebug-4
//
// Called after NCCL's first call, SetLogger changes where the lines of a
// pipe it set before go, and nothing else: NCCL writes where it started
// writing. The two variables stay set only until the first communicator
// is made, when SetLogger's values give way to the program's again; a
// child process started meanwhile inherits them, and its NCCL would write
// into the descriptor of that number it has, if any. To send NCCL's output to a file instead, set NCCL_DEBUG_FILE
// (%h and %p in it are the host's name and the process's id) and
// NCCL_DEBUG before the first call, and do not call SetLogger.
func SetLogger(l *slog.Logger) error {
	ncclLogMu.Lock()
	defer ncclLogMu.Unlock()
	cudalog.SetLogger(cudalog.NCCL, l)
	if l == nil || ncclLog != nil {
		return nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("%sset the logger: %w", prefix, err)
	}
	if os.Getenv("NCCL_DEBUG") == "" {
		ncclEnv = append(ncclEnv, saveEnv("NCCL_DEBUG"))
		level := "WARN"
		switch ctx := context.Background(); {
		case l.Enabled(ctx, cudalog.LevelTrace):
			level = "TRACE"
		case l.Enabled(ctx, slog.LevelDebug):
			level = "INFO"
		}
		os.Setenv("NCCL_DEBUG", level)
	}
	ncclEnv = append(ncclEnv, saveEnv("NCCL_DEBUG_FILE"))
	os.Setenv("NCCL_DEBUG_FILE", fmt.Sprintf("/proc/self/fd/%d", w.Fd()))
	ncclLog = w
	go readNCCLLog(r)
	return nil
}

// saveEnv returns the variable name as it is.
func saveEnv(name string) envVar {
	v, ok := os.LookupEnv(name)
	return envVar{name, v, ok}
}

// ncclStarted puts back the variables SetLogger set, once NCCL has made a
// communicator and so read them: a child process must not inherit a path
// of this process's descriptors, which NCCL in it would open and truncate.
func ncclStarted() {
	ncclLogMu.Lock()
	defer ncclLogMu.Unlock()
	for _, e := range ncclEnv {
		if e.set {
			os.Setenv(e.name, e.value)
		} else {
			os.Unsetenv(e.name)
		}
	}
	ncclEnv = nil
}

// readNCCLLog hands each line NCCL writes to the pipe to cudalog, as long
// as the process lives: it never stops reading, lest NCCL block on a full
// pipe (a line longer than its buffer goes in pieces).
func readNCCLLog(r *os.File) {
	br := bufio.NewReaderSize(r, 1<<16)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			cudalog.FromNCCL(string(line))
		}
		if err != nil && err != bufio.ErrBufferFull {
			return
		}
	}
}
