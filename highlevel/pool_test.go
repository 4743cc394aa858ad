package highlevel

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/gocuda/cuda/cudart"
)

// hostAllocator is an Allocator backed by Go memory, so that the pools'
// bookkeeping can be tested without a GPU. It fails with
// cudart.ErrorMemoryAllocation past capacity bytes.
type hostAllocator struct {
	mu       sync.Mutex
	capacity int
	held     int
	allocs   int
	live     map[unsafe.Pointer][]byte
}

func newHostAllocator(capacity int) *hostAllocator {
	return &hostAllocator{capacity: capacity, live: make(map[unsafe.Pointer][]byte)}
}

func (h *hostAllocator) Alloc(size int) (MemoryPointer, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.held+size > h.capacity {
		return MemoryPointer{}, cudart.ErrorMemoryAllocation
	}
	b := make([]byte, size)
	p := unsafe.Pointer(&b[0])
	h.live[p] = b
	h.held += size
	h.allocs++
	return MemoryPointer{mem: &Memory{ptr: p, size: size, owner: h}}, nil
}

func (h *hostAllocator) free(m *Memory) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.live[m.ptr]; !ok {
		return fmt.Errorf("host allocator: free of %p, not allocated", m.ptr)
	}
	delete(h.live, m.ptr)
	h.held -= m.size
	return nil
}

func (h *hostAllocator) stats() (held, allocs int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.held, h.allocs
}

func newTestPool(t testing.TB, capacity int) (*MemoryPool, *hostAllocator) {
	t.Helper()
	h := newHostAllocator(capacity)
	p, err := NewMemoryPool(h)
	if err != nil {
		t.Fatal(err)
	}
	return p, h
}

type poolCounts struct{ used, free, total, requested, nfree, active int }

func counts(p *MemoryPool) poolCounts {
	return poolCounts{p.UsedBytes(), p.FreeBytes(), p.TotalBytes(), p.RequestedBytes(), p.NFreeBlocks(), p.ActiveBlocks()}
}

func mustAlloc(t testing.TB, p *MemoryPool, n int) MemoryPointer {
	t.Helper()
	m, err := p.Alloc(n)
	if err != nil {
		t.Fatalf("Alloc(%d): %v", n, err)
	}
	return m
}

func TestPoolReusesFreedBlock(t *testing.T) {
	p, h := newTestPool(t, 1<<20)
	a := mustAlloc(t, p, 1000)
	if got, want := counts(p), (poolCounts{used: 1024, total: 1024, requested: 1000, active: 1}); got != want {
		t.Errorf("after Alloc(1000): %+v, want %+v", got, want)
	}
	addr := a.Ptr()
	if err := a.Memory().free(); err != nil {
		t.Fatal(err)
	}
	if got, want := counts(p), (poolCounts{free: 1024, total: 1024, nfree: 1}); got != want {
		t.Errorf("after Free: %+v, want %+v", got, want)
	}
	b := mustAlloc(t, p, 1024)
	if b.Ptr() != addr {
		t.Errorf("second Malloc got %p, want the freed block %p", b.Ptr(), addr)
	}
	if _, allocs := h.stats(); allocs != 1 {
		t.Errorf("upstream allocations = %d, want 1", allocs)
	}
	b.Memory().free()
}

func TestPoolSplitAndMerge(t *testing.T) {
	p, h := newTestPool(t, 1<<20)
	big := mustAlloc(t, p, 4*binSize)
	base := big.Ptr()
	big.Memory().free()
	// Best fit splits the 2048-byte block into four.
	var ms []MemoryPointer
	for i := range 4 {
		m := mustAlloc(t, p, binSize)
		if m.Ptr() != unsafe.Add(base, i*binSize) {
			t.Errorf("block %d at %p, want %p", i, m.Ptr(), unsafe.Add(base, i*binSize))
		}
		ms = append(ms, m)
	}
	if got := p.NFreeBlocks(); got != 0 {
		t.Errorf("NFreeBlocks = %d, want 0", got)
	}
	// Free 1 and 2: they merge into one; then 0 and 3 merge them all.
	ms[1].Memory().free()
	ms[2].Memory().free()
	if got := p.NFreeBlocks(); got != 1 {
		t.Errorf("after freeing neighbours: NFreeBlocks = %d, want 1", got)
	}
	ms[0].Memory().free()
	ms[3].Memory().free()
	if got, want := counts(p), (poolCounts{free: 2048, total: 2048, nfree: 1}); got != want {
		t.Errorf("after freeing all: %+v, want %+v", got, want)
	}
	// Best fit: with free blocks of 512 and 1536, a 512 request takes the
	// 512 one.
	a := mustAlloc(t, p, 512)
	b := mustAlloc(t, p, 1536)
	a.Memory().free()
	c := mustAlloc(t, p, 100)
	if c.Ptr() != a.Ptr() {
		t.Errorf("best fit took %p, want %p", c.Ptr(), a.Ptr())
	}
	b.Memory().free()
	c.Memory().free()
	if err := p.FreeAllBlocks(); err != nil {
		t.Fatal(err)
	}
	if held, _ := h.stats(); held != 0 || p.TotalBytes() != 0 {
		t.Errorf("after FreeAllBlocks: upstream holds %d, pool %d; want 0", held, p.TotalBytes())
	}
}

