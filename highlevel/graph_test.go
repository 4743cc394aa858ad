package highlevel

import (
	"errors"
	"strings"
	"testing"
)

func TestCaptureModeString(t *testing.T) {
	for m, want := range map[CaptureMode]string{
		CaptureRelaxed: "relaxed", CaptureGlobal: "global", CaptureThreadLocal: "thread-local", 7: "CaptureMode(7)",
	} {
		if m.String() != want {
			t.Errorf("CaptureMode(%d).String() = %q, want %q", int(m), m.String(), want)
		}
	}
	var zero CaptureMode
	if zero != CaptureRelaxed {
		t.Errorf("the zero CaptureMode is %v, want relaxed", zero)
	}
}

// TestCaptureAndInstantiateRefusals checks what is refused before any CUDA
// call (none is loaded here).
func TestCaptureAndInstantiateRefusals(t *testing.T) {
	if err := (&Stream{state: standIn}).BeginCapture(-1); err == nil || !strings.Contains(err.Error(), "CaptureMode(-1)") {
		t.Errorf("BeginCapture(-1): %v", err)
	}
	if _, err := Capture(&Stream{}, 3, func() error { t.Error("fn ran"); return nil }); err == nil {
		t.Error("Capture with mode 3 succeeded")
	}
	closed := &Stream{state: standIn}
	closed.life.Close()
	if _, err := (&Graph{ctx: standInCtx}).Instantiate(&InstantiateOptions{Upload: closed}); !errors.Is(err, ErrClosed) {
		t.Errorf("Instantiate uploading to a closed stream: %v, want ErrClosed", err)
	}
	if _, err := (&Graph{ctx: standInCtx}).Instantiate(&InstantiateOptions{Upload: &Stream{dev: 1, state: standIn}}); err == nil || !strings.Contains(err.Error(), "device 1") {
		t.Errorf("Instantiate of a graph of device 0 uploading to a stream of device 1: %v", err)
	}
}
