package highlevel

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/gocuda/cuda/cudart"
)

// recordMemory starts the allocation recorder for t, stopped when t ends.
func recordMemory(t testing.TB, opts *MemoryProfileOptions) {
	t.Helper()
	StopMemoryProfile() // whatever an earlier test left
	StartMemoryProfile(opts)
	t.Cleanup(StopMemoryProfile)
}

// A memSample is a sample of a memory profile, as the tests read it.
type memSample struct {
	allocator, device, stream string
	labels                    map[string]string // the others
	count, bytes, size        int64
	funcs                     []string // innermost first
}

func (s memSample) String() string {
	return fmt.Sprintf("%s %s stream=%q %v: %d x %d bytes from %v", s.allocator, s.device, s.stream, s.labels, s.count, s.size, s.funcs)
}

// readMemoryProfile writes the memory profile, parses it back with pprof's
// own parser, and returns its samples whose stacks pass through a function
// named like one of in (all where in is empty), so that allocations of
// other tests' goroutines do not count.
func readMemoryProfile(t *testing.T, in ...string) []memSample {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteMemoryProfile(&buf); err != nil {
		t.Fatalf("WriteMemoryProfile: %v", err)
	}
	p, err := profile.Parse(&buf)
	if err != nil {
		t.Fatalf("profile.Parse: %v", err)
	}
	if err := p.CheckValid(); err != nil {
		t.Fatalf("the profile is not valid: %v", err)
	}
	if len(p.SampleType) != 2 || p.SampleType[0].Type != "inuse_objects" || p.SampleType[1].Type != "inuse_space" ||
		p.SampleType[1].Unit != "bytes" || p.DefaultSampleType != "inuse_space" {
		t.Fatalf("sample types %v (default %q), want inuse_objects, inuse_space/bytes (default)", p.SampleType, p.DefaultSampleType)
	}
	var samples []memSample
	for _, s := range p.Sample {
		ms := memSample{labels: map[string]string{}, count: s.Value[0], bytes: s.Value[1]}
		for k, v := range s.Label {
			if len(v) != 1 {
				t.Errorf("label %s: %q, want one value", k, v)
			}
			switch k {
			case "allocator":
				ms.allocator = v[0]
			case "device":
				ms.device = v[0]
			case "stream":
				ms.stream = v[0]
			default:
				ms.labels[k] = v[0]
			}
		}
		if n := s.NumLabel["bytes"]; len(n) == 1 {
			ms.size = n[0]
		}
		for _, loc := range s.Location {
			for _, l := range loc.Line {
				ms.funcs = append(ms.funcs, l.Function.Name)
			}
		}
		if ms.bytes != ms.count*ms.size {
			t.Errorf("%v: %d bytes, want count x size", ms, ms.bytes)
		}
		if len(in) == 0 || slices.ContainsFunc(ms.funcs, func(f string) bool {
			return slices.ContainsFunc(in, func(name string) bool { return strings.HasSuffix(f, "."+name) })
		}) {
			samples = append(samples, ms)
		}
	}
	return samples
}

// checkStack checks that a sample's stack begins with the package's
// function api, the program's call into it, and passes through caller.
func checkStack(t *testing.T, s memSample, api, caller string) {
	t.Helper()
	if len(s.funcs) == 0 || s.funcs[0] != pkgPrefix+api {
		t.Errorf("%v: the stack begins with %q, want %s%s", s, s.funcs[:min(1, len(s.funcs))], pkgPrefix, api)
	}
	if !slices.Contains(s.funcs, pkgPrefix+caller) {
		t.Errorf("%v: the stack does not name %s%s", s, pkgPrefix, caller)
	}
}

