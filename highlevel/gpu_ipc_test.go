package highlevel

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/gocuda/cuda/cudadrv"
)

// ipcKernels holds the parent's producer: one block whose first thread
// waits until the child sets the flag (or the timeout passes, in
// nanoseconds), then writes data[i] = 7i + 3.
const ipcKernels = `
extern "C" __global__ void produce(volatile int *flag, int *status, int *data, int n, unsigned long long timeout) {
	__shared__ int seen;
	if (threadIdx.x == 0) {
		unsigned long long t0, t;
		asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
		seen = 1;
		while (*flag == 0) {
			asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
			if (t - t0 > timeout) { seen = 0; break; }
			__nanosleep(1000);
		}
		*status = seen ? 1 : 2;
	}
	__syncthreads();
	for (int i = threadIdx.x; i < n; i += blockDim.x) data[i] = 7 * i + 3;
}
`

// The layout of the shared memory, in bytes from the exported pointer: the
// flag and the producer's status, then the data and the child's reply, of
// ipcN int32s each.
const (
	ipcN      = 1 << 14
	ipcFlag   = 0
	ipcStatus = 4
	ipcData   = 256
	ipcReply  = ipcData + 4*ipcN
	ipcSize   = ipcReply + 4*ipcN
	ipcOffset = 4096 // of the exported pointer in its allocation
)

func toHost(t *testing.T, p MemoryPointer, off, n int) []int32 {
	t.Helper()
	q, err := p.Add(off)
	if err != nil {
		t.Fatal(err)
	}
	v := make([]int32, n)
	if err := q.CopyToHostPointer(unsafe.Pointer(&v[0]), 4*n); err != nil {
		t.Fatalf("CopyToHost at %d: %v", off, err)
	}
	return v
}

func fromHost(t *testing.T, p MemoryPointer, off int, v []int32) {
	t.Helper()
	q, err := p.Add(off)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.CopyFromHostPointer(unsafe.Pointer(&v[0]), 4*len(v)); err != nil {
		t.Fatalf("CopyFromHost at %d: %v", off, err)
	}
}

