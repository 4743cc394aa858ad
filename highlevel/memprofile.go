package highlevel

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"
	"unsafe"
	"weak"

	"github.com/google/pprof/profile"
)

// This file holds the allocation recorder (StartMemoryProfile), its two
// outputs (WriteMemoryProfile, WriteMemoryTimeline), the labels of
// LabelAllocator, and the out-of-memory report (OutOfMemoryError's Pools,
// DeviceFree and Holders, and SetOutOfMemoryHook).
//
// The allocation paths call in here only behind memRecording.Load(): while
// the recorder is off, an allocation and a free cost one atomic load more.
// The recorder takes its own lock, memProfile.mu, never while holding one
// of the pools'.

// memRecording is set while the recorder records.
var memRecording atomic.Bool

// memProfile is the recorder's state.
var memProfile memRecorder

// A memRecorder is the recorder's state, guarded by mu.
type memRecorder struct {
	mu    sync.Mutex
	start int64 // when recording began, Unix nanoseconds
	// list holds the records of the allocations not yet freed: a ring
	// through a sentinel, so that a free unlinks its record in constant
	// time.
	list memRecord
	// byAddr finds the records of memory the driver allocated directly
	// (Device.Alloc, Managed, MemoryAsyncPool, AllocPinnedUnpooled) by
	// address, which is unique among live allocations. A pool's block
	// holds its record itself (block.rec).
	byAddr map[uintptr]*memRecord
	// stacks interns the stacks recorded, keyed by their PCs' bytes.
	stacks map[string]*memStack
	// events is the timeline's ring of the latest len(events) events;
	// nevents counts the events appended since it was made, so that the
	// event numbered n is events[n%len(events)] while nevents-n <=
	// len(events). dropped counts the events dropped since recording
	// began.
	events  []memEvent
	nevents uint64
	dropped uint64
}

// memStackDepth is the most frames a recorded stack keeps.
const memStackDepth = 64

// defaultMemEvents is how many events the timeline keeps by default.
const defaultMemEvents = 100_000

// A memKind is the allocator of a record.
type memKind uint8

const (
	memDevice     memKind = iota // Device.Alloc: cuMemAlloc
	memManaged                   // Managed(d).Alloc: cuMemAllocManaged
	memPool                      // a MemoryPool's block
	memAsyncPool                 // MemoryAsyncPool: cuMemAllocFromPoolAsync
	memPinned                    // AllocPinnedUnpooled: cuMemHostAlloc
	memPinnedPool                // a PinnedMemoryPool's block
)

// memKindNames are the values of the "allocator" label: the allocator's
// type, or the function for unpooled pinned memory.
var memKindNames = [...]string{
	memDevice:     "Device",
	memManaged:    "Managed",
	memPool:       "MemoryPool",
	memAsyncPool:  "MemoryAsyncPool",
	memPinned:     "AllocPinnedUnpooled",
	memPinnedPool: "PinnedMemoryPool",
}

func (k memKind) String() string { return memKindNames[k] }

// A memStack is a recorded stack, interned: records of one call site
// share it.
type memStack struct {
	pcs []uintptr
}

// A memRecord is one allocation the recorder saw.
type memRecord struct {
	addr    uintptr
	size    int // as requested
	dev     Device
	stream  uintptr // the stream's handle: 0 for none and the legacy default stream
	kind    memKind
	segment bool // a pool's memory from its upstream allocator, not in the profile
	listed  bool // in memProfile.list: not freed, and of the current recording
	ns      int64
	event   uint64 // the number of its alloc event
	stack   *memStack
	labels  []string // key, value, ...: replaced, never changed in place
	// free and total are, in the record of an oom event, what
	// cuMemGetInfo said (OutOfMemoryError.DeviceFree, DeviceTotal).
	free, total int
	prev        *memRecord
	next        *memRecord
}

// A memAction is what a timeline event says happened.
type memAction uint8

const (
	actAlloc memAction = iota
	actFree
	actSegmentAlloc
	actSegmentFree
	actOOM
)

var memActionNames = [...]string{
	actAlloc:        "alloc",
	actFree:         "free",
	actSegmentAlloc: "segment_alloc",
	actSegmentFree:  "segment_free",
	actOOM:          "oom",
}

// A memEvent is one event of the timeline. Its record's fields but labels
// do not change once it is listed, so an event and its record together
// say what happened.
type memEvent struct {
	ns  int64
	act memAction
	rec *memRecord
}

// MemoryProfileOptions are the options of StartMemoryProfile. A nil
// *MemoryProfileOptions is the zero value: the defaults.
type MemoryProfileOptions struct {
	// Events is how many of the latest allocations and frees
	// WriteMemoryTimeline can write: 0 is 100,000, a negative number none.
	// An event takes 24 bytes, and keeps its allocation's record (about
	// 150 bytes, the stack shared) until it is dropped.
	Events int
}