// TestMemoryProfile records allocations of a MemoryPool (over Go memory)
// and checks the profile: a sample per allocation site and labels, of the
// sizes asked for, stacks that begin with the call into the package and
// name the test; frees remove their allocations; and allocations made
// while the recorder is off are never seen, nor are their frees.
func TestMemoryProfile(t *testing.T) {
	StopMemoryProfile()
	p, _ := newTestPool(t, 1<<30)
	before := mustAlloc(t, p, 700) // not recorded
	recordMemory(t, nil)
	if s := readMemoryProfile(t, "TestMemoryProfile"); len(s) != 0 {
		t.Fatalf("recording from now: the profile holds %v", s)
	}

	ctx := pprof.WithLabels(context.Background(), pprof.Labels("worker", "1", "phase", "fill"))
	labeled := LabelAllocator(ctx, p)
	type alloc struct {
		name   string
		alloc  func() (MemoryPointer, error)
		api    string            // the innermost frame
		size   int64             // as asked for
		labels map[string]string // LabelAllocator's
	}
	allocs := []alloc{
		{"Alloc", func() (MemoryPointer, error) { return p.Alloc(3000) }, "(*MemoryPool).AllocAsync", 3000, nil},
		{"LabelAllocator", func() (MemoryPointer, error) { return labeled.Alloc(5000) }, "(*MemoryPool).AllocAsync",
			5000, map[string]string{"worker": "1", "phase": "fill"}},
		{"AllocArray", func() (MemoryPointer, error) {
			a, err := AllocArray[float32](labeled, 100)
			return a.MemoryPointer(), err
		}, "(*MemoryPool).AllocAsync", 400, map[string]string{"worker": "1", "phase": "fill"}},
	}
	var ptrs []MemoryPointer
	for _, a := range allocs {
		for range 2 {
			m, err := a.alloc()
			if err != nil {
				t.Fatalf("%s: %v", a.name, err)
			}
			ptrs = append(ptrs, m)
		}
	}
	samples := readMemoryProfile(t, "TestMemoryProfile")
	if len(samples) != len(allocs) {
		t.Fatalf("%d samples, want %d (one per call site): %v", len(samples), len(allocs), samples)
	}
	for _, a := range allocs {
		i := slices.IndexFunc(samples, func(s memSample) bool { return s.size == a.size })
		if i < 0 {
			t.Errorf("%s: no sample of %d bytes in %v", a.name, a.size, samples)
			continue
		}
		s := samples[i]
		if s.count != 2 || s.allocator != "MemoryPool" || s.device != "device 0" || s.stream != "legacy" {
			t.Errorf("%s: %v, want 2 allocations from MemoryPool on device 0, stream legacy", a.name, s)
		}
		if len(s.labels) != len(a.labels) || !func() bool {
			for k, v := range a.labels {
				if s.labels[k] != v {
					return false
				}
			}
			return true
		}() {
			t.Errorf("%s: labels %v, want %v", a.name, s.labels, a.labels)
		}
		checkStack(t, s, a.api, "TestMemoryProfile")
	}

	// Frees remove their allocations; the free of one made before the
	// recorder started changes nothing.
	if err := before.Free(); err != nil {
		t.Fatal(err)
	}
	for i, m := range ptrs {
		if err := m.Free(); err != nil {
			t.Fatal(err)
		}
		if got, want := len(readMemoryProfile(t, "TestMemoryProfile")), len(allocs)-(i+1)/2; got != want {
			t.Fatalf("after %d frees: %d samples, want %d", i+1, got, want)
		}
	}

	// Stopped, nothing is recorded; started again, what was allocated
	// meanwhile is not seen.
	kept := mustAlloc(t, p, 1500)
	StopMemoryProfile()
	off := mustAlloc(t, p, 2500)
	if s := readMemoryProfile(t); len(s) != 0 {
		t.Errorf("stopped: the profile holds %v", s)
	}
	StartMemoryProfile(nil)
	if s := readMemoryProfile(t, "TestMemoryProfile"); len(s) != 0 {
		t.Errorf("started again: the profile holds %v", s)
	}
	kept.Free()
	off.Free()
	if p.UsedBytes() != 0 {
		t.Errorf("the pool has %d bytes in use, want 0", p.UsedBytes())
	}
}

// TestMemoryProfileOff checks that a recorder never started records
// nothing: no record, no event, and an empty profile and timeline.
func TestMemoryProfileOff(t *testing.T) {
	StopMemoryProfile()
	p, _ := newTestPool(t, 1<<30)
	m := mustAlloc(t, p, 1000)
	if b := m.Memory().owner.(*block); b.rec != nil {
		t.Errorf("recorder off: the block has a record")
	}
	m.Free()
	if s := readMemoryProfile(t); len(s) != 0 {
		t.Errorf("recorder off: the profile holds %v", s)
	}
	var buf bytes.Buffer
	if err := WriteMemoryTimeline(&buf); err != nil {
		t.Fatal(err)
	}
	if got, want := buf.String(), `{"action":"start","time_ns":0,"dropped":0}`+"\n"; got != want {
		t.Errorf("recorder off: the timeline is %q, want %q", got, want)
	}
}

// readTimeline writes the timeline and decodes its lines.
func readTimeline(t *testing.T) []timelineEvent {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteMemoryTimeline(&buf); err != nil {
		t.Fatal(err)
	}
	var events []timelineEvent
	sc := bufio.NewScanner(&buf)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e timelineEvent
		d := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		d.DisallowUnknownFields()
		if err := d.Decode(&e); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		events = append(events, e)
	}
	if len(events) == 0 || events[0].Action != "start" || events[0].Dropped == nil {
		t.Fatalf("the timeline does not begin with its start line: %v", events)
	}
	return events
}

