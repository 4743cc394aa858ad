package linalg

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/gocuda/cuda/cublas"
	"github.com/gocuda/cuda/cudart"
	"github.com/gocuda/cuda/cusolver"
	"github.com/gocuda/cuda/cusparse"
	"github.com/gocuda/cuda/highlevel"
	"github.com/gocuda/cuda/internal/stubtest"
	"github.com/gocuda/cuda/internal/testsrc"
)

// stubCases are what TestStubHandles checks, each in a child process
// (TestStubHandlesChild) on the stand-in libraries.
var stubCases = []struct {
	name  string
	check func(t *testing.T)
}{
	{"ClearCaches during calls", checkClearDuringCalls},
	{"ClearCaches during a capture", checkClearDuringCapture},
	{"ClearCaches in a stream callback", checkClearInCallback},
	{"ClearCaches while graphs hold handles", checkGraphsHoldHandles},
	{"graphs closed at once and ClearCaches", checkGraphsClosedAtOnce},
}

// TestStubHandles runs linalg on stand-ins for the driver, cuBLAS,
// cuSOLVER and cuSPARSE (testdata/stublibs.c, with highlevel's stand-in
// driver) that record what the libraries forbid: a handle destroyed while
// a call of its library on the device is in progress (on it or on another
// handle) or while a stream capture is, a call on a destroyed handle. In
// each case highlevel.ClearCaches runs while goroutines call the package's
// functions and the handles' Do, in captures and stream callbacks: no call
// fails, nothing forbidden happens, and every handle created is destroyed
// or still in use.
func TestStubHandles(t *testing.T) {
	shim := filepath.Join("..", "internal", "driver")
	driverSrc := filepath.Join(shim, "testdata", "stubdriver.c")
	libsSrc := filepath.Join("testdata", "stublibs.c")
	testsrc.Require(t, driverSrc, stubHeaders, libsSrc)
	src, err := os.ReadFile(driverSrc)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, f := range []string{filepath.Join(shim, "testdata", "stubprocs.c"), libsSrc} {
		abs, err := filepath.Abs(f)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, abs)
	}
	lib := stubtest.Library(t, "libcuda.so.1", string(src), append([]string{"-I" + stubHeaders, "-I" + shim}, files...)...)
	for _, tc := range stubCases {
		t.Run(tc.name, func(t *testing.T) {
			stubtest.Child(t, "TestStubHandlesChild",
				"GOCUDA_CUDA="+lib, "GOCUDA_CUBLAS="+lib, "GOCUDA_CUSOLVER="+lib, "GOCUDA_CUSPARSE="+lib,
				"GOCUDA_CUDART="+filepath.Join(t.TempDir(), "no-libcudart.so"),
				"LINALG_STUB_CASE="+tc.name)
		})
	}
}

// TestStubHandlesChild is TestStubHandles's child; it skips unless run by
// it. Whatever the case, no violation may be recorded.
func TestStubHandlesChild(t *testing.T) {
	stubtest.SkipUnlessChild(t, "TestStubHandles")
	for _, tc := range stubCases {
		if tc.name == os.Getenv("LINALG_STUB_CASE") {
			tc.check(t)
			checkNoViolation(t)
			return
		}
	}
	t.Fatalf("no case %q", os.Getenv("LINALG_STUB_CASE"))
}

// The libraries, as the stand-in numbers them, and what it counts of
// each (stublibs.c's enum stub_field).
const (
	stubBLAS = iota
	stubSolver
	stubSparse
	stubLibs
)

const (
	fieldCreates = iota
	fieldDestroys
	fieldViolations
	fieldDestroyDuringCall
	fieldDestroyInCapture
	fieldUseAfterDestroy
	fieldConcurrentUse
	fieldNoContext
	fieldCalls
	fieldCaptures = 15
)

var libNames = [stubLibs]string{"cuBLAS", "cuSOLVER", "cuSPARSE"}

// stat reads a count of the stand-in's.
func stat(t *testing.T, lib, field int) int {
	t.Helper()
	var v int32
	if err := cublas.GetProperty(cudart.LibraryPropertyType(100+16*lib+field), &v); err != nil {
		t.Fatalf("reading the stand-in's count %d of %s: %v", field, libNames[lib], err)
	}
	return int(v)
}