// StartMemoryProfile starts recording the allocations of the package's
// allocators: Device (Device.Alloc and AllocArray(dev, n)), Managed,
// MemoryPool, MemoryAsyncPool (and AllocAsync), PinnedMemoryPool (and
// AllocPinned) and AllocPinnedUnpooled. For each allocation not yet freed
// the recorder keeps its size as requested, device, allocator, stream, the
// labels of LabelAllocator, the time and the allocating goroutine's stack
// (64 frames); a free, or the package taking back memory dropped without
// Free, removes it. WriteMemoryProfile writes what is held as a pprof
// profile, WriteMemoryTimeline the latest events, and an
// *OutOfMemoryError names the largest holders.
//
// A pool's own allocations from its upstream allocator, the chunks it
// carves its blocks from and caches, are segments: the timeline has them,
// the profile and the holders do not, so that no memory counts twice. The
// memory a pool holds free is in the out-of-memory report (Pools).
//
// Recording is off by default, and then costs an allocation and a free one
// atomic load. On, an allocation costs a stack (runtime.Callers) and a
// lock more, and a free a lock: together 1 to 2 microseconds (see
// BenchmarkMemoryProfile and docs/memory-profiling.md). A call while recording keeps what was recorded
// and applies opts; allocations made before the first call are not
// recorded, nor are their frees.
func StartMemoryProfile(opts *MemoryProfileOptions) {
	n := defaultMemEvents
	if opts != nil && opts.Events != 0 {
		n = max(opts.Events, 0)
	}
	mp := &memProfile
	mp.mu.Lock()
	defer mp.mu.Unlock()
	if !memRecording.Load() {
		mp.start = time.Now().UnixNano()
		mp.list.prev, mp.list.next = &mp.list, &mp.list
		mp.byAddr = make(map[uintptr]*memRecord)
		mp.stacks = make(map[string]*memStack)
		mp.events, mp.nevents, mp.dropped = nil, 0, 0
	}
	if n != len(mp.events) {
		// Keep the latest events, renumbered from 0; records keep the
		// numbers of their alloc events only to patch them (segment),
		// which an old number no longer finds.
		old := mp.eventsLocked()
		if len(old) > n {
			mp.dropped += uint64(len(old) - n)
			old = old[len(old)-n:]
		}
		mp.events = make([]memEvent, n)
		copy(mp.events, old)
		mp.nevents = uint64(len(old))
		for r := mp.list.next; r != &mp.list; r = r.next {
			r.event = ^uint64(0)
		}
	}
	memRecording.Store(true)
}

// StopMemoryProfile stops recording and drops what was recorded: write the
// profile and the timeline first. It does nothing while not recording.
func StopMemoryProfile() {
	mp := &memProfile
	mp.mu.Lock()
	defer mp.mu.Unlock()
	if !memRecording.Load() {
		return
	}
	memRecording.Store(false)
	for r := mp.list.next; r != &mp.list; {
		next := r.next
		r.listed, r.prev, r.next = false, nil, nil
		r = next
	}
	mp.list.prev, mp.list.next = nil, nil
	mp.byAddr, mp.stacks, mp.events, mp.nevents, mp.dropped = nil, nil, nil, 0, 0
}

// eventsLocked returns the events kept, oldest first.
func (mp *memRecorder) eventsLocked() []memEvent {
	n := uint64(len(mp.events))
	if n == 0 {
		return nil
	}
	if mp.nevents <= n {
		return slices.Clone(mp.events[:mp.nevents])
	}
	i := mp.nevents % n
	return append(slices.Clone(mp.events[i:]), mp.events[:i]...)
}

// appendEventLocked appends an event, dropping the oldest where the ring
// is full, and returns its number; ^0 where no events are kept.
func (mp *memRecorder) appendEventLocked(ns int64, act memAction, r *memRecord) uint64 {
	size := uint64(len(mp.events))
	if size == 0 {
		mp.dropped++
		return ^uint64(0)
	}
	n := mp.nevents
	if n >= size {
		mp.dropped++
	}
	mp.events[n%size] = memEvent{ns, act, r}
	mp.nevents++
	return n
}

// stackLocked interns the stack in pcs.
func (mp *memRecorder) stackLocked(pcs []uintptr) *memStack {
	if len(pcs) == 0 {
		return nil
	}
	key := unsafe.String((*byte)(unsafe.Pointer(&pcs[0])), len(pcs)*int(unsafe.Sizeof(pcs[0])))
	if s := mp.stacks[key]; s != nil {
		return s
	}
	s := &memStack{pcs: slices.Clone(pcs)}
	mp.stacks[string(unsafe.Slice((*byte)(unsafe.Pointer(&s.pcs[0])), len(key)))] = s
	return s
}

// record records an allocation at addr, with the allocating goroutine's
// stack, and its alloc event: in b, a block of a pool, or, where b is
// nil, by address. It does nothing where the recorder stopped meanwhile.
func record(addr unsafe.Pointer, size int, d Device, s *Stream, kind memKind, b *block) {
	var pcs [memStackDepth]uintptr
	n := runtime.Callers(3, pcs[:]) // from record's caller's caller
	mp := &memProfile
	mp.mu.Lock()
	defer mp.mu.Unlock()
	if !memRecording.Load() {
		return
	}
	ns := time.Now().UnixNano() // under the lock: the events' times ascend
	r := &memRecord{addr: uintptr(addr), size: size, dev: d, stream: streamID(s), kind: kind, ns: ns, stack: mp.stackLocked(pcs[:n])}
	r.listed = true
	r.prev, r.next = mp.list.prev, &mp.list
	r.prev.next, mp.list.prev = r, r
	r.event = mp.appendEventLocked(ns, actAlloc, r)
	if b != nil {
		b.rec = r
	} else {
		mp.byAddr[r.addr] = r
	}
}

// unlistLocked removes r, freed, from the list, with its free event.
func (mp *memRecorder) unlistLocked(r *memRecord) {
	r.prev.next, r.next.prev = r.next, r.prev
	r.prev, r.next, r.listed = nil, nil, false
	act := actFree
	if r.segment {
		act = actSegmentFree
	}
	mp.appendEventLocked(time.Now().UnixNano(), act, r)
}

// recordAddr records memory the driver allocated directly at p.
func recordAddr(p unsafe.Pointer, size int, d Device, s *Stream, kind memKind) {
	record(p, size, d, s, kind, nil)
}