// TestMemoryTimeline checks the timeline's events: an alloc with its size,
// address, allocator, labels and stack, and a free of the same memory, in
// order, with times; a pool's chunk as segment events; and, with fewer
// events kept than happened, the latest ones and the count of those
// dropped.
func TestMemoryTimeline(t *testing.T) {
	p, _ := newTestPool(t, 1<<30)
	up, _ := newTestPool(t, 1<<30)
	over, err := NewMemoryPool(up) // its chunks are up's blocks: segments
	if err != nil {
		t.Fatal(err)
	}
	recordMemory(t, nil)
	start := time.Now().UnixNano()
	ctx := pprof.WithLabels(context.Background(), pprof.Labels("step", "7"))
	m, err := LabelAllocator(ctx, p).Alloc(1000)
	if err != nil {
		t.Fatal(err)
	}
	m.Free()
	o := mustAlloc(t, over, 600)
	o.Free()
	if err := over.FreeAllBlocks(); err != nil { // the chunk goes back to up
		t.Fatal(err)
	}
	var mine []timelineEvent
	for _, e := range readTimeline(t)[1:] {
		if e.Addr == fmt.Sprintf("%p", m.Ptr()) || e.Addr == fmt.Sprintf("%p", o.Ptr()) {
			mine = append(mine, e)
		}
	}
	want := []struct {
		action, allocator string
		size              int
		frames            bool
	}{
		{"alloc", "MemoryPool", 1000, true},
		{"free", "MemoryPool", 1000, false},
		{"segment_alloc", "MemoryPool", 1024, true}, // over's chunk, 600 rounded: a block of up's
		{"alloc", "MemoryPool", 600, true},
		{"free", "MemoryPool", 600, false},
		{"segment_free", "MemoryPool", 1024, false},
	}
	if len(mine) != len(want) {
		t.Fatalf("%d events of the test's memory, want %d: %+v", len(mine), len(want), mine)
	}
	last := start
	for i, w := range want {
		e := mine[i]
		if e.Action != w.action || e.Allocator != w.allocator || e.Size != w.size || e.Device == nil || *e.Device != 0 ||
			e.Stream != "legacy" || (len(e.Frames) > 0) != w.frames {
			t.Errorf("event %d: %+v, want %s of %d bytes from %s on device 0, stream legacy, frames %v", i, e, w.action, w.size, w.allocator, w.frames)
		}
		if e.TimeNS < last {
			t.Errorf("event %d at %d, before the one before (%d)", i, e.TimeNS, last)
		}
		if a, ok := map[int]int{1: 0, 4: 3, 5: 2}[i]; ok && e.AllocTimeNS != mine[a].TimeNS {
			t.Errorf("event %d: %+v, want the time of its allocation, event %d (%d)", i, e, a, mine[a].TimeNS)
		}
		last = e.TimeNS
	}
	if l := mine[0].Labels; len(l) != 1 || l["step"] != "7" {
		t.Errorf("the labeled alloc's labels: %v, want step=7", l)
	}
	if f := mine[0].Frames; len(f) < 2 || f[0].Name != pkgPrefix+"(*MemoryPool).AllocAsync" ||
		!slices.ContainsFunc(f, func(f timelineFrame) bool {
			return f.Name == pkgPrefix+"TestMemoryTimeline" && f.Line > 0 && f.Filename != ""
		}) {
		t.Errorf("the alloc's frames %+v do not begin in the package and name the test", f)
	}

	// Three events kept: the latest three, and the others counted.
	StopMemoryProfile()
	StartMemoryProfile(&MemoryProfileOptions{Events: 3})
	for range 4 {
		mustAlloc(t, p, 100).Free()
	}
	events := readTimeline(t)
	if len(events) != 4 || *events[0].Dropped != 5 || events[1].Action != "free" || events[2].Action != "alloc" || events[3].Action != "free" {
		t.Errorf("keeping 3 of 8 events: %+v, want the start line (5 dropped), free, alloc, free", events)
	}
	// None kept: the start line says how many were dropped, the 3 kept
	// until then and 2 more.
	StartMemoryProfile(&MemoryProfileOptions{Events: -1})
	mustAlloc(t, p, 100).Free()
	if events := readTimeline(t); len(events) != 1 || *events[0].Dropped != 10 {
		t.Errorf("keeping no events: %+v, want the start line alone, 10 dropped", events)
	}
}

// TestMemoryProfileSegments checks that the memory a pool gets from its
// upstream allocator, here another pool, is no sample of the profile:
// only the blocks in use are, so that no memory counts twice.
func TestMemoryProfileSegments(t *testing.T) {
	up, _ := newTestPool(t, 1<<30)
	over, err := NewMemoryPool(up)
	if err != nil {
		t.Fatal(err)
	}
	recordMemory(t, nil)
	m := mustAlloc(t, over, 3000)
	s := readMemoryProfile(t, "TestMemoryProfileSegments")
	if len(s) != 1 || s[0].size != 3000 {
		t.Fatalf("a block of a pool over a pool: %v, want one sample, of 3000 bytes", s)
	}
	m.Free()
	if s := readMemoryProfile(t, "TestMemoryProfileSegments"); len(s) != 0 {
		t.Errorf("after Free: %v, want none (the chunk over holds is a segment)", s)
	}
}

