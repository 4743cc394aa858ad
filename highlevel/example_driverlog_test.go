package highlevel_test

import (
	"errors"
	"fmt"
	"log"
	"log/slog"
	"os"

	"github.com/gocuda/cuda/cudadrv"
	"github.com/gocuda/cuda/highlevel"
)

// A refused call's error ends with the driver's explanation, from CUDA
// 12.9 on; DriverLog gives its lines, and the error still matches the
// driver's status.
func ExampleDriverLog() {
	m, err := highlevel.Device(0).Alloc(1 << 50)
	if err == nil {
		m.Free()
		return
	}
	if errors.Is(err, cudadrv.ERROR_OUT_OF_MEMORY) {
		fmt.Println("out of memory")
	}
	for _, line := range highlevel.DriverLog(err) {
		fmt.Println("the driver says:", line)
	}
}

// SetLogger sends the driver's log to a *slog.Logger: the explanations of
// failed calls at slog.LevelDebug, warnings at slog.LevelWarn.
func ExampleSetLogger() {
	highlevel.SetLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})))
	defer highlevel.FlushLogs() // the records still on their way
	if _, err := highlevel.Device(0).Alloc(1 << 50); err == nil {
		log.Fatal("a petabyte allocated")
	}
	// stderr: time=... level=DEBUG msg="..." lib=driver func=cuMemAlloc
}
