package highlevel

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// TestBorrowRefusals checks what a Borrow refuses before it holds
// anything, and that a nil or returned Borrow's methods do nothing. The
// legacy default stream (a nil Stream) needs no GPU.
func TestBorrowRefusals(t *testing.T) {
	var s *Stream
	b, err := s.Borrow(0)
	if err != nil {
		t.Fatalf("Borrow of the legacy default stream: %v", err)
	}
	b.Return()
	b.Return()
	b.Keep(&countingHolder{})
	var none *Borrow
	none.Return()
	none.Keep(&countingHolder{})
	for _, tt := range []struct {
		name string
		err  error
		want error
	}{
		{"zero MemoryPointer", second(s.Borrow(0, MemoryPointer{})), ErrNil},
		{"zero Stream", second((&Stream{}).Borrow(0)), ErrNil},
		{"streams without devices", second(BorrowAll([]*Stream{nil, nil}, []Device{0})), ErrInvalid},
	} {
		if !errors.Is(tt.err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, tt.err, tt.want)
		}
	}
}

// countingHolder counts its holds.
type countingHolder struct{ holds atomic.Int32 }

func (h *countingHolder) Hold()   { h.holds.Add(1) }
func (h *countingHolder) Unhold() { h.holds.Add(-1) }

// checkBorrow checks the Borrow protocol on the stand-in driver: Free and
// Close wait for a Borrow's Return, a freed memory or closed stream is
// refused, and a capture keeps what a Borrow on its stream names.
func checkBorrow(t *testing.T) {
	d := Device(0)
	s, err := NewStream(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := d.Alloc(64)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Borrow(d, m)
	if err != nil {
		t.Fatal(err)
	}
	freed, closed := make(chan error, 1), make(chan error, 1)
	go func() { freed <- m.Free() }()
	go func() { closed <- s.Close() }()
	select {
	case err := <-freed:
		t.Errorf("Free during a Borrow returned %v before Return", err)
	case err := <-closed:
		t.Errorf("Close during a Borrow returned %v before Return", err)
	case <-time.After(20 * time.Millisecond):
	}
	b.Return()
	if err := <-freed; err != nil {
		t.Errorf("Free after Return: %v", err)
	}
	if err := <-closed; err != nil {
		t.Errorf("Close after Return: %v", err)
	}
	if _, err := s.Borrow(d); !errors.Is(err, ErrClosed) {
		t.Errorf("Borrow of a closed stream: %v, want ErrClosed", err)
	}
	if _, err := (*Stream)(nil).Borrow(d, m); !errors.Is(err, ErrFreed) {
		t.Errorf("Borrow of freed memory: %v, want ErrFreed", err)
	}

	// A capture keeps the memory and the holder a Borrow names.
	c, err := NewStream(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	kept, err := d.Alloc(64)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.BeginCapture(CaptureRelaxed); err != nil {
		t.Fatal(err)
	}
	h := &countingHolder{}
	b, err = c.Borrow(d, kept)
	if err != nil {
		t.Fatal(err)
	}
	b.Keep(h)
	b.Keep(h)
	b.Return()
	b.Keep(h) // after Return: nothing
	if n := h.holds.Load(); n != 1 {
		t.Errorf("holds during the capture: %d, want 1", n)
	}
	if n := kept.mem.holds.n.Load(); n != 2 { // one hold, no Free
		t.Errorf("hold count of the borrowed memory: %d, want 2 (the capture's)", n)
	}
	if err := kept.Free(); err != nil {
		t.Errorf("Free of memory a capture keeps: %v", err)
	}
	g, err := c.EndCapture()
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if n := h.holds.Load(); n != 0 {
		t.Errorf("holds after the graph's Close: %d, want 0", n)
	}
}
