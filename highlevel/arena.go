package highlevel

import (
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"
)

// arena is the bookkeeping of a caching allocator, shared by MemoryPool and
// PinnedMemoryPool; it calls CUDA only through its source, and only to grow
// or to give memory back.
//
// Sizes are rounded up to binSize. Free blocks are kept per stream (a
// *Stream; nil is the legacy default stream), in bins by size; an
// allocation takes the smallest free block of its stream that fits (best
// fit) and splits off the rest as a free block. A freed block merges with
// the free neighbours of the same upstream allocation and the same stream.
// When no free block fits, the arena allocates the rounded size from its
// source.
type arena struct {
	source source
	dev    Device // where the source allocates (CPUDevice: pinned memory), for errors
	// settle waits until the work that may still use lost blocks is done,
	// before they are reused; nil for an arena that never loses blocks.
	settle func() error

	mu        sync.Mutex
	streams   map[*Stream]*freeBins
	total     int // bytes held from the source, reserved ones included
	used      int // bytes of blocks in use, rounded
	requested int // bytes of blocks in use, as requested
	active    int // blocks in use
	nfree     int // free blocks
	limit     int // 0: none
	noHold    bool
	lost      atomic.Pointer[block] // blocks whose owner was dropped, see lose
}

// binSize is the granularity of the arena's sizes; CUDA aligns allocations
// to 256 bytes or more, so blocks stay aligned.
const binSize = 512

// A chunk is memory the arena got from its source.
type chunk struct {
	ptr     unsafe.Pointer
	size    int
	dev     Device
	managed bool
	release func() error
}

// A source gets memory for an arena.
type source func(size int) (chunk, error)

// A block is a piece of a chunk, in use or free.
type block struct {
	arena      *arena
	ptr        unsafe.Pointer
	size       int
	requested  int
	chunk      *chunk
	prev, next *block // neighbours in chunk, by address
	stream     *Stream
	isFree     bool
	index      int    // in its bin, while free
	lostNext   *block // the lost stack's link
	// rec is the allocation recorder's record of the block in use
	// (StartMemoryProfile), or nil; guarded by memProfile.mu.
	rec *memRecord
}

// freeBins are one stream's free blocks: bins[i] holds those of sizes[i].
// The sizes ascend; a bin may be empty.
type freeBins struct {
	sizes []int
	bins  [][]*block
}

func newArena(src source, settle func() error) *arena {
	return &arena{source: src, settle: settle, streams: make(map[*Stream]*freeBins)}
}

// roundSize rounds n, at most maxSize, up to binSize.
func roundSize(n int) int { return (n + binSize - 1) / binSize * binSize }

// alloc returns a block of at least size bytes for stream s, which the
// caller keeps open during the call.
func (a *arena) alloc(size int, s *Stream) (*block, error) {
	if err := checkSize(size, a.dev); err != nil {
		return nil, err
	}
	n := roundSize(size)
	if err := a.reclaim(); err != nil {
		return nil, err
	}
	a.mu.Lock()
	if s != nil && a.streams[s] == nil {
		a.streams[s] = newFreeBins()
		s.mu.Lock()
		s.pools = append(s.pools, a)
		s.mu.Unlock()
	}
	b := a.takeLocked(n, s)
	if b == nil {
		a.mu.Unlock()
		var err error
		if b, err = a.grow(n, s); err != nil {
			return nil, err
		}
		a.mu.Lock()
	}
	b.requested = size
	a.used += b.size
	a.requested += size
	a.active++
	a.mu.Unlock()
	if memRecording.Load() {
		a.recordBlock(b, size, s)
	}
	return b, nil
}

// takeLocked takes the best-fitting free block of stream s, splitting off
// what is left over.
func (a *arena) takeLocked(n int, s *Stream) *block {
	f := a.streams[s]
	if f == nil {
		return nil
	}
	i, _ := slices.BinarySearch(f.sizes, n)
	for i < len(f.sizes) && len(f.bins[i]) == 0 {
		f.sizes = slices.Delete(f.sizes, i, i+1)
		f.bins = slices.Delete(f.bins, i, i+1)
	}
	if i == len(f.sizes) {
		return nil
	}
	bin := f.bins[i]
	b := bin[len(bin)-1]
	a.removeLocked(b)
	if b.size > n {
		r := &block{arena: a, ptr: unsafe.Add(b.ptr, n), size: b.size - n, chunk: b.chunk, prev: b, next: b.next, stream: s}
		if b.next != nil {
			b.next.prev = r
		}
		b.next, b.size = r, n
		a.insertLocked(r)
	}
	b.isFree = false
	return b
}

// grow gets a new chunk of n bytes for stream s. When the source is out of
// memory, or the chunk would pass the limit, it gives back the chunks held
// free and tries once more.
func (a *arena) grow(n int, s *Stream) (*block, error) {
	c, err := a.allocChunk(n)
	if err != nil {
		a.FreeAllBlocks()
		c, err = a.allocChunk(n)
	}
	if err != nil {
		return nil, err
	}
	return &block{arena: a, ptr: c.ptr, size: n, chunk: &c, stream: s}, nil
}