func TestPoolStreamTaggedReuse(t *testing.T) {
	p, h := newTestPool(t, 1<<20)
	s1, s2 := &Stream{h: 0x1000, state: standIn}, &Stream{h: 0x2000, state: standIn}
	a, err := p.AllocAsync(s1, 1024)
	if err != nil {
		t.Fatal(err)
	}
	addr := a.Ptr()
	a.Memory().free()
	b, err := p.AllocAsync(s2, 1024)
	if err != nil {
		t.Fatal(err)
	}
	if b.Ptr() == addr {
		t.Errorf("a block freed on stream 1 was reused on stream 2")
	}
	c, err := p.AllocAsync(s1, 1024)
	if err != nil {
		t.Fatal(err)
	}
	if c.Ptr() != addr {
		t.Errorf("stream 1 got %p, want its freed block %p", c.Ptr(), addr)
	}
	if _, allocs := h.stats(); allocs != 2 {
		t.Errorf("upstream allocations = %d, want 2", allocs)
	}
	b.Memory().free()
	c.Memory().free()
}

func TestPoolOutOfMemoryFreesAndRetries(t *testing.T) {
	p, h := newTestPool(t, 4096)
	a := mustAlloc(t, p, 4096)
	a.Memory().free() // held free, but too small to split into 8192
	big, err := p.Alloc(2048)
	if err != nil {
		t.Fatal(err)
	}
	big.Memory().free()
	p.FreeAllBlocks()
	x := mustAlloc(t, p, 3072)
	x.Memory().free() // 3072 held, upstream has 1024 left
	y, err := p.Alloc(4096)
	if err != nil {
		t.Fatalf("Alloc(4096) after freeing the held block should succeed: %v", err)
	}
	y.Memory().free()
	_, err = p.Alloc(8192)
	if !errors.Is(err, cudart.ErrorMemoryAllocation) {
		t.Fatalf("Malloc past capacity: %v, want ErrorMemoryAllocation", err)
	}
	if held, _ := h.stats(); held != 0 || p.TotalBytes() != 0 {
		t.Errorf("after the failed retry: upstream %d, pool %d bytes; want 0 (the retry frees what the pool holds)", held, p.TotalBytes())
	}
}

// panickingAllocator is a hostAllocator whose Malloc panics while panics is
// set: a program's Allocator with a bug.
type panickingAllocator struct {
	*hostAllocator
	panics bool
}

func (a *panickingAllocator) Alloc(size int) (MemoryPointer, error) {
	if a.panics {
		panic("upstream")
	}
	return a.hostAllocator.Alloc(size)
}

// TestPoolUpstreamPanics makes a pool's upstream Allocator panic: the
// panic reaches the caller of Malloc, the pool's counts are as they were,
// and its lock is free, so that an allocation under the limit succeeds
// after it (the reservation stayed counted, and the pool was out of memory
// under its limit).
func TestPoolUpstreamPanics(t *testing.T) {
	up := &panickingAllocator{hostAllocator: newHostAllocator(1 << 20), panics: true}
	p, err := NewMemoryPool(up)
	if err != nil {
		t.Fatal(err)
	}
	p.SetLimit(4096)
	func() {
		defer func() {
			if v := recover(); v != "upstream" {
				t.Errorf("Malloc's panic: %v, want the upstream allocator's", v)
			}
		}()
		p.Alloc(3000)
	}()
	if got := counts(p); got != (poolCounts{}) {
		t.Errorf("after the upstream allocator panicked: %+v, want nothing held", got)
	}
	if !p.arena.mu.TryLock() {
		t.Fatal("the pool's lock is held after the upstream allocator panicked")
	}
	p.arena.mu.Unlock()
	up.panics = false
	m, err := p.Alloc(3000)
	if err != nil {
		t.Fatalf("Malloc under the limit after the upstream allocator panicked: %v", err)
	}
	if err := errors.Join(m.Memory().free(), p.Close()); err != nil {
		t.Error(err)
	}
}