// forgetAddr removes the record of memory at p, which is about to be given
// back to the driver.
func forgetAddr(p unsafe.Pointer) {
	mp := &memProfile
	mp.mu.Lock()
	if r := mp.byAddr[uintptr(p)]; r != nil {
		delete(mp.byAddr, uintptr(p))
		if r.listed {
			mp.unlistLocked(r)
		}
	}
	mp.mu.Unlock()
}

// recordBlock records b, a block of a's taken for size bytes on s.
func (a *arena) recordBlock(b *block, size int, s *Stream) {
	kind, d := memPool, b.chunk.dev
	if a.dev == CPUDevice {
		kind, d = memPinnedPool, CPUDevice
	}
	record(b.ptr, size, d, s, kind, b)
}

// forgetBlock removes the record of b, which is about to be given back to
// its arena.
func forgetBlock(b *block) {
	mp := &memProfile
	mp.mu.Lock()
	if r := b.rec; r != nil {
		b.rec = nil
		if r.listed {
			mp.unlistLocked(r)
		}
	}
	mp.mu.Unlock()
}

// recordOfLocked returns the record of the memory p points to the start
// of: its block's, or that of its address; nil for none.
func recordOfLocked(p MemoryPointer) *memRecord {
	if p.mem == nil || p.off != 0 {
		return nil
	}
	var r *memRecord
	switch o := p.mem.owner.(type) {
	case *block:
		r = o.rec
	case deviceOwner, *asyncOwner:
		r = memProfile.byAddr[uintptr(p.mem.ptr)]
	}
	if r == nil || !r.listed {
		return nil
	}
	return r
}

// recordSegment marks the record of p, memory a pool got from its
// upstream allocator, as a segment (segmentLocked).
func recordSegment(p MemoryPointer) {
	mp := &memProfile
	mp.mu.Lock()
	defer mp.mu.Unlock()
	mp.segmentLocked(recordOfLocked(p))
}

// recordPinnedSegment marks the record of pinned memory m, a pinned pool's
// chunk, as a segment.
func recordPinnedSegment(m *PinnedMemory) {
	mp := &memProfile
	mp.mu.Lock()
	defer mp.mu.Unlock()
	if mp.byAddr != nil {
		mp.segmentLocked(mp.byAddr[uintptr(m.ptr)])
	}
}

// segmentLocked marks r as a segment: its alloc event, while the timeline
// keeps it, becomes a segment_alloc, and it leaves the profile.
func (mp *memRecorder) segmentLocked(r *memRecord) {
	if r == nil || !r.listed || r.segment {
		return
	}
	r.segment = true
	if n := uint64(len(mp.events)); n > 0 && r.event < mp.nevents && mp.nevents-r.event <= n {
		if e := &mp.events[r.event%n]; e.rec == r && e.act == actAlloc {
			e.act = actSegmentAlloc
		}
	}
}

// streamID is what a record keeps of stream s: its handle.
func streamID(s *Stream) uintptr {
	if s == nil {
		return 0
	}
	return uintptr(s.h)
}

// streamLabel names the stream of handle h in profiles.
func streamLabel(h uintptr) string {
	switch h {
	case 0, 1: // CU_STREAM_LEGACY
		return "legacy"
	case 2: // CU_STREAM_PER_THREAD
		return "per-thread"
	}
	return "0x" + strconv.FormatUint(uint64(h), 16)
}

// deviceLabel names d in profiles and reports: "device 0", or "host" for
// pinned memory.
func deviceLabel(d Device) string {
	if d == CPUDevice {
		return "host"
	}
	return d.String()
}

// A LabeledAllocator is an Allocator and a StreamAllocator whose
// allocations carry labels in memory profiles; LabelAllocator makes one.
type LabeledAllocator interface {
	Allocator
	StreamAllocator
}

// LabelAllocator returns an allocator that allocates from a and labels
// each allocation, in the memory profile and timeline (StartMemoryProfile),
// with the labels ctx carries: those of runtime/pprof's WithLabels and Do,
// which label CPU profiles too. A nil a is the default allocator (Alloc)
// and, for AllocAsync, the default memory pool of the stream's device (the
// function AllocAsync); AllocAsync of an a that is no StreamAllocator
// returns an error wrapping ErrInvalid. The labels are those of ctx when
// LabelAllocator is called.
//
//	ctx := pprof.WithLabels(ctx, pprof.Labels("layer", "attention"))
//	x, err := highlevel.AllocArray[float32](highlevel.LabelAllocator(ctx, pool), n)
//
// Labels travel with the allocator, not the goroutine: Go has no
// goroutine-local state, and the allocations name their allocator (see
// SetAllocator), so an allocator is where labels can go. While the
// recorder is off, a LabeledAllocator costs an allocation one atomic load.
func LabelAllocator(ctx context.Context, a Allocator) LabeledAllocator {
	var labels []string
	if ctx != nil {
		pprof.ForLabels(ctx, func(k, v string) bool {
			labels = append(labels, k, v)
			return true
		})
	}
	return labeledAllocator{a, labels}
}

// labeledAllocator is the allocator LabelAllocator returns.
type labeledAllocator struct {
	a      Allocator
	labels []string
}

func (l labeledAllocator) Alloc(size int) (MemoryPointer, error) {
	var p MemoryPointer
	var err error
	if l.a == nil {
		p, err = Alloc(size)
	} else {
		p, err = l.a.Alloc(size)
	}
	if err != nil {
		noteOutOfMemory(err)
		return p, err
	}
	l.label(p)
	return p, nil
}

