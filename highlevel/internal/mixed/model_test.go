package mixed

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/gocuda/cuda/highlevel"
	"github.com/gocuda/cuda/internal/randomtest"
)

// The model: every block the goroutines share has a copy of its bytes on
// the host, which every read is compared with.
//
// Each write (a copy, a kernel, a graph) has an id, and puts at byte o of
// its block the byte o%4 of patternWord(id, o/4), little-endian: a word
// read back that is wrong says which write it came from (the id's low 12
// bits) and for which word of a block (the low 20 bits), so a mismatch
// tells stale data of the same block from another block's (a pool that
// handed out memory still in use) and from garbage.

// patternWord is the word write w puts at word k of a block.
func patternWord(w uint32, k int) uint32 { return (w&0xFFF)<<20 | uint32(k)&0xFFFFF }

// patternBytes returns the bytes write w puts at bytes off to off+n-1 of a
// block.
func patternBytes(w uint32, off, n int) []byte {
	b := make([]byte, n)
	for i := 0; i < n; {
		o := off + i
		v := patternWord(w, o>>2)
		if o&3 == 0 && n-i >= 4 {
			binary.LittleEndian.PutUint32(b[i:], v)
			i += 4
			continue
		}
		b[i] = byte(v >> (8 * (o & 3)))
		i++
	}
	return b
}

// A span is bytes lo to hi-1 of a block.
type span struct{ lo, hi int }

// A writeRecord is what the write log keeps of a write, for the messages
// of mismatches.
type writeRecord struct {
	id         uint32
	block, gen int
	span
	how string
	op  string
}

// A writeLog holds the last 4096 writes, by id, so that a mismatch can
// name the write its bytes came from.
type writeLog struct {
	mu   sync.Mutex
	next uint32
	recs [4096]writeRecord
}

// begin returns the id of a new write of s of block b (generation gen).
func (l *writeLog) begin(b, gen int, s span, how, op string) uint32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.next++
	l.recs[l.next&0xFFF] = writeRecord{id: l.next, block: b, gen: gen, span: s, how: how, op: op}
	return l.next
}

// explain says which write's word v, read at word k, looks like.
func (l *writeLog) explain(v uint32, k int) string {
	id, at := v>>20, int(v&0xFFFFF)
	l.mu.Lock()
	r := l.recs[id]
	l.mu.Unlock()
	if r.id == 0 {
		return fmt.Sprintf("word %d of a write with id %d mod 4096, of which the log knows none", at, id)
	}
	where := "inside"
	if 4*at < r.lo || 4*at >= r.hi {
		where = "outside"
	}
	s := fmt.Sprintf("word %d as write %d (%s, %s) put it, %s that write's bytes %d..%d of block %d (generation %d)",
		at, r.id, r.how, r.op, where, r.lo, r.hi-1, r.block, r.gen)
	if at != k {
		s += fmt.Sprintf("; it was read at word %d", k)
	}
	return s
}

// A block is memory of 2 to 4 MiB the goroutines share, one at a time
// under mu, with its model: want holds its bytes but those of unknown,
// spans a write that failed may or may not have changed.
type block struct {
	id  int
	gen int // how many blocks the slot held before this one
	mu  sync.Mutex

	how   string // its allocator
	p     highlevel.MemoryPointer
	arr   *highlevel.Array[uint32] // the Array that owns it, or nil
	async bool                     // from the MemoryAsyncPool: ordered on the legacy default stream
	pool  bool                     // a block of the program's MemoryPool (counted when dropped)
	n     int                      // bytes, a multiple of 8

	want    []byte
	unknown []span // sorted, disjoint
	writes  int    // writes that went through
	failed  int    // writes that failed
	refused int    // writes refused before they did anything
	history []string
}

// reset makes b's slot hold a new block of n bytes, from how, whose model
// knows nothing yet; b's lock is held.
func (b *block) reset(how string, n int) {
	b.how, b.n = how, n
	b.p, b.arr, b.async, b.pool = highlevel.MemoryPointer{}, nil, false, false
	b.want, b.unknown = make([]byte, n), []span{{0, n}}
	b.writes, b.failed, b.refused, b.history = 0, 0, 0, nil
}

// at returns a pointer to byte off of b.
func (b *block) at(off int) highlevel.MemoryPointer {
	p, err := b.p.Add(off)
	if err != nil {
		panic(err) // the spans keep off within the block
	}
	return p
}

// log adds an entry to b's history, of which the last 16 are kept.
func (b *block) log(format string, args ...any) {
	if len(b.history) == 16 {
		b.history = slices.Delete(b.history, 0, 1)
	}
	b.history = append(b.history, fmt.Sprintf(format, args...))
}

func (b *block) describe() string {
	return fmt.Sprintf("block %d (generation %d, %d bytes from %s)", b.id, b.gen, b.n, b.how)
}