func TestPoolLimit(t *testing.T) {
	p, _ := newTestPool(t, 1<<20)
	p.SetLimit(2048)
	if p.Limit() != 2048 {
		t.Errorf("Limit = %d", p.Limit())
	}
	a := mustAlloc(t, p, 1024)
	b := mustAlloc(t, p, 1024)
	if _, err := p.Alloc(1); !errors.Is(err, cudart.ErrorMemoryAllocation) {
		t.Errorf("Malloc past the limit: %v, want ErrorMemoryAllocation", err)
	}
	a.Memory().free()
	// The freed 1024 are reused within the limit.
	c := mustAlloc(t, p, 600)
	b.Memory().free()
	c.Memory().free()
	p.SetLimit(0)
	mustAlloc(t, p, 1<<19).Memory().free()
}

func TestPoolStopHolding(t *testing.T) {
	p, h := newTestPool(t, 1<<20)
	a := mustAlloc(t, p, 1024)
	b := mustAlloc(t, p, 1024)
	a.Memory().free()
	if err := p.StopHolding(); err != nil {
		t.Fatal(err)
	}
	if held, _ := h.stats(); held != 1024 {
		t.Errorf("after StopHolding upstream holds %d, want 1024 (the block in use)", held)
	}
	b.Memory().free()
	if held, _ := h.stats(); held != 0 || p.TotalBytes() != 0 || p.NFreeBlocks() != 0 {
		t.Errorf("after the last Free: upstream %d, pool %d, free blocks %d; want 0", held, p.TotalBytes(), p.NFreeBlocks())
	}
}

// refused checks that err is the refusal the test asked for: one that
// errors.Is target, with text in its message.
func refused(t *testing.T, what string, err, target error, text string) {
	t.Helper()
	if !errors.Is(err, target) || !strings.Contains(fmt.Sprint(err), text) {
		t.Errorf("%s: %v, want %v with %q", what, err, target, text)
	}
}

func TestPoolSizeChecks(t *testing.T) {
	p, _ := newTestPool(t, 1<<20)
	for _, n := range []int{0, -1} {
		refused(t, fmt.Sprintf("Alloc(%d)", n), second(p.Alloc(n)), ErrInvalid, "it must be positive")
	}
	m := mustAlloc(t, p, 100)
	for _, tc := range []struct {
		name string
		err  error
		text string
	}{
		{"negative size", m.CopyToHostPointer(unsafe.Pointer(&[1]byte{}), -5), "size -5: it must not be negative"},
		{"past the end", m.Memset(0, 101), "101 bytes at offset 0 are past the end of the 100 bytes"},
		{"nil host pointer", m.CopyFromHostPointer(nil, 10), "nil host pointer"},
	} {
		refused(t, tc.name, tc.err, ErrInvalid, tc.text)
	}
	if err := m.Memset(0, 0); err != nil {
		t.Errorf("Memset of 0 bytes: %v, want nothing done", err)
	}
	refused(t, "Add past the end", second(m.Add(101)), ErrInvalid, "offset 0 + 101 is outside the 100 bytes")
	refused(t, "Add before the start", second(m.Add(-1)), ErrInvalid, "offset 0 + -1 is outside the 100 bytes")
	q, err := m.Add(60)
	if err != nil || q.Size() != 40 || q.Ptr() != unsafe.Add(m.Ptr(), 60) {
		t.Errorf("Add(60) = %v (size %d), %v", q.Ptr(), q.Size(), err)
	}
	refused(t, "Memset of 41 bytes at offset 60 of 100", q.Memset(0, 41), ErrInvalid, "41 bytes at offset 60 are past the end of the 100 bytes")
	if err := m.Memory().free(); err != nil {
		t.Fatal(err)
	}
	if err := m.Memory().free(); !errors.Is(err, ErrFreed) {
		t.Errorf("second Free: %v, want ErrFreed", err)
	}
	if err := q.Memset(0, 1); !errors.Is(err, ErrFreed) {
		t.Errorf("Memset after Free: %v, want ErrFreed", err)
	}
	if _, err := (MemoryPointer{}).Add(0); !errors.Is(err, ErrNil) {
		t.Errorf("zero MemoryPointer: %v, want ErrNil", err)
	}
	if p.UsedBytes() != 0 {
		t.Errorf("UsedBytes = %d, want 0", p.UsedBytes())
	}
}