func (l labeledAllocator) AllocAsync(s *Stream, size int) (MemoryPointer, error) {
	var p MemoryPointer
	var err error
	switch a := l.a.(type) {
	case nil:
		p, err = AllocAsync(s, size)
	case StreamAllocator:
		p, err = a.AllocAsync(s, size)
	default:
		return MemoryPointer{}, opErr(fmt.Sprintf("alloc %d bytes async", size),
			invalid("allocator %T allocates for no stream", l.a))
	}
	if err != nil {
		noteOutOfMemory(err)
		return p, err
	}
	l.label(p)
	return p, nil
}

// allocUnreported allocates for a pool upstream of which l is.
func (l labeledAllocator) allocUnreported(size int) (MemoryPointer, error) {
	if u, ok := l.a.(unreportedAllocator); ok {
		return u.allocUnreported(size)
	}
	return l.Alloc(size)
}

// Device returns the device of the allocator labeled, where it has one.
func (l labeledAllocator) Device() Device { return allocatorDevice(l.a) }

// label sets l's labels on the record of p.
func (l labeledAllocator) label(p MemoryPointer) {
	if len(l.labels) == 0 || !memRecording.Load() {
		return
	}
	memProfile.mu.Lock()
	if r := recordOfLocked(p); r != nil {
		r.labels = l.labels
	}
	memProfile.mu.Unlock()
}

// An unreportedAllocator allocates without the out-of-memory report, for
// a pool that tries again after an out-of-memory error of its upstream
// allocator: the pool's own error is reported, once.
type unreportedAllocator interface {
	allocUnreported(size int) (MemoryPointer, error)
}

// allocUpstream allocates size bytes from a pool's upstream allocator a,
// unreported where a allows.
func allocUpstream(a Allocator, size int) (MemoryPointer, error) {
	if u, ok := a.(unreportedAllocator); ok {
		return u.allocUnreported(size)
	}
	return a.Alloc(size)
}

// WriteMemoryProfile writes the allocations recorded and not yet freed
// (StartMemoryProfile) to w in pprof's format (a gzipped profile.proto), as
// runtime/pprof's heap profile does for Go memory, so that
//
//	go tool pprof -http=: gpu.pprof
//
// draws the GPU (and pinned) memory held by stack as a flame graph. Its
// sample types are inuse_space (bytes, as requested: the default) and
// inuse_objects (allocations); each sample is one stack with the labels
// device ("device 0", or "host" for pinned memory), allocator (Device,
// Managed, MemoryPool, MemoryAsyncPool, PinnedMemoryPool,
// AllocPinnedUnpooled), stream (for a pool's and stream-ordered memory:
// "legacy", "per-thread" or the handle) and those of LabelAllocator, and
// the numeric label bytes, the size of its allocations (pprof -tags). The
// stacks leave out the package's unexported functions at their innermost
// end: they end with the call into the package. While not recording, the
// profile is empty.
func WriteMemoryProfile(w io.Writer) error {
	type sampleKey struct {
		stack  *memStack
		labels string
		size   int
	}
	type sample struct {
		rec   memRecord
		count int
	}
	mp := &memProfile
	samples := map[sampleKey]*sample{}
	var order []sampleKey
	mp.mu.Lock()
	start := mp.start
	if memRecording.Load() {
		for r := mp.list.next; r != &mp.list; r = r.next {
			if r.segment {
				continue
			}
			k := sampleKey{r.stack, recordLabels(r), r.size}
			if s := samples[k]; s != nil {
				s.count++
				continue
			}
			samples[k] = &sample{rec: *r, count: 1}
			order = append(order, k)
		}
	}
	mp.mu.Unlock()

	now := time.Now().UnixNano()
	p := &profile.Profile{
		SampleType: []*profile.ValueType{
			{Type: "inuse_objects", Unit: "count"},
			{Type: "inuse_space", Unit: "bytes"},
		},
		DefaultSampleType: "inuse_space",
		PeriodType:        &profile.ValueType{Type: "space", Unit: "bytes"},
		Period:            1,
		TimeNanos:         now,
		Comments:          []string{"memory allocated through github.com/gocuda/cuda/highlevel and not yet freed"},
	}
	if start != 0 {
		p.DurationNanos = now - start
	}
	b := newProfileBuilder(p)
	for _, k := range order {
		s := samples[k]
		r := &s.rec
		labels := map[string][]string{
			"device":    {deviceLabel(r.dev)},
			"allocator": {r.kind.String()},
		}
		if r.kind == memPool || r.kind == memAsyncPool {
			labels["stream"] = []string{streamLabel(r.stream)}
		}
		for i := 0; i+1 < len(r.labels); i += 2 {
			labels[r.labels[i]] = append(labels[r.labels[i]], r.labels[i+1])
		}
		p.Sample = append(p.Sample, &profile.Sample{
			Location: b.locations(r.stack),
			Value:    []int64{int64(s.count), int64(s.count) * int64(r.size)},
			Label:    labels,
			NumLabel: map[string][]int64{"bytes": {int64(r.size)}},
			NumUnit:  map[string][]string{"bytes": {"bytes"}},
		})
	}
	if err := p.CheckValid(); err != nil {
		return fmt.Errorf("%smemory profile: %w", prefix, err)
	}
	return p.Write(w)
}

// recordLabels is a key of r's labels, for grouping samples.
func recordLabels(r *memRecord) string {
	return fmt.Sprint(r.dev, r.kind, r.stream, r.labels)
}

// A profileBuilder makes a profile's locations and functions, once for
// each frame.
type profileBuilder struct {
	p         *profile.Profile
	mapping   *profile.Mapping
	stacks    map[*memStack][]*profile.Location
	frames    map[profileFrame]*profile.Location
	functions map[[2]string]*profile.Function
}