// TestOutOfMemoryReport checks the report of an *OutOfMemoryError against
// the statistics of the pool that refused, read after the failure: bytes
// in use and free, blocks, the largest free block and the limit; the
// largest holders with the recorder on; that the hook sees each error
// once; and that Error stays one line.
func TestOutOfMemoryReport(t *testing.T) {
	var seen []*OutOfMemoryError
	SetOutOfMemoryHook(func(e *OutOfMemoryError) { seen = append(seen, e) })
	t.Cleanup(func() { SetOutOfMemoryHook(nil) })
	for _, recording := range []bool{false, true} {
		t.Run(fmt.Sprintf("recording=%v", recording), func(t *testing.T) {
			StopMemoryProfile()
			if recording {
				recordMemory(t, nil)
			}
			seen = nil
			p, _ := newTestPool(t, 1<<30)
			if err := p.SetLimit(8 << 10); err != nil {
				t.Fatal(err)
			}
			// One 8 KiB chunk, at the limit: 5 KiB in use in two blocks
			// (4000 bytes rounded, and 1 KiB), 1 KiB free before them
			// and 2 KiB free after, the largest free block. The pool
			// cannot give back its chunk, in use, to serve 3 KiB.
			mustAlloc(t, p, 8<<10).Free()
			a := mustAlloc(t, p, 1024)
			b := mustAlloc(t, p, 4000)
			c := mustAlloc(t, p, 1024)
			a.Free()
			defer b.Free()
			defer c.Free()
			_, err := p.Alloc(3 << 10)
			var e *OutOfMemoryError
			if !errors.As(err, &e) || !errors.Is(err, cudart.ErrorMemoryAllocation) {
				t.Fatalf("Alloc past the limit: %v, want an *OutOfMemoryError", err)
			}
			if len(seen) != 1 || seen[0] != e {
				t.Errorf("the hook saw %v, want the error once", seen)
			}
			i := slices.IndexFunc(e.Pools, func(s PoolStats) bool { return s.Pool == p })
			if i < 0 {
				t.Fatalf("the report has no statistics of the pool: %+v", e.Pools)
			}
			want := PoolStats{Pool: p, Device: 0, UsedBytes: p.UsedBytes(), FreeBytes: p.FreeBytes(), TotalBytes: p.TotalBytes(),
				ActiveBlocks: p.ActiveBlocks(), NFreeBlocks: p.NFreeBlocks(), LargestFreeBlock: 2048, Limit: p.Limit()}
			if got := e.Pools[i]; got != want {
				t.Errorf("the pool's statistics in the report: %+v, want %+v", got, want)
			}
			if want.UsedBytes != 5120 || want.FreeBytes != 3072 || want.NFreeBlocks != 2 {
				t.Errorf("the pool's own statistics: %+v, want 5120 bytes used, 3072 free in 2 blocks", want)
			}
			// CUDA is asked only where a pool of device 0 holds its
			// memory: other tests' pools on a GPU, never this one's.
			var device string
			switch {
			case e.DeviceTotal == 0 && e.DeviceFree == 0:
			case devicePoolsHold(0) && e.DeviceFree <= e.DeviceTotal:
				device = fmt.Sprintf("; device 0 has %s free of %s", byteSize(e.DeviceFree), byteSize(e.DeviceTotal))
			default:
				t.Errorf("device memory %d of %d, want none: the pool holds Go memory, and no pool of device 0 holds CUDA's", e.DeviceFree, e.DeviceTotal)
			}
			// Error sums up the pools of device 0, other tests' too.
			held, used, free, largest := poolSums(e)
			msg := err.Error()
			sum := fmt.Sprintf("; the pools of device 0 hold %s, %s in use and %s free (the largest free block %s)",
				byteSize(held), byteSize(used), byteSize(free), byteSize(largest))
			if strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "highlevel: alloc 3072 bytes from a memory pool: out of memory: the pool's limit is 8192 bytes, 8192 held"+device+sum) {
				t.Errorf("Error() = %q: want one line that sums the pools up: %q", msg, sum)
			}
			report := e.Report()
			if !strings.Contains(report, fmt.Sprintf("MemoryPool of device 0: %d bytes held, %d in use in 2 blocks, %d free in 2 blocks, the largest 2048; limit %d",
				want.TotalBytes, want.UsedBytes, want.FreeBytes, want.Limit)) {
				t.Errorf("Report() does not give the pool's figures:\n%s", report)
			}
			if !recording {
				if e.Holders != nil {
					t.Errorf("recorder off: holders %v", e.Holders)
				}
				return
			}
			// b's and c's call sites hold 4000 and 1024 bytes.
			if len(e.Holders) < 2 || e.Holders[0].Bytes != 4000 || e.Holders[0].Allocations != 1 {
				t.Fatalf("holders %+v, want b's 4000 bytes first", e.Holders)
			}
			h := e.Holders[0].Stack
			if len(h) == 0 || h[0].Function != pkgPrefix+"(*MemoryPool).AllocAsync" ||
				!slices.ContainsFunc(h, func(f runtime.Frame) bool { return f.Function == pkgPrefix+"mustAlloc" }) {
				t.Errorf("the first holder's stack %v does not begin with the call into the package", h)
			}
			if !strings.Contains(msg, "the most, 3.9 KiB in 1 allocation, from highlevel.mustAlloc (pool_test.go:") {
				t.Errorf("Error() = %q: want it to name the largest holder", msg)
			}
			if !strings.Contains(report, "largest holders on device 0:\n\t4000 bytes (3.9 KiB) in 1 allocation:\n\t\t"+pkgPrefix+"(*MemoryPool).AllocAsync") {
				t.Errorf("Report() does not list the holders:\n%s", report)
			}
			var oom []timelineEvent
			for _, ev := range readTimeline(t) {
				if ev.Action == "oom" {
					oom = append(oom, ev)
				}
			}
			if len(oom) != 1 || oom[0].Size != 3<<10 || len(oom[0].Frames) == 0 {
				t.Errorf("the timeline's oom events: %+v, want one of %d bytes with its stack", oom, 3<<10)
			}
		})
	}
}

