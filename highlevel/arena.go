package highlevel

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gocuda/cuda/cudart"
)

// arena is the bookkeeping of a caching allocator, shared by MemoryPool and
// PinnedMemoryPool; it calls CUDA only through its source, and only to grow
// or to give memory back.
//
// Sizes are rounded up to binSize. Free blocks are kept per stream, in bins
// by size; an allocation takes the smallest free block that fits (best
// fit) and splits off the rest as a free block. A freed block merges with
// free neighbours of the same upstream allocation. When no free block fits,
// the arena allocates the rounded size from its source.
type arena struct {
	source source

	mu        sync.Mutex
	streams   map[cudart.Stream]*freeBins
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
	stream     cudart.Stream
	isFree     bool
	index      int    // in its bin, while free
	lostNext   *block // the lost stack's link
}

// freeBins are one stream's free blocks.
type freeBins struct {
	sizes []int // sizes of the bins, ascending; some may be empty
	bins  map[int][]*block
}

func newArena(src source) *arena {
	return &arena{source: src, streams: make(map[cudart.Stream]*freeBins)}
}

func roundSize(n int) int { return (n + binSize - 1) / binSize * binSize }

// alloc returns a block of at least size bytes for stream s.
func (a *arena) alloc(size int, s cudart.Stream) (*block, error) {
	if size <= 0 {
		return nil, fmt.Errorf("highlevel: allocation of %d bytes: size must be positive", size)
	}
	n := roundSize(size)
	a.mu.Lock()
	a.reclaimLocked()
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
	return b, nil
}

// takeLocked takes the best-fitting free block of stream s, splitting off
// what is left over.
func (a *arena) takeLocked(n int, s cudart.Stream) *block {
	f := a.streams[s]
	if f == nil {
		return nil
	}
	i, _ := slices.BinarySearch(f.sizes, n)
	for i < len(f.sizes) && len(f.bins[f.sizes[i]]) == 0 {
		delete(f.bins, f.sizes[i])
		f.sizes = slices.Delete(f.sizes, i, i+1)
	}
	if i == len(f.sizes) {
		return nil
	}
	bin := f.bins[f.sizes[i]]
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
func (a *arena) grow(n int, s cudart.Stream) (*block, error) {
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

func (a *arena) allocChunk(n int) (chunk, error) {
	a.mu.Lock()
	if a.limit > 0 && a.total+n > a.limit {
		total, limit := a.total, a.limit
		a.mu.Unlock()
		return chunk{}, fmt.Errorf("highlevel: memory pool: %d more bytes would pass its limit, %d bytes, with %d held: %w", n, limit, total, cudart.ErrorMemoryAllocation)
	}
	a.total += n // reserved while the source allocates
	a.mu.Unlock()
	c, err := a.source(n)
	if err != nil {
		a.mu.Lock()
		a.total -= n
		a.mu.Unlock()
		return chunk{}, fmt.Errorf("highlevel: memory pool: allocating %d bytes: %w", n, err)
	}
	return c, nil
}

// release gives b back: it merges with its free neighbours and is kept for
// reuse on its stream, or, when the arena stopped holding and the block is
// a whole chunk, given back to the source.
func (a *arena) release(b *block) error {
	a.mu.Lock()
	a.reclaimLocked()
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
	b.isFree, b.requested = true, 0
	if n := b.next; n != nil && n.isFree {
		a.removeLocked(n)
		absorb(b, n)
	}
	if p := b.prev; p != nil && p.isFree {
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

// absorb merges n, the block after b in their chunk, into b.
func absorb(b, n *block) {
	b.size += n.size
	b.next = n.next
	if n.next != nil {
		n.next.prev = b
	}
}

func (a *arena) insertLocked(b *block) {
	b.isFree = true
	f := a.streams[b.stream]
	if f == nil {
		f = &freeBins{bins: make(map[int][]*block)}
		a.streams[b.stream] = f
	}
	bin, ok := f.bins[b.size]
	if !ok {
		i, _ := slices.BinarySearch(f.sizes, b.size)
		f.sizes = slices.Insert(f.sizes, i, b.size)
	}
	b.index = len(bin)
	f.bins[b.size] = append(bin, b)
	a.nfree++
}

func (a *arena) removeLocked(b *block) {
	f := a.streams[b.stream]
	bin := f.bins[b.size]
	last := bin[len(bin)-1]
	bin[b.index], last.index = last, b.index
	bin[len(bin)-1] = nil
	bin = bin[:len(bin)-1]
	f.bins[b.size] = bin // an empty bin stays listed until takeLocked passes it
	a.nfree--
}

// lose is the cleanup of a block's owner dropped without being freed: it
// pushes the block on the lost stack, without locking and without calling
// CUDA; the next alloc or release of the arena takes it back.
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

// reclaimLocked takes back the lost blocks.
func (a *arena) reclaimLocked() {
	if a.lost.Load() == nil {
		return
	}
	for b := a.lost.Swap(nil); b != nil; {
		next := b.lostNext
		b.lostNext = nil
		if c := a.releaseLocked(b); c != nil {
			c.release() // a chunk of a pool that stopped holding; rare
		}
		b = next
	}
}

// FreeAllBlocks gives the chunks that are wholly free back to the source.
func (a *arena) FreeAllBlocks() error {
	var chunks []*chunk
	a.mu.Lock()
	a.reclaimLocked()
	for _, f := range a.streams {
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
	return errors.Join(errs...)
}

// StopHolding gives back the memory held free, and from now on gives
// back each chunk as soon as it is wholly free (PyCUDA's stop_holding).
func (a *arena) StopHolding() error {
	a.mu.Lock()
	a.noHold = true
	a.mu.Unlock()
	return a.FreeAllBlocks()
}

func (a *arena) stat(f func() int) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.reclaimLocked()
	return f()
}

// UsedBytes returns the bytes in use, counted in rounded sizes.
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
// cudart.ErrorMemoryAllocation. The limit does not free what is held.
func (a *arena) SetLimit(n int) {
	a.mu.Lock()
	a.limit = max(n, 0)
	a.mu.Unlock()
}

// Limit returns the limit SetLimit set, 0 for none.
func (a *arena) Limit() int { return a.stat(func() int { return a.limit }) }