type profileFrame struct {
	pc   uintptr
	fn   string
	line int
}

func newProfileBuilder(p *profile.Profile) *profileBuilder {
	m := &profile.Mapping{ID: 1, Limit: ^uint64(0), HasFunctions: true, HasFilenames: true, HasLineNumbers: true}
	p.Mapping = []*profile.Mapping{m}
	return &profileBuilder{
		p: p, mapping: m,
		stacks:    map[*memStack][]*profile.Location{},
		frames:    map[profileFrame]*profile.Location{},
		functions: map[[2]string]*profile.Function{},
	}
}

// locations returns the locations of stack s, innermost first.
func (b *profileBuilder) locations(s *memStack) []*profile.Location {
	if l, ok := b.stacks[s]; ok {
		return l
	}
	var locs []*profile.Location
	for _, f := range stackFrames(s) {
		k := profileFrame{f.PC, f.Function, f.Line}
		loc := b.frames[k]
		if loc == nil {
			fk := [2]string{f.Function, f.File}
			fn := b.functions[fk]
			if fn == nil {
				fn = &profile.Function{ID: uint64(len(b.p.Function) + 1), Name: f.Function, SystemName: f.Function, Filename: f.File}
				b.functions[fk] = fn
				b.p.Function = append(b.p.Function, fn)
			}
			loc = &profile.Location{ID: uint64(len(b.p.Location) + 1), Mapping: b.mapping, Address: uint64(f.PC),
				Line: []profile.Line{{Function: fn, Line: int64(f.Line)}}}
			b.frames[k] = loc
			b.p.Location = append(b.p.Location, loc)
		}
		locs = append(locs, loc)
	}
	b.stacks[s] = locs
	return locs
}

// stackFrames returns the frames of s, innermost first, without the
// package's unexported functions at the innermost end (those of its test
// files are the program's).
func stackFrames(s *memStack) []runtime.Frame {
	if s == nil {
		return nil
	}
	var frames []runtime.Frame
	it := runtime.CallersFrames(s.pcs)
	for {
		f, more := it.Next()
		if len(frames) > 0 || !internalFrame(f.Function) || strings.HasSuffix(f.File, "_test.go") {
			frames = append(frames, f)
		}
		if !more {
			break
		}
	}
	return frames
}

// pkgPrefix begins the names of the package's functions.
const pkgPrefix = "github.com/gocuda/cuda/highlevel."

// internalFrame reports whether fn names one of the package's own
// unexported functions or methods, or a function literal in one:
// "highlevel.(*arena).alloc". An exported method of an unexported type
// ("highlevel.managed.Alloc") is a call into the package, through an
// interface.
func internalFrame(fn string) bool {
	rest, ok := strings.CutPrefix(fn, pkgPrefix)
	if !ok {
		return false
	}
	// The name after the last dot outside type arguments ("[...]").
	depth, name := 0, rest
	for i, c := range rest {
		switch c {
		case '[':
			depth++
		case ']':
			depth--
		case '.':
			if depth == 0 {
				name = rest[i+1:]
			}
		}
	}
	r, _ := utf8.DecodeRuneInString(name)
	return !unicode.IsUpper(r)
}

// callerFrame is the innermost frame of frames outside the package's own
// code (its test files count as the program's), the program's call into
// it; the first frame where there is none.
func callerFrame(frames []runtime.Frame) runtime.Frame {
	for _, f := range frames {
		if !strings.HasPrefix(f.Function, pkgPrefix) || strings.HasSuffix(f.File, "_test.go") {
			return f
		}
	}
	if len(frames) > 0 {
		return frames[0]
	}
	return runtime.Frame{}
}