// TestOutOfMemoryHookRecovered checks that an out-of-memory error a pool
// recovers from is not reported: the pool over another pool is refused by
// the other's limit, gives back the chunk it holds free and tries again,
// which succeeds. The hook sees only errors that reach the program, once
// each, and what fails there first through an Array too.
func TestOutOfMemoryHookRecovered(t *testing.T) {
	calls := 0
	SetOutOfMemoryHook(func(*OutOfMemoryError) { calls++ })
	t.Cleanup(func() { SetOutOfMemoryHook(nil) })
	up, _ := newTestPool(t, 1<<30)
	if err := up.SetLimit(4 << 10); err != nil {
		t.Fatal(err)
	}
	over, err := NewMemoryPool(up)
	if err != nil {
		t.Fatal(err)
	}
	mustAlloc(t, over, 3<<10).Free() // a 3 KiB chunk held free
	m, err := over.Alloc(4 << 10)    // refused by up, then served
	if err != nil {
		t.Fatalf("Alloc after FreeAllBlocks and again: %v", err)
	}
	defer m.Free()
	if calls != 0 {
		t.Errorf("the hook was called %d times for an error the pool recovered from", calls)
	}
	for _, tc := range []struct {
		name  string
		alloc func() error
	}{
		{"pool over pool", func() error { return second(over.Alloc(1 << 10)) }},
		{"array", func() error { return second(AllocArray[float64](over, 1<<10)) }},
		{"labeled", func() error { return second(LabelAllocator(context.Background(), over).Alloc(1 << 10)) }},
		{"size no device has", func() error { return second(AllocArray[float64](over, 1<<60)) }},
	} {
		calls = 0
		err := tc.alloc()
		if !errors.Is(err, cudart.ErrorMemoryAllocation) || calls != 1 {
			t.Errorf("%s: %v; the hook was called %d times, want once", tc.name, err, calls)
		}
	}
}

// TestMemoryProfileConcurrent allocates and frees from several goroutines
// while another writes profiles and timelines and stops and starts the
// recorder: under the race detector, the recorder's state is guarded;
// afterwards, recording again, the profile holds what is still allocated
// and nothing freed.
func TestMemoryProfileConcurrent(t *testing.T) {
	p, _ := newTestPool(t, 1<<30)
	recordMemory(t, &MemoryProfileOptions{Events: 64})
	const workers, rounds = 4, 200
	stop := make(chan struct{})
	var toggler sync.WaitGroup
	toggler.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			WriteMemoryProfile(io.Discard)
			WriteMemoryTimeline(io.Discard)
			if i%4 == 3 {
				StopMemoryProfile()
				StartMemoryProfile(&MemoryProfileOptions{Events: 32 + i%64})
			}
		}
	})
	kept := make([]MemoryPointer, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			a := LabelAllocator(pprof.WithLabels(context.Background(), pprof.Labels("worker", fmt.Sprint(w))), p)
			for i := range rounds {
				m, err := a.Alloc(512 * (1 + i%5))
				if err != nil {
					t.Error(err)
					return
				}
				if i == rounds-1 {
					kept[w] = m
					break
				}
				m.Free()
			}
		})
	}
	wg.Wait()
	close(stop)
	toggler.Wait()
	StopMemoryProfile()
	StartMemoryProfile(nil)
	for _, m := range kept {
		m.Free()
	}
	if s := readMemoryProfile(t, "TestMemoryProfileConcurrent"); len(s) != 0 {
		t.Errorf("all freed: the profile holds %v", s)
	}
	m := mustAlloc(t, p, 100)
	defer m.Free()
	if s := readMemoryProfile(t, "TestMemoryProfileConcurrent"); len(s) != 1 || s[0].size != 100 {
		t.Errorf("one allocation: the profile holds %v", s)
	}
}

// memoryProfileCases are what TestMemoryProfileStandIn checks on the
// stand-in driver, each in a child process (TestMemoryProfileStandInChild).
var memoryProfileCases = []childCase{
	{"every allocator", checkProfileAllocators},
	{"memory dropped is taken back", checkProfileDropped},
	{"out-of-memory reports", checkOutOfMemoryReports},
	{"a device's async pool, through any of its wrappers", checkAsyncPoolWrappers},
}