// TestPoolCleanupReturnsLostBlocks drops allocations without Free: the
// cleanup puts them back, and UsedBytes returns to 0.
func TestPoolCleanupReturnsLostBlocks(t *testing.T) {
	p, _ := newTestPool(t, 1<<20)
	for range 10 {
		mustAlloc(t, p, 1000)
	}
	// A pool's Memory values come in slabs, and the current slab stays
	// reachable from the pool until it is used up: use it up.
	for range slabSize {
		mustAlloc(t, p, 1<<12).Memory().free()
	}
	// The next allocation takes the lost blocks back.
	deadline := time.Now().Add(5 * time.Second)
	for p.UsedBytes() != 0 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(time.Millisecond)
		mustAlloc(t, p, 512).Memory().free()
	}
	if got := p.UsedBytes(); got != 0 {
		t.Fatalf("UsedBytes = %d after the lost allocations were collected, want 0", got)
	}
	if got := p.NFreeBlocks(); got < 10 {
		t.Errorf("NFreeBlocks = %d, want at least the 10 lost blocks", got)
	}
}

// TestPoolLostBlocksSettle checks that lost blocks are reused only after
// the pool's settle (on a GPU: every device synchronized) returned, and
// not at all when it fails; and that a lost block does not merge with a
// free neighbour of another stream.
func TestPoolLostBlocksSettle(t *testing.T) {
	p, h := newTestPool(t, 1<<20)
	var settles int
	var settleErr error
	p.arena.settle = func() error { settles++; return settleErr }
	s1 := &Stream{h: 0x1000, state: standIn}
	mustAllocAsync := func(n int, s *Stream) MemoryPointer {
		t.Helper()
		m, err := p.AllocAsync(s, n)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	mustAllocAsync(4096, s1).Memory().free()
	a := mustAllocAsync(1024, s1) // the rest, 3072 bytes, stays free for s1
	rest := unsafe.Add(a.Ptr(), 1024)
	a.mem.owner.(*block).lose() // as the slab's cleanup does
	settleErr = ErrCapturing
	other, err := p.Alloc(512)
	if err != nil || settles != 1 || other.Ptr() == a.Ptr() {
		t.Fatalf("Malloc while settling fails = %p, %v after %d settles; want another block than the lost %p", other.Ptr(), err, settles, a.Ptr())
	}
	if p.ActiveBlocks() != 2 {
		t.Errorf("ActiveBlocks = %d after a failed settle, want the lost block still counted", p.ActiveBlocks())
	}
	other.Memory().free()
	settleErr = nil
	b := mustAllocAsync(512, nil)
	if settles != 2 {
		t.Fatalf("%d settles, want 2", settles)
	}
	if b.Ptr() != a.Ptr() && b.Ptr() != other.Ptr() {
		t.Errorf("the legacy stream got %p, want the settled lost block %p", b.Ptr(), a.Ptr())
	}
	c := mustAllocAsync(3072, s1)
	if c.Ptr() != rest {
		t.Errorf("s1 got %p, want its own free block %p (merged into the lost block's?)", c.Ptr(), rest)
	}
	if _, allocs := h.stats(); allocs != 2 {
		t.Errorf("%d upstream allocations, want 2", allocs)
	}
	b.Memory().free()
	c.Memory().free()
	if settles != 2 {
		t.Errorf("%d settles, want 2: Free settles nothing", settles)
	}
}

// TestPoolStreamClose checks that a closed stream's blocks serve the legacy
// default stream, and that a block of it freed later does too.
func TestPoolStreamClose(t *testing.T) {
	p, h := newTestPool(t, 1<<20)
	s := &Stream{h: 0x1000, state: standIn}
	a, _ := p.AllocAsync(s, 1024)
	b, _ := p.AllocAsync(s, 1024)
	a.Memory().free()
	s.life.Close()
	s.settlePools() // Close does this once the stream's work is done
	if _, err := p.AllocAsync(s, 1024); !errors.Is(err, ErrClosed) {
		t.Errorf("AllocAsync on a closed stream: %v, want ErrClosed", err)
	}
	c, err := p.Alloc(1024)
	if err != nil || c.Ptr() != a.Ptr() {
		t.Errorf("legacy stream got %p, %v; want the closed stream's block %p", c.Ptr(), err, a.Ptr())
	}
	b.Memory().free()
	d, err := p.Alloc(1024)
	if err != nil || d.Ptr() != b.Ptr() {
		t.Errorf("legacy stream got %p, %v; want the block freed after Close %p", d.Ptr(), err, b.Ptr())
	}
	if _, allocs := h.stats(); allocs != 2 {
		t.Errorf("%d upstream allocations, want 2", allocs)
	}
	if len(p.arena.streams) != 1 {
		t.Errorf("the pool keeps %d streams' bins, want only the legacy stream's", len(p.arena.streams))
	}
}

func TestPoolConcurrent(t *testing.T) {
	p, _ := newTestPool(t, 64<<20)
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			var held []MemoryPointer
			for i := range 500 {
				m, err := p.Alloc(1 + (g*7919+i*104729)%20000)
				if err != nil {
					t.Error(err)
					return
				}
				*(*byte)(m.Ptr()) = byte(g)
				held = append(held, m)
				if i%3 == 0 {
					for _, h := range held {
						if *(*byte)(h.Ptr()) != byte(g) {
							t.Errorf("goroutine %d: a block it holds was handed out again", g)
						}
						h.Memory().free()
					}
					held = held[:0]
				}
			}
			for _, h := range held {
				h.Memory().free()
			}
		})
	}
	wg.Wait()
	if p.UsedBytes() != 0 || p.ActiveBlocks() != 0 {
		t.Errorf("UsedBytes %d, ActiveBlocks %d; want 0", p.UsedBytes(), p.ActiveBlocks())
	}
}

