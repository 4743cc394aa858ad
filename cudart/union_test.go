package cudart

import (
	"errors"
	"runtime"
	"testing"
	"time"
	"unsafe"
)

// TestUnionSetterPins checks cudart's form of the rule for pointers in
// unions: GraphNodeParams.SetMemcpy pins the Go buffer its copy names, which
// then outlives every other reference until unpinned, and refuses it
// without a pinner.
func TestUnionSetterPins(t *testing.T) {
	collected := make(chan struct{})
	buf := new([256]float32)
	runtime.AddCleanup(buf, func(c chan struct{}) { close(c) }, collected)
	v := MemcpyNodeParams{CopyParams: Memcpy3DParms{
		SrcPtr: PitchedPtr{Ptr: unsafe.Pointer(buf), Pitch: 1024, Xsize: 256, Ysize: 1},
		Extent: Extent{Width: 1024, Height: 1, Depth: 1},
		Kind:   MemcpyHostToDevice,
	}}
	addr := uintptr(unsafe.Pointer(buf))
	buf = nil

	var params GraphNodeParams
	if err := params.SetMemcpy(v, nil); !errors.Is(err, ErrNoPinner) {
		t.Fatalf("SetMemcpy without a pinner = %v, want ErrNoPinner", err)
	}
	if params.Memcpy().CopyParams.SrcPtr.Ptr != nil {
		t.Fatal("a refused SetMemcpy stored the pointer")
	}
	var pinner runtime.Pinner
	if err := params.SetMemcpy(v, &pinner); err != nil {
		t.Fatalf("SetMemcpy: %v", err)
	}
	v = MemcpyNodeParams{}
	if got := params.Memcpy().CopyParams; uintptr(got.SrcPtr.Ptr) != addr || got.Kind != MemcpyHostToDevice {
		t.Fatalf("stored copy = %+v, want SrcPtr.Ptr %#x", got, addr)
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
}