// counts are the handles each library created and destroyed.
type counts [stubLibs][2]int

func handleCounts(t *testing.T) counts {
	t.Helper()
	var c counts
	for lib := range stubLibs {
		c[lib] = [2]int{stat(t, lib, fieldCreates), stat(t, lib, fieldDestroys)}
	}
	return c
}

func checkNoViolation(t *testing.T) {
	t.Helper()
	for lib := range stubLibs {
		if stat(t, lib, fieldViolations) == 0 {
			continue
		}
		for _, f := range []struct {
			field int
			what  string
		}{
			{fieldDestroyDuringCall, "destroys while a call of the library was in progress (or calls during a destroy)"},
			{fieldDestroyInCapture, "destroys while a stream capture was in progress"},
			{fieldUseAfterDestroy, "calls on a destroyed handle"},
			{fieldConcurrentUse, "calls on a handle another call was using"},
			{fieldNoContext, "calls with no context current"},
		} {
			if n := stat(t, lib, f.field); n > 0 {
				t.Errorf("%s: %d %s", libNames[lib], n, f.what)
			}
		}
	}
}

// handleState is, per library, what linalg holds: the live handle (0 or
// 1), the holds of graphs on it, and the stale handles parked until the
// graphs that hold them are gone.
type handleState struct{ live, holds, parked [stubLibs]int }

func handleStates() handleState {
	var st handleState
	add := func(lib int, l interface{ state() (bool, int, int) }) {
		live, holds, parked := l.state()
		if live {
			st.live[lib]++
		}
		st.holds[lib] += holds
		st.parked[lib] += parked
	}
	blasHandles.m.Range(func(_, v any) bool { add(stubBLAS, &v.(*BLAS).l); return true })
	solverHandles.m.Range(func(_, v any) bool { add(stubSolver, &v.(*Solver).l); return true })
	sparseHandles.m.Range(func(_, v any) bool { add(stubSparse, &v.(*Sparse).l); return true })
	return st
}

// state reports whether l has a live handle, the holds of graphs on it,
// and how many stale handles graphs still hold, parked.
func (l *lib[H]) state() (live bool, holds, parked int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.live {
		holds = int(l.cur.n.Load() / 2)
	}
	return l.live, holds, len(l.parked)
}

// liveHandles counts, per library, the live handles linalg holds.
func liveHandles() [stubLibs]int { return handleStates().live }

// balanced reports whether every handle created was destroyed or is held,
// live or parked: creates = destroys + live + parked, for each library.
func balanced(t *testing.T) (bool, string) {
	c, st := handleCounts(t), handleStates()
	ok, s := true, ""
	for lib := range stubLibs {
		ok = ok && c[lib][0] == c[lib][1]+st.live[lib]+st.parked[lib]
		s += fmt.Sprintf(" %s: %d created, %d destroyed, %d held, %d parked;",
			libNames[lib], c[lib][0], c[lib][1], st.live[lib], st.parked[lib])
	}
	return ok, s
}

