package linalg_test

import (
	"log"
	"log/slog"
	"os"

	"github.com/gocuda/cuda/highlevel"
	"github.com/gocuda/cuda/highlevel/linalg"
)

// SetLogger routes the libraries' logs to a *slog.Logger: here their
// errors, performance hints and traces, but not their API traces, which
// cost time in every call (slog.LevelDebug-4 asks for those too).
func ExampleSetLogger() {
	l := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if err := linalg.SetLogger(l); err != nil {
		log.Print(err) // a library that is not installed; the others log
	}
	defer highlevel.FlushLogs()
	// ... linalg calls ...
	// stderr: time=... level=INFO msg="..." lib=cuBLASLt func=cublasLtMatmulAlgoGetHeuristic
}