// FuzzPool runs random sequences of Malloc, Free and FreeAllBlocks and
// checks the pool's invariants after each step.
func FuzzPool(f *testing.F) {
	f.Add([]byte{0, 10, 0, 20, 1, 0, 0, 5, 2, 1, 1})
	f.Add([]byte{0, 255, 0, 1, 0, 128, 1, 1, 1, 0, 0, 3, 2})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 1024 {
			ops = ops[:1024] // the checks are quadratic in the steps
		}
		p, h := newTestPool(t, 1<<20)
		var held []MemoryPointer
		streams := []*Stream{nil, {h: 1, state: standIn}, {h: 3, state: standIn}}
		for i := 0; i+1 < len(ops); i += 2 {
			arg := int(ops[i+1])
			switch ops[i] % 5 {
			case 0, 3: // malloc
				m, err := p.AllocAsync(streams[arg%3], 1+arg*97)
				if errors.Is(err, ErrClosed) {
					continue
				}
				if err != nil {
					if !errors.Is(err, cudart.ErrorMemoryAllocation) {
						t.Fatalf("Malloc: %v", err)
					}
					continue
				}
				for _, o := range held {
					lo, hi := uintptr(o.Ptr()), uintptr(o.Ptr())+uintptr(roundSize(o.mem.size))
					if p := uintptr(m.Ptr()); p < hi && p+uintptr(roundSize(m.mem.size)) > lo {
						t.Fatalf("block %#x overlaps a block in use %#x", p, lo)
					}
				}
				held = append(held, m)
			case 1: // free
				if len(held) > 0 {
					k := arg % len(held)
					if err := held[k].Memory().free(); err != nil {
						t.Fatal(err)
					}
					held = append(held[:k], held[k+1:]...)
				}
			case 2:
				if err := p.FreeAllBlocks(); err != nil {
					t.Fatal(err)
				}
			case 4: // close a stream, as Close does once the stream's work is done
				if s := streams[arg%3]; s != nil && s.life.Close() {
					s.settlePools()
				}
			}
			used, req := 0, 0
			for _, m := range held {
				used += roundSize(m.mem.size)
				req += m.mem.size
			}
			upstream, _ := h.stats()
			c := counts(p)
			if c.used != used || c.requested != req || c.active != len(held) || c.total != upstream || c.used+c.free != c.total {
				t.Fatalf("step %d: pool %+v; want used %d, requested %d, active %d, total %d (upstream)", i/2, c, used, req, len(held), upstream)
			}
		}
		for _, m := range held {
			m.Memory().free()
		}
		p.FreeAllBlocks()
		if p.UsedBytes() != 0 || p.TotalBytes() != 0 {
			t.Fatalf("at the end: UsedBytes %d, TotalBytes %d; want 0", p.UsedBytes(), p.TotalBytes())
		}
		if upstream, _ := h.stats(); upstream != 0 {
			t.Fatalf("upstream still holds %d bytes", upstream)
		}
	})
}