// allocChunk gets a chunk of n bytes from the source, counted in the
// arena's total. When the source fails, or panics (a program's Allocator
// upstream of a MemoryPool), the total is as it was; the panic goes on.
func (a *arena) allocChunk(n int) (chunk, error) {
	a.mu.Lock()
	if a.limit > 0 && n > a.limit-a.total {
		total, limit := a.total, a.limit
		a.mu.Unlock()
		return chunk{}, &OutOfMemoryError{Size: n, Device: a.dev, Limit: limit, Held: total}
	}
	a.total += n // reserved while the source allocates
	a.mu.Unlock()
	got := false
	defer func() {
		if !got {
			a.mu.Lock()
			a.total -= n
			a.mu.Unlock()
		}
	}()
	c, err := a.source(n)
	got = err == nil
	return c, err
}

// release gives b back: it merges with its free neighbours and is kept for
// reuse on its stream, or, when the arena stopped holding and the block is
// a whole chunk, given back to the source.
func (a *arena) release(b *block) error {
	if memRecording.Load() {
		forgetBlock(b) // before another allocation may take b
	}
	a.mu.Lock()
	c := a.releaseLocked(b)
	a.mu.Unlock()
	if c != nil {
		return c.release()
	}
	return nil
}

// releaseLocked returns the chunk to give back to the source, or nil.
func (a *arena) releaseLocked(b *block) *chunk {
	a.used -= b.size
	a.requested -= b.requested
	a.active--
	b.requested = 0
	if b.stream != nil && b.stream.settled.Load() {
		b.stream = nil // its stream was closed and its work is done
	}
	return a.freeLocked(b)
}

// freeLocked makes b, in use or lost, a free block of its stream, merged
// with its free neighbours of the same stream; it returns the chunk to
// give back to the source, or nil. Merging only within a stream keeps the
// rule that a block is reused only in the order of its stream's work.
func (a *arena) freeLocked(b *block) *chunk {
	b.isFree = true
	if n := b.next; n != nil && n.isFree && n.stream == b.stream {
		a.removeLocked(n)
		absorb(b, n)
	}
	if p := b.prev; p != nil && p.isFree && p.stream == b.stream {
		a.removeLocked(p)
		absorb(p, b)
		b = p
	}
	if a.noHold && b.prev == nil && b.next == nil {
		a.total -= b.size
		return b.chunk
	}
	a.insertLocked(b)
	return nil
}

// settleStream moves the free blocks kept for s, a stream that was closed
// once its work was done, to the legacy default stream's bins.
func (a *arena) settleStream(s *Stream) {
	var chunks []*chunk
	a.mu.Lock()
	if f := a.streams[s]; f != nil {
		var blocks []*block
		for _, bin := range f.bins {
			blocks = append(blocks, bin...)
		}
		for _, b := range blocks {
			a.removeLocked(b)
			b.stream = nil
			if c := a.freeLocked(b); c != nil {
				chunks = append(chunks, c)
			}
		}
		delete(a.streams, s)
	}
	a.mu.Unlock()
	for _, c := range chunks {
		c.release()
	}
}

// absorb merges n, the block after b in their chunk, into b.
func absorb(b, n *block) {
	b.size += n.size
	b.next = n.next
	if n.next != nil {
		n.next.prev = b
	}
}

func newFreeBins() *freeBins { return new(freeBins) }

func (a *arena) insertLocked(b *block) {
	b.isFree = true
	f := a.streams[b.stream]
	if f == nil {
		if b.stream != nil { // settled meanwhile
			b.stream = nil
			f = a.streams[nil]
		}
		if f == nil {
			f = newFreeBins()
			a.streams[nil] = f
		}
	}
	i, ok := slices.BinarySearch(f.sizes, b.size)
	if !ok {
		f.sizes = slices.Insert(f.sizes, i, b.size)
		f.bins = slices.Insert(f.bins, i, nil)
	}
	b.index = len(f.bins[i])
	f.bins[i] = append(f.bins[i], b)
	a.nfree++
}

func (a *arena) removeLocked(b *block) {
	f := a.streams[b.stream]
	i, _ := slices.BinarySearch(f.sizes, b.size)
	bin := f.bins[i]
	last := bin[len(bin)-1]
	bin[b.index], last.index = last, b.index
	bin[len(bin)-1] = nil
	f.bins[i] = bin[:len(bin)-1] // an empty bin stays listed until takeLocked passes it
	a.nfree--
}

// lose is the cleanup of a block's owner dropped without being freed: it
// pushes the block on the lost stack, without locking and without calling
// CUDA; the next alloc or FreeAllBlocks of the arena takes it back.
func (b *block) lose() {
	a := b.arena
	for {
		old := a.lost.Load()
		b.lostNext = old
		if a.lost.CompareAndSwap(old, b) {
			return
		}
	}
}