// wrote sets the model of s to data.
func (b *block) wrote(s span, data []byte) {
	copy(b.want[s.lo:s.hi], data)
	b.unknown = subtract(b.unknown, s)
	b.writes++
}

// lost makes s unknown: a write to it failed part way, or may have.
func (b *block) lost(s span) {
	b.unknown = append(subtract(b.unknown, s), s)
	slices.SortFunc(b.unknown, func(x, y span) int { return x.lo - y.lo })
	b.failed++
}

// subtract returns the spans of u less s.
func subtract(u []span, s span) []span {
	var out []span
	for _, x := range u {
		if x.hi <= s.lo || x.lo >= s.hi {
			out = append(out, x)
			continue
		}
		if x.lo < s.lo {
			out = append(out, span{x.lo, s.lo})
		}
		if x.hi > s.hi {
			out = append(out, span{s.hi, x.hi})
		}
	}
	return out
}

// known returns the spans of s whose bytes the model knows.
func (b *block) known(s span) []span {
	out := []span{s}
	for _, u := range b.unknown {
		out = subtract(out, u)
	}
	return out
}

// compare checks got, bytes off to off+len(got)-1 of b, against the model,
// and fails the operation at the first difference.
func (b *block) compare(o *op, off int, got []byte, how string) {
	for _, s := range b.known(span{off, off + len(got)}) {
		g, want := got[s.lo-off:s.hi-off], b.want[s.lo:s.hi]
		if bytes.Equal(g, want) {
			continue
		}
		i := 0
		for g[i] == want[i] {
			i++
		}
		bad := 0
		for j := range g {
			if g[j] != want[j] {
				bad++
			}
		}
		at := s.lo + i
		msg := fmt.Sprintf("%s of bytes %d..%d of %s: byte %d is %#02x, want %#02x; %d of the %d bytes %d..%d differ",
			how, off, off+len(got)-1, b.describe(), at, g[i], want[i], bad, s.hi-s.lo, s.lo, s.hi-1)
		// The whole word around the first difference, where it was read.
		if w := at &^ 3; w >= off && w+4 <= off+len(got) {
			v := binary.LittleEndian.Uint32(got[w-off:])
			msg += fmt.Sprintf("; its word reads %#08x, want %#08x: %s", v, binary.LittleEndian.Uint32(b.want[w:]), o.writes.explain(v, w/4))
		}
		msg += fmt.Sprintf("; the block had %d writes, %d failed (its bytes unknown since), %d refused; unknown spans %v; its last operations:\n\t%s",
			b.writes, b.failed, b.refused, b.unknown, strings.Join(b.history, "\n\t"))
		o.fail("%s", msg)
		return
	}
}

// A writeOutcome is what a write that returned an error did to its span.
type writeOutcome int

const (
	wroteNothing writeOutcome = iota // refused before it did anything
	wroteUnknown                     // it may have written part of the span
)

// outcome says what a write that returned err did. The package promises
// that a refusal (ErrClosed, ErrCapturing, ErrInvalid, ErrNil, ErrFreed)
// changed nothing; a copy refused part way through says so with
// ErrPartialCopy (partialCopy), and its span is unknown, as it is after
// any other error.
func outcome(err error) writeOutcome {
	if partialCopy(err) {
		return wroteUnknown
	}
	for _, part := range randomtest.Parts(err) {
		refused := false
		for _, s := range []error{highlevel.ErrClosed, highlevel.ErrCapturing, highlevel.ErrInvalid, highlevel.ErrNil, highlevel.ErrFreed} {
			if errors.Is(part, s) {
				refused = true
			}
		}
		if !refused {
			return wroteUnknown
		}
	}
	return wroteNothing
}

// partialCopy reports whether err says a copy changed part of its
// destination before it failed (highlevel.ErrPartialCopy). Any other
// refusal of a copy changed nothing, as the package promises.
func partialCopy(err error) bool {
	return errors.Is(err, highlevel.ErrPartialCopy)
}

// words returns the little-endian words of b, whose length is a multiple
// of 4.
func words(b []byte) []uint32 {
	w := make([]uint32, len(b)/4)
	for i := range w {
		w[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return w
}

// dwords returns the little-endian 8-byte words of b, whose length is a
// multiple of 8.
func dwords(b []byte) []uint64 {
	w := make([]uint64, len(b)/8)
	for i := range w {
		w[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	return w
}

// wordBytes returns the bytes of little-endian words w.
func wordBytes(w []uint32) []byte {
	b := make([]byte, 4*len(w))
	for i, v := range w {
		binary.LittleEndian.PutUint32(b[4*i:], v)
	}
	return b
}

// dwordBytes returns the bytes of little-endian 8-byte words w.
func dwordBytes(w []uint64) []byte {
	b := make([]byte, 8*len(w))
	for i, v := range w {
		binary.LittleEndian.PutUint64(b[8*i:], v)
	}
	return b
}