// BenchmarkPoolHostMallocFree is the pool's hit path without a GPU.
func BenchmarkPoolHostMallocFree(b *testing.B) {
	p, _ := newTestPool(b, 1<<30)
	mustAlloc(b, p, 1<<20).Memory().free()
	b.ReportAllocs()
	for b.Loop() {
		m, err := p.Alloc(1 << 20)
		if err != nil {
			b.Fatal(err)
		}
		m.Memory().free()
	}
}

// TestPoolFreeAllBlocksStream checks that FreeAllBlocksStream gives back
// the free chunks of one stream only, leaving those of the others and the
// blocks in use.
func TestPoolFreeAllBlocksStream(t *testing.T) {
	p, h := newTestPool(t, 1<<20)
	s1, s2 := &Stream{h: 0x1000, state: standIn}, &Stream{h: 0x2000, state: standIn}
	a1, _ := p.AllocAsync(s1, 4096)
	a2, _ := p.AllocAsync(s2, 4096)
	a0 := mustAlloc(t, p, 4096)
	inUse, _ := p.AllocAsync(s1, 4096)
	a1.Memory().free()
	a2.Memory().free()
	a0.Memory().free()
	if held, _ := h.stats(); held != 4*4096 {
		t.Fatalf("upstream holds %d bytes, want %d", held, 4*4096)
	}
	if err := p.FreeAllBlocksStream(s1); err != nil {
		t.Fatal(err)
	}
	if held, _ := h.stats(); held != 3*4096 || p.TotalBytes() != 3*4096 || p.NFreeBlocks() != 2 {
		t.Errorf("after FreeAllBlocksStream(s1): upstream %d, TotalBytes %d, NFreeBlocks %d; want %d, %d, 2", held, p.TotalBytes(), p.NFreeBlocks(), 3*4096, 3*4096)
	}
	if err := p.FreeAllBlocksStream(nil); err != nil {
		t.Fatal(err)
	}
	if held, _ := h.stats(); held != 2*4096 || p.NFreeBlocks() != 1 {
		t.Errorf("after FreeAllBlocksStream(nil): upstream %d, NFreeBlocks %d; want %d, 1", held, p.NFreeBlocks(), 2*4096)
	}
	if b, _ := p.AllocAsync(s2, 4096); b.Ptr() != a2.Ptr() {
		t.Errorf("s2's free block was not kept")
	} else {
		b.Memory().free()
	}
	inUse.Memory().free()
	closed := &Stream{h: 0x3000, state: standIn}
	closed.life.Close()
	if err := p.FreeAllBlocksStream(closed); !errors.Is(err, ErrClosed) {
		t.Errorf("FreeAllBlocksStream of a closed stream: %v, want ErrClosed", err)
	}
	if err := p.FreeAllBlocksStream(&Stream{h: 2}); err == nil || !strings.Contains(err.Error(), "per-thread") {
		t.Errorf("FreeAllBlocksStream of the per-thread default stream: %v", err)
	}
	if err := (*MemoryPool)(nil).FreeAllBlocksStream(nil); !errors.Is(err, ErrNil) {
		t.Errorf("nil pool: %v, want ErrNil", err)
	}
}

// TestPoolLimitFractionChecks checks SetLimitFraction's refusals, made
// before CUDA is asked for the device's memory.
func TestPoolLimitFractionChecks(t *testing.T) {
	p, _ := newTestPool(t, 1<<20)
	if err := p.SetLimitFraction(0.5); err == nil || !strings.Contains(err.Error(), "no device") {
		t.Errorf("SetLimitFraction of a pool over an allocator of no device: %v", err)
	}
	onDev, err := NewMemoryPool(Device(3))
	if err != nil {
		t.Fatal(err)
	}
	if onDev.Device() != 3 {
		t.Errorf("Device of a pool over Device(3) = %v", onDev.Device())
	}
	if over, _ := NewMemoryPool(onDev); over.Device() != 3 {
		t.Errorf("Device of a pool over a pool of device 3 = %v", over.Device())
	}
	ap := &MemoryAsyncPool{dev: 3, ctx: standInCtx}
	for _, f := range []float64{-0.1, 1.01, math.NaN(), math.Inf(1)} {
		if err := onDev.SetLimitFraction(f); err == nil || !strings.Contains(err.Error(), "[0, 1]") {
			t.Errorf("MemoryPool.SetLimitFraction(%v): %v", f, err)
		}
		if err := ap.SetLimitFraction(f); err == nil || !strings.Contains(err.Error(), "[0, 1]") {
			t.Errorf("MemoryAsyncPool.SetLimitFraction(%v): %v", f, err)
		}
	}
	onDev.SetLimit(100)
	if err := onDev.SetLimitFraction(0); err != nil || onDev.Limit() != 0 {
		t.Errorf("SetLimitFraction(0) = %v, Limit %d, want no limit", err, onDev.Limit())
	}
}