// A timelineEvent is a line of WriteMemoryTimeline's output.
type timelineEvent struct {
	Action      string            `json:"action"`
	TimeNS      int64             `json:"time_ns"`
	Dropped     *uint64           `json:"dropped,omitempty"`
	Addr        string            `json:"addr,omitempty"`
	Size        int               `json:"size,omitempty"`
	Device      *int              `json:"device,omitempty"`
	Allocator   string            `json:"allocator,omitempty"`
	Stream      string            `json:"stream,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	AllocTimeNS int64             `json:"alloc_time_ns,omitempty"`
	Frames      []timelineFrame   `json:"frames,omitempty"`
	DeviceFree  int               `json:"device_free,omitempty"`
	DeviceTotal int               `json:"device_total,omitempty"`
}

// A timelineFrame is a frame of a timeline event's stack, named as in
// PyTorch's memory snapshots.
type timelineFrame struct {
	Name     string `json:"name"`
	Filename string `json:"filename"`
	Line     int    `json:"line"`
}

// WriteMemoryTimeline writes the latest allocation events recorded
// (StartMemoryProfile; MemoryProfileOptions.Events says how many are
// kept) to w, as JSON lines: one object per line, oldest first. The first
// line is {"action": "start", "time_ns": T, "dropped": N}: when recording
// began (Unix nanoseconds) and how many older events were dropped. Every
// other line has "action", "time_ns", and:
//
//   - "alloc" and "segment_alloc" (a pool's chunk from its upstream
//     allocator): "addr" (hexadecimal), "size" (bytes, as requested),
//     "device" (-1: pinned host memory), "allocator" (as the profile's
//     label), "stream" (for a pool's and stream-ordered memory), "labels"
//     (LabelAllocator's) and "frames", innermost first, each with "name",
//     "filename" and "line", as in PyTorch's memory snapshots;
//   - "free" and "segment_free": the same but "frames", of the allocation
//     freed (or taken back after it was dropped without Free), and
//     "alloc_time_ns", when it was allocated;
//   - "oom": an *OutOfMemoryError returned: "size", "device", "frames" of
//     the allocation refused, and, where known, "device_free" and
//     "device_total" (cuMemGetInfo).
//
// While not recording, only the start line is written, with time_ns 0.
func WriteMemoryTimeline(w io.Writer) error {
	type item struct {
		ev  memEvent
		rec memRecord
	}
	mp := &memProfile
	mp.mu.Lock()
	start := mp.start
	var dropped uint64
	var items []item
	if memRecording.Load() {
		evs := mp.eventsLocked()
		dropped = mp.dropped
		items = make([]item, len(evs))
		for i, e := range evs {
			items[i] = item{e, *e.rec}
		}
	} else {
		start = 0
	}
	mp.mu.Unlock()

	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	if err := enc.Encode(timelineEvent{Action: "start", TimeNS: start, Dropped: &dropped}); err != nil {
		return err
	}
	frames := map[*memStack][]timelineFrame{}
	for _, it := range items {
		r := &it.rec
		d := int(r.dev)
		e := timelineEvent{Action: memActionNames[it.ev.act], TimeNS: it.ev.ns, Size: r.size, Device: &d}
		if it.ev.act == actOOM {
			e.DeviceFree, e.DeviceTotal = r.free, r.total
		} else {
			e.Addr = "0x" + strconv.FormatUint(uint64(r.addr), 16)
			e.Allocator = r.kind.String()
			if r.kind == memPool || r.kind == memAsyncPool {
				e.Stream = streamLabel(r.stream)
			}
			if len(r.labels) > 0 {
				e.Labels = map[string]string{}
				for i := 0; i+1 < len(r.labels); i += 2 {
					e.Labels[r.labels[i]] = r.labels[i+1]
				}
			}
		}
		if it.ev.act == actFree || it.ev.act == actSegmentFree {
			e.AllocTimeNS = r.ns
		}
		if it.ev.act == actAlloc || it.ev.act == actSegmentAlloc || it.ev.act == actOOM {
			f, ok := frames[r.stack]
			if !ok {
				for _, fr := range stackFrames(r.stack) {
					f = append(f, timelineFrame{fr.Function, fr.File, fr.Line})
				}
				frames[r.stack] = f
			}
			e.Frames = f
		}
		if err := enc.Encode(e); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// recordOutOfMemory adds e to the timeline, with the stack of
// noteOutOfMemory's caller.
func recordOutOfMemory(e *OutOfMemoryError) {
	var pcs [memStackDepth]uintptr
	n := runtime.Callers(3, pcs[:])
	mp := &memProfile
	mp.mu.Lock()
	defer mp.mu.Unlock()
	if !memRecording.Load() {
		return
	}
	ns := time.Now().UnixNano()
	// An oom event's record is never listed.
	r := &memRecord{size: e.Size, dev: e.Device, ns: ns, free: e.DeviceFree, total: e.DeviceTotal, stack: mp.stackLocked(pcs[:n])}
	mp.appendEventLocked(ns, actOOM, r)
}

// The out-of-memory report.

// PoolStats are a pool's statistics at one moment, as an
// *OutOfMemoryError reports them: the figures of the pool's methods of the
// same names, read together.
type PoolStats struct {
	// Pool is the pool: a *MemoryPool, *MemoryAsyncPool or
	// *PinnedMemoryPool, whose FreeAllBlocks gives back what it holds
	// free.
	Pool   any
	Device Device // the pool's device (its Device method); CPUDevice for a PinnedMemoryPool
	// UsedBytes is in use, FreeBytes held free (cached) for reuse,
	// TotalBytes both: held from the upstream allocator or the device.
	UsedBytes, FreeBytes, TotalBytes int
	// ActiveBlocks and NFreeBlocks count the blocks in use and held
	// free; -1 for a MemoryAsyncPool, whose blocks CUDA does not count.
	ActiveBlocks, NFreeBlocks int
	// LargestFreeBlock is the size of the largest block held free, the
	// largest allocation the pool can serve without more memory from
	// its upstream allocator (for a stream whose blocks it is): much less
	// than FreeBytes means that the free memory is fragmented. -1 for a
	// MemoryAsyncPool, which CUDA does not tell.
	LargestFreeBlock int
	Limit            int // SetLimit's, 0 for none
}

// A MemoryHolder is memory in use allocated from one stack, as an
// *OutOfMemoryError reports it while the recorder is on.
type MemoryHolder struct {
	Bytes       int // the bytes in use, as requested
	Allocations int // the allocations not yet freed
	// Stack is the allocating stack, innermost first, without the
	// package's unexported functions: it begins with the call into the
	// package.
	Stack []runtime.Frame
}

// maxHolders is how many holders a report names.
const maxHolders = 5

// poolRegistry lists the pools the package made, weakly, for the
// out-of-memory report.
var poolRegistry struct {
	mu    sync.Mutex
	pools []registeredPool
}

// A registeredPool is one of the pools of poolRegistry: one of its
// pointers is set.
type registeredPool struct {
	mem    weak.Pointer[MemoryPool]
	async  weak.Pointer[MemoryAsyncPool]
	pinned weak.Pointer[PinnedMemoryPool]
}

func (r registeredPool) dead() bool {
	return r.mem.Value() == nil && r.async.Value() == nil && r.pinned.Value() == nil
}

// registerPool adds r to the registry, and drops the pools collected
// since. DeviceMemoryAsyncPool returns a new MemoryAsyncPool of the same
// CUDA pool at every call: each is listed, as any of them may be the one
// still reachable, and poolStats counts their CUDA pool once.
func registerPool(r registeredPool) {
	reg := &poolRegistry
	reg.mu.Lock()
	defer reg.mu.Unlock()
	reg.pools = slices.DeleteFunc(reg.pools, registeredPool.dead)
	reg.pools = append(reg.pools, r)
}

// poolStats returns the statistics of the pools the package made that are
// still reachable and hold memory or have a limit; the MemoryAsyncPools'
// only where CUDA may be called.
func poolStats() []PoolStats {
	reg := &poolRegistry
	reg.mu.Lock()
	pools := slices.Clone(reg.pools)
	reg.mu.Unlock()
	callCUDA := !inCallback()
	var stats []PoolStats
	type cudaPool struct {
		h   uintptr
		dev Device
	}
	seen := map[cudaPool]bool{} // the CUDA pools of the MemoryAsyncPools counted
	for _, r := range pools {
		var s PoolStats
		mem, pinned, async := r.mem.Value(), r.pinned.Value(), r.async.Value()
		switch {
		case mem != nil:
			s = mem.arena.stats()
			s.Pool, s.Device = mem, mem.dev
		case pinned != nil:
			s = pinned.arena.stats()
			s.Pool, s.Device = pinned, CPUDevice
		case async != nil && callCUDA && !async.life.Closed() && !seen[cudaPool{async.h, async.dev}]:
			seen[cudaPool{async.h, async.dev}] = true
			used, total := async.UsedBytes(), async.TotalBytes()
			s = PoolStats{Pool: async, Device: async.dev, UsedBytes: used, FreeBytes: max(total-used, 0),
				TotalBytes: total, ActiveBlocks: -1, NFreeBlocks: -1, LargestFreeBlock: -1, Limit: async.Limit()}
		default:
			continue
		}
		if s.TotalBytes > 0 || s.UsedBytes > 0 || s.Limit > 0 {
			stats = append(stats, s)
		}
	}
	return stats
}

// devicePoolsHold reports whether a pool of device memory on d that the
// package made holds memory, so that d's context was made: a MemoryPool
// over an allocator of d, or a MemoryAsyncPool.
func devicePoolsHold(d Device) bool {
	reg := &poolRegistry
	reg.mu.Lock()
	pools := slices.Clone(reg.pools)
	reg.mu.Unlock()
	for _, r := range pools {
		if p := r.mem.Value(); p != nil && p.devOK && p.dev == d && p.TotalBytes() > 0 {
			return true
		}
		if p := r.async.Value(); p != nil && p.dev == d {
			return true
		}
	}
	return false
}

// topHolders returns the largest holders of memory on d by stack, from the
// recorder; nil while it is off.
func topHolders(d Device, n int) []MemoryHolder {
	type group struct {
		stack        *memStack
		bytes, count int
	}
	groups := map[*memStack]*group{}
	mp := &memProfile
	mp.mu.Lock()
	if memRecording.Load() {
		for r := mp.list.next; r != &mp.list; r = r.next {
			if r.segment || r.dev != d {
				continue
			}
			g := groups[r.stack]
			if g == nil {
				g = &group{stack: r.stack}
				groups[r.stack] = g
			}
			g.bytes += r.size
			g.count++
		}
	}
	mp.mu.Unlock()
	if len(groups) == 0 {
		return nil
	}
	all := make([]*group, 0, len(groups))
	for _, g := range groups {
		all = append(all, g)
	}
	slices.SortFunc(all, func(a, b *group) int {
		if a.bytes != b.bytes {
			return b.bytes - a.bytes
		}
		return b.count - a.count
	})
	var holders []MemoryHolder
	for _, g := range all[:min(n, len(all))] {
		holders = append(holders, MemoryHolder{Bytes: g.bytes, Allocations: g.count, Stack: stackFrames(g.stack)})
	}
	return holders
}

// outOfMemoryHook is the function SetOutOfMemoryHook set, or nil.
var outOfMemoryHook atomic.Pointer[func(*OutOfMemoryError)]

// SetOutOfMemoryHook makes f the function called with each
// *OutOfMemoryError the package's allocations return: once per error,
// after its report (Pools, DeviceFree, Holders) is filled in and before
// the allocation returns it. nil removes the hook. f runs on the
// goroutine that allocated, under none of the package's locks, so it may
// write a memory profile (WriteMemoryProfile), free memory or allocate; an
// allocation in f that runs out of memory calls f again. A panic in f goes
// on to the allocation's caller, as a panic of an Allocator upstream of a
// MemoryPool does.
//
// An out-of-memory error of a pool's upstream allocator that the pool
// recovers from (it gives back the blocks it holds free and tries again)
// is not reported: the hook sees the errors the program sees. The
// exception is an upstream Allocator of the program's own that allocates
// through the package (a pool, Device.Alloc, Alloc): its errors are
// reported as the package returns them to it, inside the pool's
// allocation, which the pool may still recover from; a hook run there
// must not Close that pool, whose Close waits for the allocation.
func SetOutOfMemoryHook(f func(*OutOfMemoryError)) {
	if f == nil {
		outOfMemoryHook.Store(nil)
		return
	}
	outOfMemoryHook.Store(&f)
}

// noteOutOfMemory fills in the report of the *OutOfMemoryError in err, if
// it has one not yet reported, and calls the hook with it. The package's
// allocations call it where they return an error to the program, holding
// none of the package's locks.
func noteOutOfMemory(err error) {
	var e *OutOfMemoryError
	if !errors.As(err, &e) || e.reported {
		return
	}
	e.reported = true
	e.Pools = poolStats()
	d := e.Device
	if d >= 0 && (e.Err != nil || devicePoolsHold(d)) && !inCallback() {
		if free, total, err := d.MemInfo(); err == nil {
			e.DeviceFree, e.DeviceTotal = free, total
		}
	}
	e.Holders = topHolders(d, maxHolders)
	if memRecording.Load() {
		recordOutOfMemory(e)
	}
	if f := outOfMemoryHook.Load(); f != nil {
		(*f)(e)
	}
}

// summary is the report's part of Error: a sentence each on the device,
// its pools and the largest holder; "" before the report is filled in.
func (e *OutOfMemoryError) summary() string {
	if !e.reported {
		return ""
	}
	var b strings.Builder
	where := deviceLabel(e.Device)
	if e.DeviceTotal > 0 {
		fmt.Fprintf(&b, "; %s has %s free of %s", where, byteSize(e.DeviceFree), byteSize(e.DeviceTotal))
	}
	var held, used, free, pools int
	largest := -1
	for _, s := range e.Pools {
		if s.Device == e.Device {
			pools++
			used += s.UsedBytes
			free += s.FreeBytes
			largest = max(largest, s.LargestFreeBlock)
			if p, ok := s.Pool.(*MemoryPool); ok && p.overPool {
				// Its chunks are blocks of its upstream pool, in use
				// there: counted once, as this pool's blocks.
				used -= s.TotalBytes
			} else {
				held += s.TotalBytes
			}
		}
	}
	if pools > 0 {
		fmt.Fprintf(&b, "; the pools of %s hold %s, %s in use and %s free", where, byteSize(held), byteSize(used), byteSize(free))
		if largest >= 0 && free > 0 {
			fmt.Fprintf(&b, " (the largest free block %s)", byteSize(largest))
		}
	}
	if len(e.Holders) > 0 {
		h := e.Holders[0]
		f := callerFrame(h.Stack)
		fmt.Fprintf(&b, "; the most, %s in %s, from %s (%s:%d)",
			byteSize(h.Bytes), allocations(h.Allocations), shortFunc(f.Function), shortFile(f.File), f.Line)
	}
	return b.String()
}

// Report returns the error's report, over several lines: the allocation
// refused, the device's memory (cuMemGetInfo), each pool's statistics, and
// the largest holders with their stacks (with the recorder on). It is
// empty for a nil error.
func (e *OutOfMemoryError) Report() string {
	if e == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "out of memory: %d bytes on %s", e.Size, deviceLabel(e.Device))
	if e.Limit > 0 {
		fmt.Fprintf(&b, ", refused by the pool's limit of %d bytes, %d held", e.Limit, e.Held)
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %s", bare(e.Err))
	}
	b.WriteString("\n")
	if e.DeviceTotal > 0 {
		fmt.Fprintf(&b, "%s: %d bytes (%s) free of %d (%s)\n", deviceLabel(e.Device),
			e.DeviceFree, byteSize(e.DeviceFree), e.DeviceTotal, byteSize(e.DeviceTotal))
	}
	if len(e.Pools) > 0 {
		b.WriteString("pools:\n")
	}
	for _, s := range e.Pools {
		fmt.Fprintf(&b, "\t%s of %s: %d bytes held, %d in use", poolName(s.Pool), deviceLabel(s.Device), s.TotalBytes, s.UsedBytes)
		if s.ActiveBlocks >= 0 {
			fmt.Fprintf(&b, " in %d blocks", s.ActiveBlocks)
		}
		fmt.Fprintf(&b, ", %d free", s.FreeBytes)
		if s.NFreeBlocks >= 0 {
			fmt.Fprintf(&b, " in %d blocks", s.NFreeBlocks)
		}
		if s.LargestFreeBlock >= 0 {
			fmt.Fprintf(&b, ", the largest %d", s.LargestFreeBlock)
		}
		if s.Limit > 0 {
			fmt.Fprintf(&b, "; limit %d", s.Limit)
		}
		b.WriteString("\n")
	}
	if len(e.Holders) > 0 {
		fmt.Fprintf(&b, "largest holders on %s:\n", deviceLabel(e.Device))
	}
	for _, h := range e.Holders {
		fmt.Fprintf(&b, "\t%d bytes (%s) in %s:\n", h.Bytes, byteSize(h.Bytes), allocations(h.Allocations))
		for _, f := range h.Stack {
			fmt.Fprintf(&b, "\t\t%s\n\t\t\t%s:%d\n", f.Function, f.File, f.Line)
		}
	}
	return b.String()
}

// poolName names pool p's type.
func poolName(p any) string {
	switch p.(type) {
	case *MemoryPool:
		return "MemoryPool"
	case *MemoryAsyncPool:
		return "MemoryAsyncPool"
	case *PinnedMemoryPool:
		return "PinnedMemoryPool"
	}
	return "pool"
}

// allocations says "1 allocation", "2 allocations".
func allocations(n int) string {
	if n == 1 {
		return "1 allocation"
	}
	return strconv.Itoa(n) + " allocations"
}

// byteSize writes n bytes for people: "512 bytes", "1.5 GiB".
func byteSize(n int) string {
	const units = "KMGTPE"
	if n < 1024 {
		return strconv.Itoa(n) + " bytes"
	}
	v, i := float64(n)/1024, 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " " + units[i:i+1] + "iB"
}

// shortFunc is fn without its package's path: "main.worker".
func shortFunc(fn string) string {
	if i := strings.LastIndexByte(fn, '/'); i >= 0 {
		return fn[i+1:]
	}
	return fn
}

// shortFile is the last element of file's path.
func shortFile(file string) string {
	if i := strings.LastIndexByte(file, '/'); i >= 0 {
		return file[i+1:]
	}
	return file
}