// checkAsyncPoolWrappers checks that the statistics of a device's CUDA
// memory pool, which each DeviceMemoryAsyncPool call wraps anew, are
// listed once while any wrapper is reachable, the first collected or not.
func checkAsyncPoolWrappers(t *testing.T) {
	count := func() int {
		n := 0
		for _, s := range poolStats() {
			if p, ok := s.Pool.(*MemoryAsyncPool); ok && p.dev == 0 && p.owned == false {
				n++
			}
		}
		return n
	}
	first, err := DeviceMemoryAsyncPool(0)
	if err != nil {
		t.Fatal(err)
	}
	second, err := DeviceMemoryAsyncPool(0)
	if err != nil {
		t.Fatal(err)
	}
	m, err := second.AllocAsync(nil, 4096) // memory it holds, which first does not keep
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	runtime.KeepAlive(first)
	if n := count(); n != 1 {
		t.Errorf("two wrappers of the device's pool: listed %d times, want once", n)
	}
	first = nil
	for range 3 {
		runtime.GC()
	}
	if n := count(); n != 1 {
		t.Errorf("the first wrapper collected, the second reachable: listed %d times, want once", n)
	}
	runtime.KeepAlive(second)
}

// TestMemoryProfileStandIn runs memoryProfileCases on the stand-in driver:
// the recorder sees the allocations of every allocator of the package,
// and the out-of-memory report the device's and the pools' memory.
func TestMemoryProfileStandIn(t *testing.T) {
	runChildCases(t, "TestMemoryProfileStandInChild", "HL_MEMPROFILE_CASE", memoryProfileCases)
}

func TestMemoryProfileStandInChild(t *testing.T) {
	runChildCase(t, "TestMemoryProfileStandIn", "HL_MEMPROFILE_CASE", memoryProfileCases)
}

// checkProfileAllocators allocates from every allocator of the package and
// checks the profile's sample of each (allocator, device, stream, size,
// stack), that a pool's memory from its upstream allocator is no sample
// but the timeline's segment, and that each free removes its sample.
func checkProfileAllocators(t *testing.T) {
	s := standInStream(t)
	pool, err := NewMemoryPool(Device(0))
	if err != nil {
		t.Fatal(err)
	}
	async, err := NewMemoryAsyncPool(0)
	if err != nil {
		t.Fatal(err)
	}
	defer async.Close()
	pinned := NewPinnedMemoryPool()
	recordMemory(t, nil)
	type freer interface{ Free() error }
	stream := streamLabel(uintptr(s.h))
	cases := []struct {
		allocator, device, stream string
		size                      int
		alloc                     func() (freer, error)
	}{
		{"Device", "device 0", "", 1000, func() (freer, error) { return Device(0).Alloc(1000) }},
		{"Managed", "device 0", "", 1100, func() (freer, error) { return Managed(0).Alloc(1100) }},
		{"Device", "device 0", "", 1200, func() (freer, error) { return AllocArray[byte](Device(0), 1200) }},
		{"MemoryPool", "device 0", "legacy", 1300, func() (freer, error) { return pool.Alloc(1300) }},
		{"MemoryPool", "device 0", stream, 1400, func() (freer, error) { return pool.AllocAsync(s, 1400) }},
		{"MemoryAsyncPool", "device 0", stream, 1500, func() (freer, error) { return async.AllocAsync(s, 1500) }},
		{"MemoryAsyncPool", "device 0", "legacy", 1600, func() (freer, error) { return AllocAsync(nil, 1600) }},
		{"PinnedMemoryPool", "host", "", 1700, func() (freer, error) { return pinned.Alloc(1700) }},
		{"AllocPinnedUnpooled", "host", "", 1800, func() (freer, error) { return AllocPinnedUnpooled(1800) }},
		{"PinnedMemoryPool", "host", "", 1900, func() (freer, error) { return AllocPinned(1900) }},
	}
	var mems []freer
	for _, c := range cases {
		m, err := c.alloc()
		if err != nil {
			t.Fatalf("%s of %d bytes: %v", c.allocator, c.size, err)
		}
		mems = append(mems, m)
	}
	samples := readMemoryProfile(t, "checkProfileAllocators")
	if len(samples) != len(cases) {
		t.Errorf("%d samples, want %d, one per allocation (none of the pools' chunks): %v", len(samples), len(cases), samples)
	}
	for _, c := range cases {
		i := slices.IndexFunc(samples, func(s memSample) bool { return s.size == int64(c.size) })
		if i < 0 {
			t.Errorf("%s: no sample of %d bytes", c.allocator, c.size)
			continue
		}
		if s := samples[i]; s.allocator != c.allocator || s.device != c.device || s.stream != c.stream || s.count != 1 {
			t.Errorf("%v, want one allocation from %s on %s, stream %q", s, c.allocator, c.device, c.stream)
		}
		if f := samples[i].funcs; len(f) == 0 || internalFrame(f[0]) || !strings.HasPrefix(f[0], pkgPrefix) {
			t.Errorf("%s: the stack %v does not begin with the call into the package", c.allocator, f)
		}
	}
	for i, m := range mems {
		if err := m.Free(); err != nil {
			t.Fatal(err)
		}
		if n := len(readMemoryProfile(t, "checkProfileAllocators")); n != len(cases)-i-1 {
			t.Errorf("after freeing %s's memory: %d samples, want %d", cases[i].allocator, n, len(cases)-i-1)
		}
	}
	if err := pool.FreeAllBlocks(); err != nil {
		t.Fatal(err)
	}
	if err := pinned.FreeAllBlocks(); err != nil {
		t.Fatal(err)
	}
	if err := DefaultPinnedMemoryPool().FreeAllBlocks(); err != nil {
		t.Fatal(err)
	}
	// The pools' chunks: segments of their upstream allocators, the
	// MemoryPool's two (one per stream), the pinned pools' one each.
	segments := map[string]int{}
	for _, e := range readTimeline(t) {
		if strings.HasPrefix(e.Action, "segment_") {
			segments[e.Action+" "+e.Allocator]++
		}
	}
	if want := map[string]int{"segment_alloc Device": 2, "segment_free Device": 2,
		"segment_alloc AllocPinnedUnpooled": 2, "segment_free AllocPinnedUnpooled": 2}; fmt.Sprint(segments) != fmt.Sprint(want) {
		t.Errorf("segment events %v, want %v", segments, want)
	}
}