// TestAsyncPoolLimit checks a MemoryAsyncPool's own count against its
// limit, with goroutines racing for the last bytes (under -race).
func TestAsyncPoolLimit(t *testing.T) {
	p := &MemoryAsyncPool{ctx: standInCtx}
	if err := p.SetLimit(-1); err == nil {
		t.Errorf("SetLimit(-1) accepted")
	}
	if err := p.SetLimit(1000); err != nil || p.Limit() != 1000 {
		t.Fatalf("SetLimit(1000) = %v, Limit %d", err, p.Limit())
	}
	var wg sync.WaitGroup
	var ok atomic.Int32
	for range 16 {
		wg.Go(func() {
			if p.reserve(300) == nil {
				ok.Add(1)
			}
		})
	}
	wg.Wait()
	if ok.Load() != 3 || p.inUse.Load() != 900 {
		t.Errorf("%d reservations of 300 bytes under a limit of 1000, %d bytes in use; want 3, 900", ok.Load(), p.inUse.Load())
	}
	if err := p.reserve(101); !errors.Is(err, cudart.ErrorMemoryAllocation) {
		t.Errorf("past the limit: %v, want cudart.ErrorMemoryAllocation", err)
	}
	p.SetLimit(0)
	if err := p.reserve(1 << 40); err != nil {
		t.Errorf("without a limit: %v", err)
	}
	var nilPool *MemoryAsyncPool
	if nilPool.UsedBytes() != 0 || nilPool.FreeBytes() != 0 || nilPool.TotalBytes() != 0 || nilPool.Limit() != 0 || nilPool.ReleaseThreshold() != 0 {
		t.Errorf("a nil pool's statistics are not 0")
	}
}

// TestManagedChecks checks Prefetch's and Advise's refusals, made before
// any CUDA call: each names its operation once and matches its sentinel.
func TestManagedChecks(t *testing.T) {
	plain := MemoryPointer{mem: hostMemory(64)}
	managedMem := hostMemory(64)
	managedMem.managed = true
	managed := MemoryPointer{mem: managedMem}
	freed := hostMemory(64)
	freed.managed = true
	freed.free()
	const prefetch, advise = "highlevel: prefetch ", "highlevel: advise "
	for _, tc := range []struct {
		name string
		err  error
		op   string
		text string
		is   error
	}{
		{"prefetch of device memory", plain.Prefetch(nil, 64, 0), prefetch, "not managed", ErrInvalid},
		{"advice on device memory", plain.Advise(64, AdviseReadMostly, 0), advise, "not managed", ErrInvalid},
		{"prefetch past the end", managed.Prefetch(nil, 65, 0), prefetch, "past the end", ErrInvalid},
		{"advice past the end", managed.Advise(65, AdviseAccessedBy, 0), advise, "past the end", ErrInvalid},
		{"negative size", managed.Prefetch(nil, -1, 0), prefetch, "negative", ErrInvalid},
		{"no such device", managed.Prefetch(nil, 8, -2), prefetch, "no device -2", ErrInvalid},
		{"unknown advice", managed.Advise(8, 0, 0), advise, "unknown Advice(0)", ErrInvalid},
		{"freed", MemoryPointer{mem: freed}.Prefetch(nil, 8, CPUDevice), prefetch, "freed", ErrFreed},
		{"zero pointer", MemoryPointer{}.Advise(8, AdviseReadMostly, 0), advise, "zero MemoryPointer", ErrNil},
	} {
		if tc.err == nil || !strings.HasPrefix(tc.err.Error(), tc.op) || strings.Count(tc.err.Error(), "highlevel:") != 1 ||
			!strings.Contains(tc.err.Error(), tc.text) || !errors.Is(tc.err, tc.is) {
			t.Errorf("%s: %v, want an error of %q with %q, matching %v", tc.name, tc.err, tc.op, tc.text, tc.is)
		}
	}
	if err := managed.Prefetch(nil, 0, 0); err != nil {
		t.Errorf("empty prefetch: %v", err)
	}
	if s := AdvisePreferredLocation.String(); s != "cudaMemAdviseSetPreferredLocation" {
		t.Errorf("AdvisePreferredLocation.String() = %q", s)
	}
}