func marshalHex(t *testing.T, m interface{ MarshalBinary() ([]byte, error) }) string {
	b, err := m.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// TestGPUIPC shares memory and an event with a child process (this test
// binary again). The parent's kernel waits for a flag the child sets
// through the shared memory, then writes a pattern; the parent records an
// interprocess event after it. The child checks that the data is not
// written before it sets the flag, waits for the event on a stream of its
// own, reads the pattern, and writes a reply that the parent reads back.
func TestGPUIPC(t *testing.T) {
	d := gpu(t)
	if env := os.Getenv("HL_IPC_CHILD"); env != "" {
		ipcChild(t, env)
		return
	}
	if ok, err := d.Attribute(DeviceIPCEventSupported); err != nil || ok == 0 {
		t.Skipf("%v supports no interprocess events (%v)", d, err)
	}
	arch, err := d.Arch()
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compile(ipcKernels, &CompileOptions{Name: "ipc.cu", Arch: arch})
	if err != nil {
		t.Fatal(err)
	}
	mod, err := LoadModule(c.Image)
	if err != nil {
		t.Fatal(err)
	}
	defer mod.Close()
	produce, err := mod.Kernel("produce")
	if err != nil {
		t.Fatal(err)
	}

	alloc, err := d.Alloc(ipcOffset + ipcSize)
	if err != nil {
		t.Fatal(err)
	}
	defer alloc.Memory().free()
	if err := alloc.Memset(0, alloc.Size()); err != nil {
		t.Fatal(err)
	}
	if err := d.Synchronize(); err != nil {
		t.Fatal(err)
	}
	shared, _ := alloc.Add(ipcOffset)
	mh, err := shared.IPCHandle()
	if err != nil {
		t.Fatalf("MemoryPointer.IPCHandle: %v", err)
	}
	if mh.offset != ipcOffset || mh.Size() != ipcSize {
		t.Fatalf("the handle names %d bytes at offset %d, want %d at %d", mh.Size(), mh.offset, ipcSize, ipcOffset)
	}
	ev, err := NewEvent(d, &EventOptions{Interprocess: true, DisableTiming: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close()
	eh, err := ev.IPCHandle()
	if err != nil {
		t.Fatalf("Event.IPCHandle: %v", err)
	}

	s, err := NewStream(d, &StreamOptions{NonBlocking: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	flag, _ := shared.Add(ipcFlag)
	status, _ := shared.Add(ipcStatus)
	data, _ := shared.Add(ipcData)
	timeout := uint64(60 * time.Second) // generous: the child starts under compute-sanitizer too
	if err := produce.Launch(s, LaunchConfig{Grid: Dim3{X: 1}, Block: Dim3{X: 256}}, flag, status, data, int32(ipcN), timeout); err != nil {
		t.Fatal(err)
	}
	if err := ev.Record(s); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(os.Args[0], "-test.run=^TestGPUIPC$", "-test.v")
	cmd.Env = append(os.Environ(), fmt.Sprintf("HL_IPC_CHILD=%s:%s", marshalHex(t, mh), marshalHex(t, eh)))
	out, cerr := cmd.CombinedOutput()
	t.Logf("child:\n%s", out)
	if err := s.Synchronize(); err != nil {
		t.Fatalf("the producer: %v", err)
	}
	if cerr != nil {
		t.Fatalf("child: %v", cerr)
	}
	if st := toHost(t, shared, ipcStatus, 1)[0]; st != 1 {
		t.Errorf("the producer's status is %d, want 1 (2: it never saw the child's flag)", st)
	}
	reply := toHost(t, shared, ipcReply, ipcN)
	for i, v := range reply {
		if v != ^(7*int32(i) + 3) {
			t.Fatalf("reply[%d] = %d, want %d", i, v, ^(7*int32(i) + 3))
		}
	}
}

// ipcChild is the child's side of TestGPUIPC.
func ipcChild(t *testing.T, env string) {
	d := Device(0)
	hexes := strings.Split(env, ":")
	if len(hexes) != 2 {
		t.Fatalf("HL_IPC_CHILD=%q", env)
	}
	var mh IPCMemHandle
	var eh IPCEventHandle
	for i, u := range []interface{ UnmarshalBinary([]byte) error }{&mh, &eh} {
		b, err := hex.DecodeString(hexes[i])
		if err != nil {
			t.Fatal(err)
		}
		if err := u.UnmarshalBinary(b); err != nil {
			t.Fatal(err)
		}
	}
	shared, err := OpenIPCMemory(d, mh)
	if err != nil {
		t.Fatalf("OpenIPCMemory: %v", err)
	}
	if shared.Size() != ipcSize || shared.Device() != d {
		t.Errorf("the opened memory has %d bytes on %v, want %d on %v", shared.Size(), shared.Device(), ipcSize, d)
	}
	ev, err := OpenIPCEvent(d, eh)
	if err != nil {
		t.Fatalf("OpenIPCEvent: %v", err)
	}
	defer ev.Close()

	// The producer waits for the flag: nothing is written yet.
	for i, v := range toHost(t, shared, ipcData, ipcN) {
		if v != 0 {
			t.Fatalf("data[%d] = %d before the flag was set", i, v)
		}
	}
	if ok, err := ev.Query(); ok || err != nil {
		t.Errorf("the event before the flag: happened %v, %v", ok, err)
	}
	fromHost(t, shared, ipcFlag, []int32{1})

	s, err := NewStream(d, &StreamOptions{NonBlocking: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.WaitEvent(ev); err != nil {
		t.Fatalf("WaitEvent: %v", err)
	}
	data, _ := shared.Add(ipcData)
	got := make([]int32, ipcN)
	if err := data.CopyToHostPointerAsync(s, unsafe.Pointer(&got[0]), 4*ipcN); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	reply := make([]int32, ipcN)
	for i, v := range got {
		if v != 7*int32(i)+3 {
			t.Fatalf("data[%d] = %d after waiting for the event, want %d", i, v, 7*i+3)
		}
		reply[i] = ^v
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := ev.Wait(ctx); err != nil {
		t.Errorf("Wait for the opened event: %v", err)
	}
	if ok, err := ev.Query(); !ok || err != nil {
		t.Errorf("the event after the wait: happened %v, %v", ok, err)
	}
	fromHost(t, shared, ipcReply, reply)
	if err := d.Synchronize(); err != nil {
		t.Fatal(err)
	}

	// A handle that claims more than the allocation holds is refused.
	bad := mh
	bad.size = 1 << 40
	if p, err := OpenIPCMemory(d, bad); err == nil || !strings.Contains(err.Error(), "past the end") {
		t.Errorf("OpenIPCMemory of %d bytes: %v", bad.size, err)
		if err == nil {
			p.Memory().free()
		}
	}
	// Opened twice, the mapping is counted: each Free unmaps once.
	again, err := OpenIPCMemory(d, mh)
	if err != nil {
		t.Fatalf("OpenIPCMemory again: %v", err)
	}
	if again.Ptr() != shared.Ptr() {
		t.Logf("opened again at %p, first at %p", again.Ptr(), shared.Ptr())
	}
	if err := again.Memory().free(); err != nil {
		t.Errorf("Free of the second mapping: %v", err)
	}
	if v := toHost(t, shared, ipcData, 1)[0]; v != 3 {
		t.Errorf("the first mapping after the second's Free reads %d, want 3", v)
	}
	if err := shared.Memory().free(); err != nil {
		t.Errorf("Free: %v", err)
	}
	if err := shared.Memory().free(); !errors.Is(err, ErrFreed) {
		t.Errorf("second Free: %v, want ErrFreed", err)
	}
}

// TestGPUIPCHandles checks which memory and events can be exported, in one
// process.
func TestGPUIPCHandles(t *testing.T) {
	d := gpu(t)
	// A pool's block inside one of its chunks: the handle names the chunk
	// and the block's offset in it.
	pool, err := NewMemoryPool(d)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	first, _ := pool.Alloc(512)
	defer first.Memory().free()
	block, err := pool.Alloc(1000)
	if err != nil {
		t.Fatal(err)
	}
	defer block.Memory().free()
	h, err := block.IPCHandle()
	if err != nil {
		t.Fatalf("IPCHandle of a pool's block: %v", err)
	}
	var base cudadrv.Deviceptr
	var size uint64
	if err := d.Do(func() error {
		return cudadrv.MemGetAddressRange(&base, &size, cudadrv.Deviceptr(uintptr(block.Ptr())))
	}); err != nil {
		t.Fatal(err)
	}
	if want := int(uintptr(block.Ptr()) - uintptr(base)); h.offset != want || h.Size() != block.Size() {
		t.Errorf("the block's handle: %d bytes at offset %d, want %d at %d", h.Size(), h.offset, block.Size(), want)
	}
	// A process cannot open what it exported itself.
	if p, err := OpenIPCMemory(d, h); err == nil {
		t.Logf("the exporting process opened its own handle at %p", p.Ptr())
		p.Memory().free()
	} else {
		t.Logf("OpenIPCMemory in the exporting process: %v", err)
	}

	async, err := AllocAsync(nil, 1024)
	if err != nil {
		t.Fatal(err)
	}
	defer async.Memory().free()
	if _, err := async.IPCHandle(); !errors.Is(err, ErrNotShareable) {
		t.Errorf("IPCHandle of AllocAsync memory: %v, want ErrNotShareable", err)
	}
	managed, err := Managed(d).Alloc(1024)
	if err != nil {
		t.Fatal(err)
	}
	defer managed.Memory().free()
	if _, err := managed.IPCHandle(); !errors.Is(err, ErrNotShareable) {
		t.Errorf("IPCHandle of managed memory: %v, want ErrNotShareable", err)
	}
	plain, err := NewEvent(d, &EventOptions{DisableTiming: true})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if _, err := plain.IPCHandle(); !errors.Is(err, ErrNotShareable) {
		t.Errorf("IPCHandle of an event without Interprocess: %v, want ErrNotShareable", err)
	}
	ev, err := NewEvent(d, &EventOptions{Interprocess: true, DisableTiming: true})
	if err != nil {
		t.Fatal(err)
	}
	eh, err := ev.IPCHandle()
	if err != nil || eh == (IPCEventHandle{}) {
		t.Errorf("IPCHandle of an interprocess event: %x, %v", eh.b, err)
	}
	ev.Close()
	if _, err := ev.IPCHandle(); !errors.Is(err, ErrClosed) {
		t.Errorf("IPCHandle of a closed event: %v, want ErrClosed", err)
	}
}