// checkProfileDropped checks that memory dropped without Free stays in
// the profile until the package takes it back, and leaves it then.
func checkProfileDropped(t *testing.T) {
	recordMemory(t, nil)
	func() {
		if _, err := Device(0).Alloc(2222); err != nil {
			t.Fatal(err)
		}
	}()
	dropped := func() int {
		return len(slices.DeleteFunc(readMemoryProfile(t, "checkProfileDropped"), func(s memSample) bool { return s.size != 2222 }))
	}
	if n := dropped(); n != 1 {
		t.Fatalf("dropped memory: %d samples, want 1 until it is taken back", n)
	}
	for i := 0; i < 100 && !lost.any.Load(); i++ {
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	standInAlloc(t, 16) // takes back what was lost
	if n := dropped(); n != 0 {
		t.Errorf("dropped memory taken back: %d samples, want 0", n)
	}
}

// checkOutOfMemoryReports checks the reports of the driver's refusal, a
// MemoryAsyncPool's limit and a PinnedMemoryPool's limit against
// cuMemGetInfo and the pools' own statistics, and that the hook sees each
// error once.
func checkOutOfMemoryReports(t *testing.T) {
	recordMemory(t, nil)
	var seen []*OutOfMemoryError
	SetOutOfMemoryHook(func(e *OutOfMemoryError) { seen = append(seen, e) })
	defer SetOutOfMemoryHook(nil)
	standInAlloc(t, 3000) // the largest holder

	// 1 PiB: the stand-in's malloc fails, and so the driver.
	_, err := Device(0).Alloc(1 << 50)
	var e *OutOfMemoryError
	if !errors.As(err, &e) || e.Err == nil || !errors.Is(err, cudart.ErrorMemoryAllocation) {
		t.Fatalf("Device.Alloc of 1 PiB: %v, want an *OutOfMemoryError of the driver's", err)
	}
	free, total, err := Device(0).MemInfo()
	if err != nil || e.DeviceFree != free || e.DeviceTotal != total || total == 0 {
		t.Errorf("device memory %d of %d, want cuMemGetInfo's %d of %d (%v)", e.DeviceFree, e.DeviceTotal, free, total, err)
	}
	if len(e.Holders) == 0 || e.Holders[0].Bytes != 3000 ||
		!slices.ContainsFunc(e.Holders[0].Stack, func(f runtime.Frame) bool { return f.Function == pkgPrefix+"standInAlloc" }) {
		t.Errorf("holders %+v, want standInAlloc's 3000 bytes first", e.Holders)
	}
	if !strings.Contains(e.Error(), fmt.Sprintf("; device 0 has %s free of %s", byteSize(free), byteSize(total))) {
		t.Errorf("Error() = %q does not say the device's memory", e.Error())
	}

	// A MemoryAsyncPool's limit.
	async, err := NewMemoryAsyncPool(0)
	if err != nil {
		t.Fatal(err)
	}
	defer async.Close()
	if err := async.SetLimit(4096); err != nil {
		t.Fatal(err)
	}
	a, err := async.Alloc(3000)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Free()
	_, err = async.Alloc(2000)
	if !errors.As(err, &e) || e.Limit != 4096 || e.Held != 3000 || e.DeviceTotal != total {
		t.Fatalf("past the async pool's limit: %v, want an *OutOfMemoryError of its limit, with the device's memory", err)
	}
	want := PoolStats{Pool: async, Device: 0, UsedBytes: async.UsedBytes(), FreeBytes: async.FreeBytes(), TotalBytes: async.TotalBytes(),
		ActiveBlocks: -1, NFreeBlocks: -1, LargestFreeBlock: -1, Limit: 4096}
	if i := slices.IndexFunc(e.Pools, func(s PoolStats) bool { return s.Pool == async }); i < 0 || e.Pools[i] != want || want.UsedBytes != 3000 {
		t.Errorf("the async pool in the report: %+v, want %+v (3000 bytes used)", e.Pools, want)
	}

	// A PinnedMemoryPool's limit: host memory, no device to ask.
	pinned := NewPinnedMemoryPool()
	if err := pinned.SetLimit(1024); err != nil {
		t.Fatal(err)
	}
	_, err = pinned.Alloc(2048)
	if !errors.As(err, &e) || e.Device != CPUDevice || e.DeviceTotal != 0 || e.Holders != nil {
		t.Fatalf("past the pinned pool's limit: %v (%+v), want an *OutOfMemoryError of the host, nothing asked of a device, no holders", err, e)
	}
	if i := slices.IndexFunc(e.Pools, func(s PoolStats) bool { return s.Pool == pinned }); i < 0 || e.Pools[i].Limit != 1024 || e.Pools[i].Device != CPUDevice {
		t.Errorf("the pinned pool in the report: %+v", e.Pools)
	}
	if !strings.HasSuffix(err.Error(), "; the pools of host hold 0 bytes, 0 bytes in use and 0 bytes free") {
		t.Errorf("Error() = %q", err.Error())
	}
	if len(seen) != 3 {
		t.Errorf("the hook saw %d errors, want 3", len(seen))
	}
}

// BenchmarkMemoryProfile is the MemoryPool's hit path (Alloc and Free,
// over Go memory) with the allocation recorder off and on: the recorder's
// cost per allocation.
func BenchmarkMemoryProfile(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			StopMemoryProfile()
			if on {
				recordMemory(b, &MemoryProfileOptions{Events: 1000})
			}
			p, _ := newTestPool(b, 1<<30)
			mustAlloc(b, p, 1<<20).Free()
			b.ReportAllocs()
			for b.Loop() {
				m, err := p.Alloc(1 << 20)
				if err != nil {
					b.Fatal(err)
				}
				m.Free()
			}
		})
	}
}