// reclaim takes back the lost blocks, once the work that may use them is
// done: a lost block was dropped at an unknown point of its streams' work,
// so it is reused only after a.settle succeeded, and then for the legacy
// default stream. Until then (a stream capture in progress, a broken
// context) the blocks count as used.
func (a *arena) reclaim() error {
	if a.lost.Load() == nil {
		return nil
	}
	b := a.lost.Swap(nil)
	if b == nil {
		return nil
	}
	if a.settle != nil {
		if err := a.settle(); err != nil {
			// Keep them lost, for a later try: reusing them now could
			// hand out memory in use.
			for b != nil {
				next := b.lostNext
				b.lose()
				b = next
			}
			return nil
		}
	}
	if memRecording.Load() {
		for l := b; l != nil; l = l.lostNext {
			forgetBlock(l)
		}
	}
	var chunks []*chunk
	a.mu.Lock()
	for b != nil {
		next := b.lostNext
		b.lostNext = nil
		b.stream = nil // settled: the legacy default stream's to reuse
		if c := a.releaseLocked(b); c != nil {
			chunks = append(chunks, c)
		}
		b = next
	}
	a.mu.Unlock()
	for _, c := range chunks {
		c.release()
	}
	return nil
}

// FreeAllBlocks gives the chunks that are wholly free back to the source.
func (a *arena) FreeAllBlocks() error { return a.freeBlocks(nil, true) }

// freeBlocks gives back the chunks that are wholly free and kept for
// stream s, or, when all is set, for any stream. In a stream callback it
// returns ErrInCallback and gives back nothing.
func (a *arena) freeBlocks(s *Stream, all bool) error {
	if a == nil {
		return nilError("pool")
	}
	if inCallback() {
		return ErrInCallback
	}
	if err := a.reclaim(); err != nil {
		return err
	}
	var chunks []*chunk
	a.mu.Lock()
	for fs, f := range a.streams {
		if !all && fs != s {
			continue
		}
		for _, bin := range f.bins {
			for _, b := range slices.Clone(bin) {
				if b.prev == nil && b.next == nil {
					a.removeLocked(b)
					a.total -= b.size
					chunks = append(chunks, b.chunk)
				}
			}
		}
	}
	a.mu.Unlock()
	var errs []error
	for _, c := range chunks {
		errs = append(errs, c.release())
	}
	return join(errs...)
}

// StopHolding gives back the memory held free, and from now on gives
// back each chunk as soon as it is wholly free (PyCUDA's stop_holding).
func (a *arena) StopHolding() error {
	if a == nil {
		return nilError("pool")
	}
	if inCallback() {
		return ErrInCallback
	}
	a.mu.Lock()
	a.noHold = true
	a.mu.Unlock()
	return a.FreeAllBlocks()
}

// stat returns f() under the lock; 0 for a nil arena (a nil pool's).
func (a *arena) stat(f func() int) int {
	if a == nil {
		return 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return f()
}

// UsedBytes returns the bytes in use, counted in rounded sizes. Memory
// dropped without Free counts until the pool has taken it back.
func (a *arena) UsedBytes() int { return a.stat(func() int { return a.used }) }

// RequestedBytes returns the bytes in use as they were asked for; UsedBytes
// less RequestedBytes is lost to rounding.
func (a *arena) RequestedBytes() int { return a.stat(func() int { return a.requested }) }

// FreeBytes returns the bytes held free for reuse.
func (a *arena) FreeBytes() int { return a.stat(func() int { return a.total - a.used }) }

// TotalBytes returns the bytes held: UsedBytes plus FreeBytes.
func (a *arena) TotalBytes() int { return a.stat(func() int { return a.total }) }

// NFreeBlocks returns the number of free blocks held.
func (a *arena) NFreeBlocks() int { return a.stat(func() int { return a.nfree }) }

// ActiveBlocks returns the number of blocks in use.
func (a *arena) ActiveBlocks() int { return a.stat(func() int { return a.active }) }

// SetLimit limits the bytes the pool holds (TotalBytes) to n; 0 removes
// the limit. An allocation that would pass it returns an error matching
// cudart.ErrorMemoryAllocation. The limit does not free what is held. A
// negative n is an error.
func (a *arena) SetLimit(n int) error {
	if a == nil {
		return nilError("pool")
	}
	if n < 0 {
		return invalid("limit %d: it must not be negative", n)
	}
	a.mu.Lock()
	a.limit = n
	a.mu.Unlock()
	return nil
}

// Limit returns the limit SetLimit set, 0 for none.
func (a *arena) Limit() int { return a.stat(func() int { return a.limit }) }

// stats returns the arena's statistics at one moment, for an
// out-of-memory report: all but the pool's name and device.
func (a *arena) stats() PoolStats {
	a.mu.Lock()
	defer a.mu.Unlock()
	largest := 0
	for _, f := range a.streams {
		for i := len(f.bins) - 1; i >= 0; i-- {
			if len(f.bins[i]) > 0 {
				largest = max(largest, f.sizes[i])
				break
			}
		}
	}
	return PoolStats{UsedBytes: a.used, FreeBytes: a.total - a.used, TotalBytes: a.total,
		ActiveBlocks: a.active, NFreeBlocks: a.nfree, LargestFreeBlock: largest, Limit: a.limit}
}
