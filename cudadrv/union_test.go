package cudadrv

import (
	"errors"
	"runtime"
	"testing"
	"time"
	"unsafe"
)

// TestUnionSetterPins checks that a Go buffer stored in a union through its
// setter stays alive while the pinner holds it, and is collected once
// unpinned (which shows that only the pin kept it), and that a pointer
// without a pinner is refused.
func TestUnionSetterPins(t *testing.T) {
	collected := make(chan struct{})
	buf := new([4096]byte)
	runtime.AddCleanup(buf, func(c chan struct{}) { close(c) }, collected)
	addr := uintptr(unsafe.Pointer(buf))

	var params GraphNodeParams
	params.Type = GRAPH_NODE_TYPE_MEMCPY
	var pinner runtime.Pinner
	err := params.SetMemcpy(MEMCPY_NODE_PARAMS{CopyParams: MEMCPY3D{SrcMemoryType: MEMORYTYPE_HOST, SrcHost: unsafe.Pointer(buf), WidthInBytes: 4096, Height: 1, Depth: 1}}, &pinner)
	if err != nil {
		t.Fatalf("SetMemcpy: %v", err)
	}
	buf = nil
	if got := uintptr(params.Memcpy().CopyParams.SrcHost); got != addr || params.Memcpy().CopyParams.WidthInBytes != 4096 {
		t.Fatalf("Memcpy().CopyParams.SrcHost = %#x, WidthInBytes %d; want %#x, 4096", got, params.Memcpy().CopyParams.WidthInBytes, addr)
	}
	for range 5 {
		runtime.GC()
	}
	select {
	case <-collected:
		t.Fatal("the buffer stored with SetMemcpy was collected while pinned")
	case <-time.After(50 * time.Millisecond):
	}
	pinner.Unpin()
	deadline := time.After(10 * time.Second)
	for done := false; !done; {
		runtime.GC()
		select {
		case <-collected:
			done = true
		case <-deadline:
			t.Fatal("the buffer was not collected once unpinned: the test cannot tell a pin from another reference")
		case <-time.After(10 * time.Millisecond):
		}
	}
	runtime.KeepAlive(&params)

	// Without a pinner, a pointer is refused and nothing is stored; no
	// pointer needs none.
	var p2 GraphNodeParams
	err = p2.SetMemcpy(MEMCPY_NODE_PARAMS{Flags: 1, CopyParams: MEMCPY3D{DstHost: unsafe.Pointer(new(int64))}}, nil)
	if !errors.Is(err, ErrNoPinner) {
		t.Errorf("SetMemcpy with a pointer and no pinner = %v, want ErrNoPinner", err)
	}
	if p2.Memcpy().Flags != 0 || p2.Memcpy().CopyParams.DstHost != nil {
		t.Errorf("a refused SetMemcpy stored %+v", *p2.Memcpy())
	}
	if err := p2.SetMemcpy(MEMCPY_NODE_PARAMS{CopyParams: MEMCPY3D{SrcDevice: 0x1000, WidthInBytes: 8}}, nil); err != nil || p2.Memcpy().CopyParams.SrcDevice != 0x1000 {
		t.Errorf("SetMemcpy without pointers = %v, stored SrcDevice %#x", err, p2.Memcpy().CopyParams.SrcDevice)
	}
}