// TestOutOfMemoryNestedPools checks that the summary of an
// *OutOfMemoryError counts the memory of a pool over another pool once:
// its chunks are blocks in use in the pool below.
func TestOutOfMemoryNestedPools(t *testing.T) {
	inner, _ := newTestPool(t, 1<<20)
	outer, err := NewMemoryPool(inner)
	if err != nil {
		t.Fatal(err)
	}
	if err := outer.SetLimit(64 << 10); err != nil {
		t.Fatal(err)
	}
	m := mustAlloc(t, outer, 64<<10)
	defer m.Free()
	_, err = outer.Alloc(1 << 10)
	var e *OutOfMemoryError
	if !errors.As(err, &e) {
		t.Fatalf("Alloc past the limit: %v, want an *OutOfMemoryError", err)
	}
	if i := slices.IndexFunc(e.Pools, func(s PoolStats) bool { return s.Pool == outer }); i < 0 || !outer.overPool {
		t.Fatalf("the report lacks the pool over a pool, or it is not marked: %+v", e.Pools)
	}
	held, used, free, _ := poolSums(e)
	sum := fmt.Sprintf("the pools of device 0 hold %s, %s in use and %s free", byteSize(held), byteSize(used), byteSize(free))
	if !strings.Contains(err.Error(), sum) {
		t.Errorf("Error() = %q, want %q: a pool over a pool counted once", err, sum)
	}
	// The two pools' own figures add up once outer's chunks count as its
	// blocks alone; those of all pools need not, as a GPU's async pools
	// read used and reserved bytes at two moments.
	own := &OutOfMemoryError{Device: e.Device}
	for _, s := range e.Pools {
		if s.Pool == inner || s.Pool == outer {
			own.Pools = append(own.Pools, s)
		}
	}
	if held, used, free, _ := poolSums(own); held != used+free || held != inner.TotalBytes() {
		t.Errorf("the pools hold %d, %d in use and %d free, want a sum of %d (inner's)", held, used, free, inner.TotalBytes())
	}
	if held != used+free {
		t.Logf("all pools of device 0: held %d, in use %d and free %d do not add up:\n%s", held, used, free, e.Report())
	}
}

// poolSums sums up the pools of e's device as Error should: a pool over a
// pool (outer's, other tests') counts its chunks as its blocks, not as
// the lower pool's blocks in use.
func poolSums(e *OutOfMemoryError) (held, used, free, largest int) {
	for _, s := range e.Pools {
		if s.Device != e.Device {
			continue
		}
		used, free, largest = used+s.UsedBytes, free+s.FreeBytes, max(largest, s.LargestFreeBlock)
		if p, ok := s.Pool.(*MemoryPool); ok && p.overPool {
			used -= s.TotalBytes
		} else {
			held += s.TotalBytes
		}
	}
	return held, used, free, largest
}
