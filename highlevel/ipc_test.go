package highlevel

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
)

// memoryAt returns a pointer off bytes into m.
func memoryAt(m *Memory, off int) MemoryPointer { return MemoryPointer{mem: m, off: off} }

func TestIPCMemHandleBinary(t *testing.T) {
	h := IPCMemHandle{offset: 4096, size: 1 << 20}
	for i := range h.b {
		h.b[i] = byte(i + 1)
	}
	b, err := h.MarshalBinary()
	if err != nil || len(b) != 80 || !bytes.Equal(b[:64], h.b[:]) ||
		binary.LittleEndian.Uint64(b[64:]) != 4096 || binary.LittleEndian.Uint64(b[72:]) != 1<<20 {
		t.Fatalf("MarshalBinary = %x, %v", b, err)
	}
	var g IPCMemHandle
	if err := g.UnmarshalBinary(b); err != nil || g != h || g.Size() != 1<<20 {
		t.Fatalf("UnmarshalBinary: %+v, %v; want %+v", g, err, h)
	}
	bad := func(mutate func([]byte) []byte) []byte { return mutate(append([]byte(nil), b...)) }
	for name, in := range map[string][]byte{
		"empty":          nil,
		"CUDA's 64 only": b[:64],
		"one more":       append(append([]byte(nil), b...), 0),
		"size 0":         bad(func(c []byte) []byte { binary.LittleEndian.PutUint64(c[72:], 0); return c }),
		"huge size":      bad(func(c []byte) []byte { binary.LittleEndian.PutUint64(c[72:], 1<<63); return c }),
		"huge offset":    bad(func(c []byte) []byte { binary.LittleEndian.PutUint64(c[64:], 1<<63); return c }),
		"negative size":  bad(func(c []byte) []byte { binary.LittleEndian.PutUint64(c[72:], ^uint64(0)); return c }),
	} {
		g := h
		if err := g.UnmarshalBinary(in); err == nil {
			t.Errorf("UnmarshalBinary(%s) accepted it", name)
		} else if g != h {
			t.Errorf("UnmarshalBinary(%s) changed the handle to %+v", name, g)
		}
	}
	if err := (*IPCMemHandle)(nil).UnmarshalBinary(b); !errors.Is(err, ErrNil) {
		t.Errorf("UnmarshalBinary on nil: %v, want ErrNil", err)
	}
}

func TestIPCEventHandleBinary(t *testing.T) {
	var h IPCEventHandle
	for i := range h.b {
		h.b[i] = byte(255 - i)
	}
	b, err := h.MarshalBinary()
	if err != nil || !bytes.Equal(b, h.b[:]) {
		t.Fatalf("MarshalBinary = %x, %v", b, err)
	}
	b[0]++ // the result is a copy
	if h.b[0] != 255 {
		t.Fatal("MarshalBinary returned the handle's own bytes")
	}
	var g IPCEventHandle
	if err := g.UnmarshalBinary(h.b[:]); err != nil || g != h {
		t.Fatalf("UnmarshalBinary: %v", err)
	}
	for _, n := range []int{0, 63, 65, 80} {
		if err := g.UnmarshalBinary(make([]byte, n)); err == nil || g != h {
			t.Errorf("UnmarshalBinary of %d bytes: %v, handle changed: %v", n, err, g != h)
		}
	}
	if err := (*IPCEventHandle)(nil).UnmarshalBinary(b); !errors.Is(err, ErrNil) {
		t.Errorf("UnmarshalBinary on nil: %v, want ErrNil", err)
	}
}

// TestIPCRefusals checks what is refused before any CUDA call (none is
// loaded here).
func TestIPCRefusals(t *testing.T) {
	freed := &Memory{size: 64}
	freed.life.Close()
	closed := &Event{ctx: standInCtx, we: new(waitEvent)}
	closed.life.Close()
	_, zeroErr := MemoryPointer{}.IPCHandle()
	_, freedErr := memoryAt(freed, 0).IPCHandle()
	_, endErr := memoryAt(&Memory{size: 64}, 64).IPCHandle()
	_, managedErr := memoryAt(&Memory{size: 64, managed: true}, 0).IPCHandle()
	_, plainErr := (&Event{ctx: standInCtx, we: new(waitEvent)}).IPCHandle()
	_, closedErr := closed.IPCHandle()
	_, nilErr := (*Event)(nil).IPCHandle()
	_, emptyEvErr := OpenIPCEvent(0, IPCEventHandle{})
	_, emptyMemErr := OpenIPCMemory(0, IPCMemHandle{})
	_, negErr := OpenIPCMemory(0, IPCMemHandle{offset: -1, size: 8})
	_, hugeErr := OpenIPCMemory(0, IPCMemHandle{size: maxSize + 1})
	_, timedErr := NewEvent(0, &EventOptions{Interprocess: true})
	for _, c := range []struct {
		name string
		err  error
		is   error  // the error it must wrap, or nil
		text string // what its text must hold
	}{
		{"zero MemoryPointer", zeroErr, ErrNil, "zero MemoryPointer"},
		{"freed memory", freedErr, ErrFreed, ""},
		{"a pointer at the end", endErr, nil, "at the end"},
		{"managed memory", managedErr, ErrNotShareable, "managed"},
		{"an event without Interprocess", plainErr, ErrNotShareable, "Interprocess"},
		{"a closed event", closedErr, ErrClosed, ""},
		{"a nil event", nilErr, ErrNil, ""},
		{"OpenIPCEvent of the zero handle", emptyEvErr, nil, "empty handle"},
		{"OpenIPCMemory of the zero handle", emptyMemErr, nil, "empty handle"},
		{"OpenIPCMemory at offset -1", negErr, nil, "malformed"},
		{"OpenIPCMemory of too many bytes", hugeErr, nil, "malformed"},
		{"NewEvent interprocess with timing", timedErr, nil, "DisableTiming"},
	} {
		switch {
		case c.err == nil:
			t.Errorf("%s: no error", c.name)
		case c.is != nil && !errors.Is(c.err, c.is):
			t.Errorf("%s: %v, want %v", c.name, c.err, c.is)
		case !strings.Contains(c.err.Error(), c.text):
			t.Errorf("%s: %v, want it to say %q", c.name, c.err, c.text)
		case strings.Count(c.err.Error(), "highlevel:") != 1:
			t.Errorf("%s: %q repeats or lacks the package's prefix", c.name, c.err)
		}
	}
}
