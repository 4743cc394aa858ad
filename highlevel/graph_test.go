package highlevel

import (
	"errors"
	"strings"
	"testing"
	"time"
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

// TestEnterAllCaptures checks that an operation over several streams that
// take part in captures (a group of collectives) enters them all, holding
// captureOps once: entered one by one, the second stream's enter waited for
// the first's captureOps forever. A closed stream among them leaves the
// others as they were.
func TestEnterAllCaptures(t *testing.T) {
	a, b := &Stream{h: 1, state: standIn}, &Stream{h: 2, state: standIn}
	a.capture, b.capture = new(capture), new(capture)
	ss := []streamOn{{b, 0}, {nil, 0}, {a, 0}}
	done := make(chan error)
	go func() { done <- enterAll(ss) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("enterAll of two capturing streams still waits after 5s")
	}
	if ss[0].s != nil || ss[1].s != a || ss[2].s != b {
		t.Errorf("streams entered in the order %v, %v, %v; want the legacy one, a, b: sorted by device and handle", ss[0].s, ss[1].s, ss[2].s)
	}
	if captureOps.TryLock() {
		captureOps.Unlock()
		t.Error("captureOps not held while the streams are entered")
	}
	leaveAll(ss)
	if !captureOps.TryLock() {
		t.Fatal("captureOps still held after leaveAll")
	}
	captureOps.Unlock()
	if !a.life.Close() {
		t.Fatal("a's operations still in progress")
	}
	if err := enterAll([]streamOn{{a, 0}, {b, 0}}); !errors.Is(err, ErrClosed) {
		t.Errorf("enterAll with a closed stream: %v, want ErrClosed", err)
	}
	if !b.joins.TryLock() || !b.life.Close() {
		t.Error("a failed enterAll left b entered")
	}
}