// eventually waits up to 10 s for cond, which destroys put off to
// highlevel's poller meet.
func eventually(cond func() bool) bool {
	for start := time.Now(); time.Since(start) < 10*time.Second; time.Sleep(time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// fill sets the elements of a, whose device memory is the host's on the
// stand-in driver.
func fill[T any](t *testing.T, a *highlevel.Array[T], v T) {
	t.Helper()
	s := unsafe.Slice((*T)(a.Ptr()), a.Len())
	for i := range s {
		s[i] = v
	}
}

func elems[T any](a *highlevel.Array[T]) []T { return unsafe.Slice((*T)(a.Ptr()), a.Len()) }

func stubArray[T any](t *testing.T, n int, v T) *highlevel.Array[T] {
	t.Helper()
	a, err := highlevel.AllocArray[T](nil, n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Free() })
	fill(t, a, v)
	return a
}

// stubStream returns a non-blocking stream of device 0, closed at cleanup.
func stubStream(t *testing.T) *highlevel.Stream {
	t.Helper()
	s, err := highlevel.NewStream(0, &highlevel.StreamOptions{NonBlocking: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// checkClearDuringCalls runs goroutines that call Axpy, Dot, Gemv, Gemm
// and the handles' Do (on a BLAS, Solver and Sparse taken once, before
// the clears) in a loop, each on a stream of its own or the legacy default
// stream, while another calls highlevel.ClearCaches over and over: no call
// fails, each result is right, destroys happen meanwhile, and every handle
// created is destroyed or held; after a last ClearCaches, none is held.
func checkClearDuringCalls(t *testing.T) {
	d := highlevel.Device(0)
	b, err := BLASOf(d)
	if err != nil {
		t.Fatal(err)
	}
	sv, err := SolverOf(d)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := SparseOf(d)
	if err != nil {
		t.Fatal(err)
	}
	const workers, rounds, n = 6, 400, 32
	var wg sync.WaitGroup
	var calls atomic.Int64
	for w := range workers {
		var s *highlevel.Stream // the legacy default stream for the first
		if w > 0 {
			s = stubStream(t)
		}
		x, y, r := stubArray[float32](t, n, 1), stubArray[float32](t, n, 0), stubArray[float32](t, 1, 0)
		a, xv, yv := stubArray[float64](t, n*n, 1), stubArray[float64](t, n, 1), stubArray[float64](t, n, 0)
		c := stubArray[float32](t, 4*4, 0)
		wg.Go(func() {
			axpys := 0
			for i := range rounds {
				var err error
				switch i % 7 {
				case 0:
					err = Axpy(s, 1, x, y)
					axpys++
				case 1:
					if err = Dot(s, x, x, r); err == nil && elems(r)[0] != n {
						err = fmt.Errorf("Dot = %v, want %d", elems(r)[0], n)
					}
				case 2:
					if err = Gemv(s, NoTrans, n, n, 2, a, xv, 0, yv); err == nil && elems(yv)[n-1] != 2*n {
						err = fmt.Errorf("Gemv: y[%d] = %v, want %d", n-1, elems(yv)[n-1], 2*n)
					}
				case 3:
					if err = MatMul(s, x, x, c, 4, 4, 1); err == nil && elems(c)[15] != 1 {
						err = fmt.Errorf("MatMul: c[15] = %v, want 1", elems(c)[15])
					}
				case 4:
					err = b.Do(s, func(h cublas.Handle) error {
						var got cudart.Stream
						if err := cublas.GetStream(h, &got); err != nil || got != s.Handle() {
							return fmt.Errorf("the handle's stream is %#x (%v), want %#x", got, err, s.Handle())
						}
						return cublas.SetPointerMode(h, cublas.POINTER_MODE_DEVICE) // MatMul puts it back
					})
				case 5:
					err = sv.Do(s, func(h cusolver.Handle) error {
						var got cudart.Stream
						return cusolver.GetStream(h, &got)
					})
				case 6:
					err = sp.Do(s, func(h cusparse.Handle) error {
						var got cudart.Stream
						return cusparse.GetStream(h, &got)
					})
				}
				if err != nil {
					t.Errorf("goroutine %d, call %d: %v", w, i, err)
					return
				}
				calls.Add(1)
			}
			if got := elems(y)[n-1]; got != float32(axpys) {
				t.Errorf("goroutine %d: y = %v after %d Axpy, want %d", w, got, axpys, axpys)
			}
		})
	}
	done := make(chan struct{})
	var clears int
	cleared := make(chan struct{})
	go func() {
		defer close(cleared)
		for {
			select {
			case <-done:
				return
			default:
			}
			highlevel.ClearCaches()
			clears++
		}
	}()
	wg.Wait()
	close(done)
	<-cleared
	if t.Failed() {
		return
	}
	// The destroys a ClearCaches left to the goroutine that was destroying
	// (or a busy lock) end shortly.
	if !eventually(func() bool { ok, _ := balanced(t); return ok }) {
		_, s := balanced(t)
		t.Errorf("after %d calls and %d ClearCaches:%s", calls.Load(), clears, s)
	}
	c := handleCounts(t)
	for lib := range stubLibs {
		if c[lib][1] < 2 {
			t.Errorf("%s: %d handles destroyed during %d ClearCaches, want 2 or more", libNames[lib], c[lib][1], clears)
		}
	}
	highlevel.ClearCaches()
	if !eventually(func() bool { return liveHandles() == [stubLibs]int{} }) {
		t.Errorf("handles held after a last ClearCaches: %v", liveHandles())
	}
	if ok, s := balanced(t); !ok {
		t.Errorf("after a last ClearCaches:%s", s)
	}
	t.Logf("%d calls, %d ClearCaches; %v (created, destroyed)", calls.Load(), clears, handleCounts(t))
}

// checkClearDuringCapture calls highlevel.ClearCaches, many times, while a
// stream captures: no handle is destroyed then, the calls made meanwhile
// (in the capture and on another stream) use the handles there are, and
// once the capture ends each is parked, since the capture's graph holds
// it; the next call makes another, and once the graph is closed each
// parked handle is destroyed, once.
func checkClearDuringCapture(t *testing.T) {
	d := highlevel.Device(0)
	s := stubStream(t)
	other := stubStream(t)
	x, y := stubArray[float32](t, 8, 1), stubArray[float32](t, 8, 0)
	use := func(s *highlevel.Stream) {
		t.Helper()
		if err := Axpy(s, 1, x, y); err != nil {
			t.Fatal(err)
		}
		for _, do := range []func() error{
			func() error { v, _ := SolverOf(d); return v.Do(s, func(cusolver.Handle) error { return nil }) },
			func() error { p, _ := SparseOf(d); return p.Do(s, func(cusparse.Handle) error { return nil }) },
		} {
			if err := do(); err != nil {
				t.Fatal(err)
			}
		}
	}
	use(other)
	before := handleCounts(t)
	if err := s.BeginCapture(highlevel.CaptureRelaxed); err != nil {
		t.Fatal(err)
	}
	if n := stat(t, 0, fieldCaptures); n != 1 {
		t.Fatalf("the stand-in counts %d captures in progress, want 1", n)
	}
	use(s)
	for range 50 {
		highlevel.ClearCaches()
		use(other)
	}
	use(s)
	if c := handleCounts(t); c != before {
		t.Errorf("handles (created, destroyed) %v during the capture, %v before it: want none made or destroyed", c, before)
	}
	g, err := s.EndCapture()
	if err != nil {
		t.Fatal(err)
	}
	// The graph holds the handles its calls used: the clears park them.
	if !eventually(func() bool { return handleStates().parked == [stubLibs]int{1, 1, 1} }) {
		t.Errorf("handles parked after the capture: %v, want one of each library", handleStates().parked)
	}
	use(other)
	want := before
	for lib := range stubLibs {
		want[lib][0]++
	}
	if c := handleCounts(t); c != want {
		t.Errorf("handles (created, destroyed) %v after a call, want %v: new ones, none destroyed while the graph lives", c, want)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	for lib := range stubLibs {
		want[lib][1]++
	}
	if !eventually(func() bool { return handleCounts(t) == want }) {
		t.Errorf("handles (created, destroyed) %v after the graph's Close, want %v: each destroyed once", handleCounts(t), want)
	}
}

// checkClearInCallback calls highlevel.ClearCaches from a stream callback,
// where a destroy, which synchronizes the device, cannot be made: it
// returns without destroying, and the handles are destroyed soon after.
func checkClearInCallback(t *testing.T) {
	d := highlevel.Device(0)
	s, err := highlevel.NewStream(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	x, y := stubArray[float32](t, 8, 1), stubArray[float32](t, 8, 0)
	if err := Axpy(s, 1, x, y); err != nil {
		t.Fatal(err)
	}
	before := handleCounts(t)
	done := make(chan counts, 1)
	if err := s.LaunchHostFunc(func() {
		highlevel.ClearCaches()
		done <- handleCounts(t)
	}); err != nil {
		t.Fatal(err)
	}
	select {
	case in := <-done:
		if in != before {
			t.Errorf("handles (created, destroyed) %v in the callback, %v before it: a destroy ran there", in, before)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ClearCaches in a stream callback has not returned after 10 s")
	}
	want := before
	want[stubBLAS][1]++
	if !eventually(func() bool { return handleCounts(t) == want }) {
		t.Errorf("handles (created, destroyed) %v after the callback, want %v", handleCounts(t), want)
	}
	if err := Axpy(s, 1, x, y); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
}

// useAll calls each library on s: Axpy and a BLAS.Do, a Solver.Do and a
// Sparse.Do.
func useAll(t *testing.T, s *highlevel.Stream, x, y *highlevel.Array[float32]) {
	t.Helper()
	if err := callAll(s, x, y); err != nil {
		t.Fatal(err)
	}
}

// callAll is useAll for goroutines other than the test's.
func callAll(s *highlevel.Stream, x, y *highlevel.Array[float32]) error {
	d := highlevel.Device(0)
	for _, do := range []func() error{
		func() error { return Axpy(s, 1, x, y) },
		func() error { b, _ := BLASOf(d); return b.Do(s, func(cublas.Handle) error { return nil }) },
		func() error { v, _ := SolverOf(d); return v.Do(s, func(cusolver.Handle) error { return nil }) },
		func() error { p, _ := SparseOf(d); return p.Do(s, func(cusparse.Handle) error { return nil }) },
	} {
		if err := do(); err != nil {
			return err
		}
	}
	return nil
}

// checkGraphsHoldHandles captures calls of each library into a graph,
// whose work uses the handles' internal workspaces, and instantiates it:
// a ClearCaches then destroys none of those handles while the Graph or
// its GraphExec lives, but parks them, and the calls after it create new
// ones; once both are closed, the parked handles are destroyed. Calls
// outside captures hold nothing: a ClearCaches destroys their handles at
// once, parking none.
func checkGraphsHoldHandles(t *testing.T) {
	s := stubStream(t)
	other := stubStream(t)
	x, y := stubArray[float32](t, 8, 1), stubArray[float32](t, 8, 0)
	none := [stubLibs]int{}
	check := func(when string, want counts, holds, parked [stubLibs]int) {
		t.Helper()
		if c, st := handleCounts(t), handleStates(); c != want || st.holds != holds || st.parked != parked {
			t.Errorf("%s: handles (created, destroyed) %v, holds %v, parked %v; want %v, holds %v, parked %v",
				when, c, st.holds, st.parked, want, holds, parked)
		}
		if ok, s := balanced(t); !ok {
			t.Errorf("%s:%s", when, s)
		}
	}
	add := func(c *counts, field int) {
		for lib := range stubLibs {
			c[lib][field]++
		}
	}

	useAll(t, other, x, y)
	useAll(t, nil, x, y)
	want := handleCounts(t)
	check("after calls outside captures", want, none, none)
	highlevel.ClearCaches()
	add(&want, 1)
	check("after a ClearCaches that followed calls outside captures", want, none, none)

	if err := s.BeginCapture(highlevel.CaptureRelaxed); err != nil {
		t.Fatal(err)
	}
	useAll(t, s, x, y)
	useAll(t, s, x, y)
	add(&want, 0)
	g, err := s.EndCapture()
	if err != nil {
		t.Fatal(err)
	}
	one := [stubLibs]int{1, 1, 1}
	check("after a capture", want, one, none)
	e, err := g.Instantiate(nil)
	if err != nil {
		g.Close()
		t.Fatal(err)
	}
	check("after Instantiate", want, [stubLibs]int{2, 2, 2}, none)

	highlevel.ClearCaches()
	check("after a ClearCaches while the Graph and its GraphExec live", want, none, one)
	useAll(t, other, x, y)
	add(&want, 0)
	check("after calls that followed", want, none, one)
	highlevel.ClearCaches()
	add(&want, 1)
	check("after a ClearCaches of the handles of those calls", want, none, one)
	useAll(t, other, x, y)
	add(&want, 0)
	if err := e.Launch(other); err != nil {
		t.Fatal(err)
	}

	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	check("after the Graph's Close", want, none, one)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	add(&want, 1)
	if !eventually(func() bool { return handleCounts(t) == want && handleStates().parked == none }) {
		t.Errorf("the parked handles are not destroyed 10 s after the GraphExec's Close")
	}
	check("after the GraphExec's Close", want, none, none)
	if err := other.Synchronize(); err != nil {
		t.Fatal(err)
	}
}

// checkGraphsClosedAtOnce makes many graphs, each captured with handles of
// its own (a ClearCaches parks those after each capture), while other
// goroutines capture, call and clear; then closes them all at once, from
// as many goroutines, whose last Unholds race for the destroys: each
// parked handle is destroyed, none is left parked, and every handle
// created is destroyed or live. It does so in several batches, since the
// races it is after are not met each time.
func checkGraphsClosedAtOnce(t *testing.T) {
	const workers, rounds, batches, graphs = 4, 50, 4, 48
	var wg sync.WaitGroup
	done := make(chan struct{})
	for range workers {
		s := stubStream(t)
		x, y := stubArray[float32](t, 8, 1), stubArray[float32](t, 8, 0)
		wg.Go(func() {
			for i := range rounds {
				if err := callAll(s, x, y); err != nil {
					t.Error(err)
					return
				}
				if err := s.BeginCapture(highlevel.CaptureRelaxed); err != nil {
					t.Error(err)
					return
				}
				err := callAll(s, x, y)
				g, endErr := s.EndCapture()
				if err = cmp.Or(err, endErr); err != nil {
					if g != nil {
						g.Close()
					}
					t.Error(err)
					return
				}
				e, err := g.Instantiate(nil)
				if err != nil {
					g.Close()
					t.Error(err)
					return
				}
				if err := e.Launch(s); err != nil {
					t.Error(err)
				}
				first, second := g.Close, e.Close
				if i%2 == 1 {
					first, second = second, first
				}
				if err := first(); err != nil {
					t.Error(err)
				}
				if err := second(); err != nil {
					t.Error(err)
				}
			}
		})
	}
	cleared := make(chan struct{})
	go func() {
		defer close(cleared)
		for {
			select {
			case <-done:
				return
			default:
				highlevel.ClearCaches()
			}
		}
	}()
	wg.Wait()
	close(done)
	<-cleared
	if t.Failed() {
		return
	}
	// A clear may be left to a goroutine that was destroying meanwhile.
	if !eventually(func() bool { ok, _ := balanced(t); return ok && handleStates().parked == [stubLibs]int{} }) {
		_, s := balanced(t)
		t.Errorf("10 s after the captures and ClearCaches:%s", s)
	}

	s := stubStream(t)
	x, y := stubArray[float32](t, 8, 1), stubArray[float32](t, 8, 0)
	for batch := range batches {
		var held []*highlevel.Graph
		for range graphs {
			if err := s.BeginCapture(highlevel.CaptureRelaxed); err != nil {
				t.Fatal(err)
			}
			useAll(t, s, x, y)
			g, err := s.EndCapture()
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, g)
			highlevel.ClearCaches()
			// Parked, unless the clear was left to another goroutine:
			// the next graph must not use it.
			if !eventually(func() bool { return liveHandles() == [stubLibs]int{} }) {
				t.Fatalf("handles live 10 s after a ClearCaches: %v", liveHandles())
			}
		}
		if !eventually(func() bool { return handleStates().parked == [stubLibs]int{graphs, graphs, graphs} }) {
			t.Fatalf("parked handles %v after %d graphs, each followed by a ClearCaches; want %d of each library",
				handleStates().parked, graphs, graphs)
		}
		start := make(chan struct{})
		for _, g := range held {
			wg.Go(func() {
				<-start
				if err := g.Close(); err != nil {
					t.Error(err)
				}
			})
		}
		close(start)
		wg.Wait()
		if !eventually(func() bool { ok, _ := balanced(t); return ok && handleStates().parked == [stubLibs]int{} }) {
			_, s := balanced(t)
			t.Fatalf("10 s after the Close of batch %d of graphs:%s", batch, s)
		}
	}
}