// checkManagedDevices checks, on two devices of the stand-in driver, that
// Prefetch and Advise refuse every device CUDA does not count, and an
// unknown advice also for an empty range, before CUDA sees them: CUDA takes
// a device as a C int, where 2³¹ is the CPU and 2³² device 0.
func checkManagedDevices(t *testing.T) {
	m, err := Managed(Device(0)).Alloc(64)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Memory().free()
	for _, d := range []Device{2, 1 << 31, 1 << 32, 1<<32 + 1, -2} {
		if err := m.Prefetch(nil, 8, d); !errors.Is(err, ErrInvalid) {
			t.Errorf("Prefetch to %v: %v, want an error matching ErrInvalid", d, err)
		}
		if err := m.Advise(8, AdvisePreferredLocation, d); !errors.Is(err, ErrInvalid) {
			t.Errorf("Advise for %v: %v, want an error matching ErrInvalid", d, err)
		}
	}
	for _, n := range []int{0, 8} {
		if err := m.Advise(n, Advice(99), 0); !errors.Is(err, ErrInvalid) {
			t.Errorf("Advise(%d, Advice(99)): %v, want an error matching ErrInvalid", n, err)
		}
	}
	for _, d := range []Device{0, 1, CPUDevice} {
		if err := m.Prefetch(nil, 8, d); err != nil {
			t.Errorf("Prefetch to %v: %v", d, err)
		}
		if err := m.Advise(8, AdviseAccessedBy, d); err != nil {
			t.Errorf("Advise for %v: %v", d, err)
		}
	}
}

// TestSetPinnedMemoryAllocator checks that AllocPinned goes through
// the pinned allocator set, and that the allocator is fixed by its first
// use.
func TestSetPinnedMemoryAllocator(t *testing.T) {
	resetAllocators()
	t.Cleanup(resetAllocators)
	var asked []int
	buf := make([]byte, 64)
	err := SetPinnedMemoryAllocator(func(size int) (*PinnedMemory, error) {
		asked = append(asked, size)
		return &PinnedMemory{ptr: unsafe.Pointer(&buf[0]), size: size}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	m, err := AllocPinned(48)
	if err != nil || m.Ptr() != unsafe.Pointer(&buf[0]) || len(asked) != 1 || asked[0] != 48 {
		t.Errorf("AllocPinned(48) = %v, %v; allocator asked for %v", m, err, asked)
	}
	if _, err := AllocPinned(-1); err == nil || len(asked) != 1 {
		t.Errorf("AllocPinned(-1) = %v, allocator asked for %v", err, asked)
	}
	if err := SetPinnedMemoryAllocator(nil); !errors.Is(err, ErrAllocatorInUse) {
		t.Errorf("SetPinnedMemoryAllocator after use: %v, want ErrAllocatorInUse", err)
	}
}

// checkAsyncDropped drops stream-ordered memory without Free, on a
// stand-in driver (TestStubDriver): a slab of it is freed once its Memory
// values are all unreachable and the pool has moved on to a new slab, the
// last slab's once the pool is closed, and then the pool is destroyed.
func checkAsyncDropped(t *testing.T) {
	d := Device(0)
	p, err := NewMemoryAsyncPool(d)
	if err != nil {
		t.Fatal(err)
	}
	const rest = 8
	for range slabSize + rest {
		if _, err := p.AllocAsync(nil, 1<<10); err != nil {
			t.Fatal(err)
		}
	}
	// Cleanups run on a goroutine of their own after a collection: the
	// memory is lost some time after runtime.GC returns, and freed by the
	// next allocation.
	takeLost := func(done func() bool) {
		for start := time.Now(); time.Since(start) < 5*time.Second && !done(); time.Sleep(time.Millisecond) {
			runtime.GC()
			m, err := d.Alloc(1)
			if err != nil {
				t.Fatal(err)
			}
			m.Memory().free()
		}
	}
	// allocs counts the allocations not freed, and 1 until Close.
	takeLost(func() bool { return p.allocs.Load() <= rest+1 })
	if n := p.allocs.Load(); n != rest+1 {
		t.Errorf("the pool counts %d allocations after %d were dropped, %d of them in the slab in use; want %d", n-1, slabSize+rest, rest, rest)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	takeLost(func() bool { return p.allocs.Load() == 0 })
	if n := p.allocs.Load(); n != 0 {
		t.Errorf("the closed pool still counts %d allocations", n)
	}
}
