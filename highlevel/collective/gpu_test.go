package collective

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gocuda/cuda/highlevel"
	"github.com/gocuda/cuda/internal/gpuprobe"
	"github.com/gocuda/cuda/internal/randomtest"
	"github.com/gocuda/cuda/nccl"
)

// The GPU tests need libnccl.so.2 and two GPUs. Every wait runs under a
// communicator Timeout, so a rank that fails makes the test fail, not
// hang.

// gpuTimeout is the Timeout of the tests' communicators.
const gpuTimeout = 2 * time.Minute

// requireGPUs ends the test as gpuprobe.Require does where the machine has
// no GPU, and as gpuprobe.RequireLibrary does where NCCL does not load (a
// skip, but a failure with the loader's error where $GOCUDA_TEST_GPU=1);
// it skips it with fewer than atLeast devices, and returns the number of
// devices.
func requireGPUs(t testing.TB, atLeast int) int {
	t.Helper()
	gpuprobe.Require(t)
	gpuprobe.RequireLibrary(t, "NCCL", nccl.Load())
	n, err := highlevel.DeviceCount()
	if err != nil {
		t.Fatal(err)
	}
	if n < atLeast {
		t.Skipf("needs %d CUDA devices: count %d", atLeast, n)
	}
	return n
}

// TestGPURandomPrograms runs the stand-ins' random programs on NCCL, with
// communicators of one rank on device 0 (GOCUDA_COLLECTIVE_SEEDS programs,
// 10 unless set; one takes 6 s on an H200, NCCL's splits most of it):
// NCCL's calls of goroutines sharing a communicator, one operation at a
// time, the results of their all-reduces, and aborts and closes among
// them.
func TestGPURandomPrograms(t *testing.T) {
	requireGPUs(t, 1)
	if err := randomPrograms(t, randomtest.Int(t, "GOCUDA_COLLECTIVE_SEEDS", 10), false); err != nil {
		t.Fatal(err)
	}
}

// newComms makes a communicator over every device, closed at cleanup.
func newComms(t *testing.T, opts *Options) []*Comm {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), gpuTimeout)
	defer cancel()
	comms, err := NewComms(ctx, nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Those aborted by the test return ErrClosed.
		for _, err := range unjoin(CloseAll(comms)) {
			if !errors.Is(err, highlevel.ErrClosed) {
				t.Errorf("Close: %v", err)
			}
		}
	})
	for r, c := range comms {
		if c.Rank() != r || c.Size() != len(comms) || c.Device() != highlevel.Device(r) {
			t.Fatalf("comm %d: rank %d of %d on %v", r, c.Rank(), c.Size(), c.Device())
		}
	}
	return comms
}

// unjoin returns the errors errors.Join joined.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err != nil {
		return []error{err}
	}
	return nil
}

// value is rank r's element i: 1 to 4, small enough that every sum and
// product the tests make is exact in every type (or wraps the same way in
// Go as on the GPU).
func value[T Elem](r, i int) T { return T(1 + (r+i)%4) }

func isFloat[T Elem]() bool {
	k := reflect.TypeFor[T]().Kind()
	return k == reflect.Float32 || k == reflect.Float64
}

// reduced is element i of op over n ranks' values.
func reduced[T Elem](op ReduceOp, n, i int) T {
	acc := value[T](0, i)
	for r := 1; r < n; r++ {
		v := value[T](r, i)
		switch op {
		case Sum, Avg:
			acc += v
		case Prod:
			acc *= v
		case Max:
			acc = max(acc, v)
		case Min:
			acc = min(acc, v)
		}
	}
	if op == Avg {
		if isFloat[T]() {
			return T(float64(acc) / float64(n))
		}
		return acc / T(n)
	}
	return acc
}

// near compares exactly, but for the mean of floats, which NCCL computes
// by premultiplying.
func near[T Elem](op ReduceOp, got, want T) bool {
	if op != Avg || !isFloat[T]() {
		return got == want
	}
	return math.Abs(float64(got)-float64(want)) <= 1e-6*math.Abs(float64(want))+1e-6
}

func fill[T Elem](n int, f func(i int) T) []T {
	s := make([]T, n)
	for i := range s {
		s[i] = f(i)
	}
	return s
}

// check compares got with want(i).
func check[T Elem](what string, op ReduceOp, got []T, want func(i int) T) error {
	bad, first := 0, ""
	for i, g := range got {
		if w := want(i); !near(op, g, w) {
			if bad == 0 {
				first = fmt.Sprintf("element %d is %v, want %v", i, g, w)
			}
			bad++
		}
	}
	if bad > 0 {
		return fmt.Errorf("%s: %d of %d elements wrong, the first: %s", what, bad, len(got), first)
	}
	return nil
}

// rank is one rank's part of a test: its communicator, a stream on its
// device and the arrays it made, freed by free.
type rank struct {
	c      *Comm
	s      *highlevel.Stream
	ctx    context.Context
	arrays []interface{ Free() error }
}

func newRank(ctx context.Context, c *Comm) (*rank, error) {
	s, err := highlevel.NewStream(c.Device(), nil)
	if err != nil {
		return nil, err
	}
	return &rank{c: c, s: s, ctx: ctx}, nil
}

// newRanks returns a rank for each of comms, freed when the test ends.
func newRanks(t *testing.T, ctx context.Context, comms []*Comm) []*rank {
	ranks := make([]*rank, len(comms))
	for i, c := range comms {
		r, err := newRank(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		ranks[i] = r
		t.Cleanup(func() {
			if err := r.free(); err != nil {
				t.Error(err)
			}
		})
	}
	return ranks
}

func (r *rank) free() error {
	var errs []error
	for _, a := range r.arrays {
		errs = append(errs, a.Free())
	}
	return errors.Join(append(errs, r.s.Close())...)
}

func from[T Elem](r *rank, host []T) (*highlevel.Array[T], error) {
	a, err := highlevel.ArrayFrom(highlevel.Allocator(r.c.Device()), host)
	if err == nil {
		r.arrays = append(r.arrays, a)
	}
	return a, err
}

// run runs calls and waits for them.
func (r *rank) run(calls ...Call) error {
	if err := Run(calls...); err != nil {
		return err
	}
	return r.c.Wait(r.ctx, r.s)
}

// back waits for nothing more and copies a to the host.
func back[T Elem](a *highlevel.Array[T]) ([]T, error) { return a.ToHost() }

// collectives checks every collective on one rank for element type T,
// count elements a rank, against the host: it is what each rank of every
// test runs, in one process or in several.
func collectives[T Elem](r *rank, count int) error {
	c, n, me := r.c, r.c.Size(), r.c.Rank()
	typ := reflect.TypeFor[T]().String()
	mine := fill(count, func(i int) T { return value[T](me, i) })
	nan := fill(count, func(int) T { return T(0) })
	for _, op := range []ReduceOp{Sum, Prod, Max, Min, Avg} {
		// Out of place, then in place.
		send, err := from(r, mine)
		if err != nil {
			return err
		}
		recv, err := from(r, nan)
		if err != nil {
			return err
		}
		if err := r.run(AllReduce(r.s, c, send, recv, op)); err != nil {
			return err
		}
		want := func(i int) T { return reduced[T](op, n, i) }
		got, err := back(recv)
		if err != nil {
			return err
		}
		if err := check(fmt.Sprintf("all-reduce %v of %s", op, typ), op, got, want); err != nil {
			return err
		}
		if got, err = back(send); err != nil {
			return err
		}
		if err := check("the out-of-place all-reduce's send", Sum, got, func(i int) T { return mine[i] }); err != nil {
			return err
		}
		if err := r.run(AllReduce(r.s, c, send, send, op)); err != nil {
			return err
		}
		if got, err = back(send); err != nil {
			return err
		}
		if err := check(fmt.Sprintf("in-place all-reduce %v of %s", op, typ), op, got, want); err != nil {
			return err
		}

		// Reduce to the last rank, reduce-scatter.
		recv2, err := from(r, nan)
		if err != nil {
			return err
		}
		if err := r.run(Reduce(r.s, c, send0(r, mine), recv2, op, n-1)); err != nil {
			return err
		}
		if me == n-1 {
			if got, err = back(recv2); err != nil {
				return err
			}
			if err := check(fmt.Sprintf("reduce %v of %s", op, typ), op, got, want); err != nil {
				return err
			}
		}
		full, err := from(r, fill(count*n, func(i int) T { return value[T](me, i) }))
		if err != nil {
			return err
		}
		block, err := from(r, nan)
		if err != nil {
			return err
		}
		if err := r.run(ReduceScatter(r.s, c, full, block, op)); err != nil {
			return err
		}
		if got, err = back(block); err != nil {
			return err
		}
		if err := check(fmt.Sprintf("reduce-scatter %v of %s", op, typ), op, got, func(i int) T { return reduced[T](op, n, me*count+i) }); err != nil {
			return err
		}
	}

	// Broadcast from the last rank, out of place and in place.
	root := n - 1
	recv, err := from(r, nan)
	if err != nil {
		return err
	}
	if err := r.run(Broadcast(r.s, c, send0(r, mine), recv, root)); err != nil {
		return err
	}
	rootVal := func(i int) T { return value[T](root, i) }
	got, err := back(recv)
	if err != nil {
		return err
	}
	if err := check("broadcast of "+typ, Sum, got, rootVal); err != nil {
		return err
	}
	inPlace, err := from(r, mine)
	if err != nil {
		return err
	}
	if err := r.run(Broadcast(r.s, c, inPlace, inPlace, root)); err != nil {
		return err
	}
	if got, err = back(inPlace); err != nil {
		return err
	}
	if err := check("in-place broadcast of "+typ, Sum, got, rootVal); err != nil {
		return err
	}

	// All-gather, out of place and in place.
	gathered := func(i int) T { return value[T](i/count, i%count) }
	all, err := from(r, fill(count*n, func(int) T { return 0 }))
	if err != nil {
		return err
	}
	if err := r.run(AllGather(r.s, c, send0(r, mine), all)); err != nil {
		return err
	}
	if got, err = back(all); err != nil {
		return err
	}
	if err := check("all-gather of "+typ, Sum, got, gathered); err != nil {
		return err
	}
	all2, err := from(r, fill(count*n, func(i int) T {
		if i/count == me {
			return value[T](me, i%count)
		}
		return 0
	}))
	if err != nil {
		return err
	}
	part, err := all2.Slice(me*count, (me+1)*count)
	if err != nil {
		return err
	}
	if err := r.run(AllGather(r.s, c, part, all2)); err != nil {
		return err
	}
	if got, err = back(all2); err != nil {
		return err
	}
	if err := check("in-place all-gather of "+typ, Sum, got, gathered); err != nil {
		return err
	}

	// A ring of sends and receives, each rank's pair one group.
	next, prev := (me+1)%n, (me+n-1)%n
	in, err := from(r, nan)
	if err != nil {
		return err
	}
	if err := r.run(Send(r.s, c, send0(r, mine), next), Recv(r.s, c, in, prev)); err != nil {
		return err
	}
	if got, err = back(in); err != nil {
		return err
	}
	return check("send and recv of "+typ, Sum, got, func(i int) T { return value[T](prev, i) })
}

// send0 is a new array holding host: the send buffer of a call whose
// earlier one was in place.
func send0[T Elem](r *rank, host []T) *highlevel.Array[T] {
	a, err := from(r, host)
	if err != nil {
		return nil // the call refuses a nil array, which reports it
	}
	return a
}

// everyType runs collectives for every element type, count elements.
func everyType(r *rank, count int) error {
	for _, f := range []func(*rank, int) error{
		collectives[float32], collectives[float64], collectives[int8], collectives[uint8],
		collectives[int32], collectives[uint32], collectives[int64], collectives[uint64],
		collectives[int], collectives[uint],
	} {
		if err := f(r, count); err != nil {
			return err
		}
	}
	return nil
}

// onEach runs fn for every communicator, each with its rank, in RunEach.
func onEach(comms []*Comm, fn func(r *rank) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), gpuTimeout)
	defer cancel()
	return RunEach(comms, func(c *Comm) error {
		r, err := newRank(ctx, c)
		if err != nil {
			return err
		}
		err = fn(r)
		return errors.Join(err, r.free())
	})
}

// TestGPUCollectivesOneProcess runs every collective for every type over
// every GPU of the process, a goroutine per rank, with non-blocking and
// with blocking communicators.
func TestGPUCollectivesOneProcess(t *testing.T) {
	requireGPUs(t, 2)
	for _, blocking := range []bool{false, true} {
		t.Run(fmt.Sprintf("blocking=%v", blocking), func(t *testing.T) {
			collectivesOneProcess(t, &Options{Timeout: gpuTimeout, Blocking: blocking})
		})
	}
}

func collectivesOneProcess(t *testing.T, opts *Options) {
	comms := newComms(t, opts)
	// 1003 is no multiple of NCCL's chunks: the tail is exercised.
	if err := onEach(comms, func(r *rank) error { return everyType(r, 1003) }); err != nil {
		t.Fatal(err)
	}
	// A larger all-reduce, past NCCL's small-message protocols.
	if err := onEach(comms, func(r *rank) error {
		const count = 1<<20 + 3
		mine := fill(count, func(i int) float32 { return value[float32](r.c.Rank(), i) })
		a, err := from(r, mine)
		if err != nil {
			return err
		}
		if err := r.run(AllReduce(r.s, r.c, a, a, Sum)); err != nil {
			return err
		}
		got, err := a.ToHost()
		if err != nil {
			return err
		}
		return check("all-reduce of 1 Mi float32", Sum, got, func(i int) float32 { return reduced[float32](Sum, r.c.Size(), i) })
	}); err != nil {
		t.Fatal(err)
	}
}

// TestGPUGroupOneGoroutine queues every rank's all-reduce, and a ring of
// sends, from one goroutine, each as one Run: NCCL's group.
func TestGPUGroupOneGoroutine(t *testing.T) {
	requireGPUs(t, 2)
	comms := newComms(t, &Options{Timeout: gpuTimeout})
	n := len(comms)
	ctx, cancel := context.WithTimeout(context.Background(), gpuTimeout)
	defer cancel()
	ranks := newRanks(t, ctx, comms)
	const count = 4099
	as := make([]*highlevel.Array[int32], n)
	ins := make([]*highlevel.Array[int32], n)
	var reduce, ring []Call
	for i, r := range ranks {
		var err error
		if as[i], err = from(r, fill(count, func(j int) int32 { return value[int32](i, j) })); err != nil {
			t.Fatal(err)
		}
		if ins[i], err = from(r, make([]int32, count)); err != nil {
			t.Fatal(err)
		}
		reduce = append(reduce, AllReduce(r.s, r.c, as[i], as[i], Max))
		ring = append(ring, Send(r.s, r.c, as[i], (i+1)%n), Recv(r.s, r.c, ins[i], (i+n-1)%n))
	}
	for _, group := range [][]Call{reduce, ring} {
		if err := Run(group...); err != nil {
			t.Fatal(err)
		}
		for _, r := range ranks {
			if err := r.c.Wait(ctx, r.s); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range ranks {
		for what, a := range map[string]*highlevel.Array[int32]{"all-reduce": as[i], "recv": ins[i]} {
			got, err := a.ToHost()
			if err != nil {
				t.Fatal(err)
			}
			if err := check(fmt.Sprintf("rank %d's %s", i, what), Max, got, func(j int) int32 { return reduced[int32](Max, n, j) }); err != nil {
				t.Error(err)
			}
		}
	}
}

// TestGPUGroupCaptured captures one group of all-reduces over every rank's
// stream, each stream capturing into a graph of its own, then launches the
// graphs. Run entered the streams one by one, and the second capturing
// stream waited for the first's capture lock forever.
func TestGPUGroupCaptured(t *testing.T) {
	requireGPUs(t, 2)
	comms := newComms(t, &Options{Timeout: gpuTimeout})
	n := len(comms)
	ctx, cancel := context.WithTimeout(context.Background(), gpuTimeout)
	defer cancel()
	const count = 1031
	ranks := newRanks(t, ctx, comms)
	as := make([]*highlevel.Array[float32], n)
	var group []Call
	for i, r := range ranks {
		var err error
		if as[i], err = from(r, fill(count, func(j int) float32 { return value[float32](i, j) })); err != nil {
			t.Fatal(err)
		}
		group = append(group, AllReduce(r.s, r.c, as[i], as[i], Sum))
	}
	for _, r := range ranks {
		if err := r.s.Synchronize(); err != nil { // the arrays' copies
			t.Fatal(err)
		}
		if err := r.s.BeginCapture(highlevel.CaptureRelaxed); err != nil {
			t.Fatal(err)
		}
	}
	if err := runCaptured(group); err != nil {
		t.Fatal(err)
	}
	execs := instantiateCaptures(t, ranks)
	for i, r := range ranks {
		if err := execs[i].Launch(r.s); err != nil {
			t.Fatal(err)
		}
	}
	for i, r := range ranks {
		if err := r.c.Wait(ctx, r.s); err != nil {
			t.Fatal(err)
		}
		got, err := as[i].ToHost()
		if err != nil {
			t.Fatal(err)
		}
		if err := check(fmt.Sprintf("rank %d's captured all-reduce", i), Sum, got, func(j int) float32 { return reduced[float32](Sum, n, j) }); err != nil {
			t.Error(err)
		}
	}
}

// TestGPUArgumentsOnDevice checks what needs real arrays: lengths that do
// not fit, and an array of another device.
func TestGPUArgumentsOnDevice(t *testing.T) {
	requireGPUs(t, 2)
	comms := newComms(t, nil)
	c := comms[0]
	a3, err := highlevel.AllocArray[float32](highlevel.Device(0), 3)
	if err != nil {
		t.Fatal(err)
	}
	defer a3.Free()
	a4, err := highlevel.AllocArray[float32](highlevel.Device(0), 4)
	if err != nil {
		t.Fatal(err)
	}
	defer a4.Free()
	other, err := highlevel.AllocArray[float32](highlevel.Device(1), 3)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Free()
	s1, err := highlevel.NewStream(1, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Close()
	for _, tc := range []struct {
		name string
		call Call
		want error
	}{
		{"all-reduce of 3 into 4", AllReduce(nil, c, a3, a4, Sum), ErrConfig},
		{"all-gather into 4", AllGather(nil, c, a3, a4), ErrConfig},
		{"reduce-scatter from 4", ReduceScatter(nil, c, a4, a3, Sum), ErrConfig},
		{"broadcast from the root of 4 into 3", Broadcast(nil, c, a4, a3, 0), ErrConfig},
		{"an array of device 1", AllReduce(nil, c, other, other, Sum), nil},
		{"a stream of device 1", AllReduce(s1, c, a3, a3, Sum), nil},
	} {
		err := Run(tc.call)
		if err == nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want an error wrapping %v", tc.name, err, tc.want)
		}
	}
	freed, err := highlevel.AllocArray[float32](highlevel.Device(0), 3)
	if err != nil {
		t.Fatal(err)
	}
	freed.Free()
	if err := Run(AllReduce(nil, c, freed, freed, Sum)); !errors.Is(err, highlevel.ErrFreed) {
		t.Errorf("all-reduce of freed memory: %v, want ErrFreed", err)
	}
}

// TestGPUSplit splits the ranks by parity and all-reduces in each half,
// for communicators with and without Options.Blocking.
func TestGPUSplit(t *testing.T) {
	requireGPUs(t, 2)
	for _, tc := range []struct{ blocking, subBlocking bool }{{false, false}, {true, true}, {true, false}, {false, true}} {
		t.Run(fmt.Sprintf("blocking=%v,%v", tc.blocking, tc.subBlocking), func(t *testing.T) {
			split(t, &Options{Timeout: gpuTimeout, Blocking: tc.blocking}, &Options{Timeout: gpuTimeout, Blocking: tc.subBlocking})
		})
	}
}

func split(t *testing.T, opts, subOpts *Options) {
	comms := newComms(t, opts)
	n := len(comms)
	if err := onEach(comms, func(r *rank) error {
		me := r.c.Rank()
		color := me % 2
		if me == n-1 && n > 2 {
			color = NoColor
		}
		sub, err := r.c.Split(r.ctx, color, -me, subOpts)
		if err != nil {
			return err
		}
		if color == NoColor {
			if sub != nil {
				return errors.New("NoColor gave a communicator")
			}
			return nil
		}
		defer sub.Close()
		var members []int
		for i := range n {
			if i%2 == color && (i != n-1 || n <= 2) {
				members = append(members, i)
			}
		}
		if sub.Size() != len(members) || sub.Device() != r.c.Device() {
			return fmt.Errorf("split: rank %d of %d on %v, want %d ranks", sub.Rank(), sub.Size(), sub.Device(), len(members))
		}
		// key -rank ranks them backwards.
		if want := len(members) - 1 - slicesIndex(members, me); sub.Rank() != want {
			return fmt.Errorf("split: rank %d, want %d", sub.Rank(), want)
		}
		a, err := from(r, []int64{int64(me)})
		if err != nil {
			return err
		}
		if err := Run(AllReduce(r.s, sub, a, a, Sum)); err != nil {
			return err
		}
		if err := sub.Wait(r.ctx, r.s); err != nil {
			return err
		}
		got, err := a.ToHost()
		if err != nil {
			return err
		}
		var want int64
		for _, m := range members {
			want += int64(m)
		}
		if got[0] != want {
			return fmt.Errorf("split all-reduce: %d, want %d", got[0], want)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func slicesIndex(s []int, v int) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// TestGPUFailingRankAborts: one goroutine of RunEach fails (an error, a
// panic) before its all-reduce; the others, whose all-reduce waits for it,
// return ErrAborted at once rather than after the two minutes' Timeout.
func TestGPUFailingRankAborts(t *testing.T) {
	requireGPUs(t, 2)
	for _, how := range []string{"error", "panic"} {
		t.Run(how, func(t *testing.T) {
			comms := newComms(t, &Options{Timeout: gpuTimeout})
			t0 := time.Now()
			var mu sync.Mutex
			others := map[int]error{}
			err := onEach(comms, func(r *rank) error {
				if r.c.Rank() == 0 {
					time.Sleep(200 * time.Millisecond) // the others are waiting
					if how == "panic" {
						panic("rank 0 gives up")
					}
					return errors.New("rank 0 gives up")
				}
				a, err := from(r, []float32{1, 2, 3})
				if err != nil {
					return err
				}
				err = r.run(AllReduce(r.s, r.c, a, a, Sum))
				mu.Lock()
				others[r.c.Rank()] = err
				mu.Unlock()
				return err
			})
			if took := time.Since(t0); took > gpuTimeout/2 {
				t.Errorf("took %v: the others waited out their timeout", took)
			}
			var pe *highlevel.PanicError
			if how == "panic" && !errors.As(err, &pe) {
				t.Errorf("RunEach: %v, want a *highlevel.PanicError", err)
			}
			for r, err := range others {
				if !errors.Is(err, ErrAborted) {
					t.Errorf("rank %d: %v, want an error wrapping ErrAborted", r, err)
				}
			}
			for _, c := range comms {
				if err := Run(AllReduce(nil, c, &highlevel.Array[float32]{}, &highlevel.Array[float32]{}, Sum)); !errors.Is(err, highlevel.ErrClosed) {
					t.Errorf("rank %d after the abort: %v, want ErrClosed", c.Rank(), err)
				}
			}
		})
	}
}

// TestGPUTimeout: rank 1 all-reduces alone; its wait (or Run) gives up
// after the communicator's Timeout and aborts it.
func TestGPUTimeout(t *testing.T) {
	requireGPUs(t, 2)
	const timeout = 3 * time.Second
	comms := newComms(t, &Options{Timeout: timeout})
	ctx, cancel := context.WithTimeout(context.Background(), gpuTimeout)
	defer cancel()
	r, err := newRank(ctx, comms[1])
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	a, err := from(r, []float32{1})
	if err == nil {
		err = r.run(AllReduce(r.s, r.c, a, a, Sum))
	}
	took := time.Since(t0)
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, ErrAborted) {
		t.Errorf("lone all-reduce: %v, want an error wrapping ErrTimeout and ErrAborted", err)
	}
	// The Timeout bounds the wait from below too: Comm.Wait, and Run's
	// wait for NCCL's background work, give up once it has passed since
	// they began, which was after t0. The margin is for coarse clocks;
	// the bound above is loose, for loaded machines.
	if took < timeout-100*time.Millisecond || took > timeout+30*time.Second {
		t.Errorf("gave up after %v, timeout %v", took, timeout)
	}
	t.Logf("gave up after %v: %v", took, err)
	// The abort ended the collective: the stream's work finishes.
	if err := r.s.Wait(ctx); err != nil {
		t.Errorf("stream after the abort: %v", err)
	}
	if err := r.free(); err != nil {
		t.Error(err)
	}
	// Rank 0 never took part: abort it rather than wait for Close.
	if err := comms[0].Abort(); err != nil {
		t.Error(err)
	}
}

// The two-process tests run the test binary again as each rank; childEnv
// says which test and rank a child is.
const childEnv = "GOCUDA_COLLECTIVE_TEST_CHILD"

// childDone is what a child prints once it passed.
func childDone(mode string, rank int) string {
	return fmt.Sprintf("collective child %s rank %d: done", mode, rank)
}

// freePort returns a loopback port free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// children runs test as two ranks, two processes that rendezvous over
// loopback with the torchrun variables, and returns their outputs and
// errors.
func children(t *testing.T, test, mode string) ([2]string, [2]error) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*gpuTimeout)
	defer cancel()
	var (
		outs [2]bytes.Buffer
		errs [2]error
		wg   sync.WaitGroup
	)
	for r := range 2 {
		cmd := exec.CommandContext(ctx, exe, "-test.run=^"+test+"$", "-test.v", "-test.count=1",
			"-test.timeout="+(2*gpuTimeout-20*time.Second).String())
		cmd.Env = append(os.Environ(), childEnv+"="+mode,
			EnvAddr+"=127.0.0.1", EnvPort+"="+strconv.Itoa(port),
			EnvRank+"="+strconv.Itoa(r), EnvWorldSize+"=2", EnvLocalRank+"="+strconv.Itoa(r))
		cmd.Stdout, cmd.Stderr = &outs[r], &outs[r]
		cmd.WaitDelay = 10 * time.Second
		wg.Go(func() { errs[r] = cmd.Run() })
	}
	wg.Wait()
	return [2]string{outs[0].String(), outs[1].String()}, errs
}

// child is the start of a child: its rank's communicator from Join.
func child(t *testing.T, opts *Options) (*Comm, int) {
	cfg, err := ConfigFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), gpuTimeout)
	defer cancel()
	c, err := Join(ctx, cfg, highlevel.Device(cfg.LocalRank), opts)
	if err != nil {
		t.Fatalf("rank %d: %v", cfg.Rank, err)
	}
	return c, cfg.Rank
}

// TestGPUCollectivesTwoProcesses runs every collective for every type in
// two processes, one GPU each, that meet through Join.
func TestGPUCollectivesTwoProcesses(t *testing.T) {
	const mode = "collectives"
	if os.Getenv(childEnv) == mode {
		c, me := child(t, &Options{Timeout: gpuTimeout})
		defer func() {
			if err := c.Close(); err != nil {
				t.Error(err)
			}
		}()
		ctx, cancel := context.WithTimeout(context.Background(), gpuTimeout)
		defer cancel()
		r, err := newRank(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		err = everyType(r, 1003)
		if err := errors.Join(err, r.free()); err != nil {
			t.Fatalf("rank %d: %v", me, err)
		}
		fmt.Println(childDone(mode, me))
		return
	}
	requireGPUs(t, 2)
	outs, errs := children(t, "TestGPUCollectivesTwoProcesses", mode)
	for r := range 2 {
		if errs[r] != nil || !strings.Contains(outs[r], childDone(mode, r)) {
			t.Errorf("rank %d: %v; its output:\n%s", r, errs[r], outs[r])
		}
	}
}

// killTimeout is the survivor's Timeout in TestGPUKilledRank.
const killTimeout = 10 * time.Second

// TestGPUKilledRank: of two processes, rank 1 is killed (SIGKILL) after
// one all-reduce; rank 0's next all-reduce waits for it, and its Wait must
// return an error, the communicator aborted, within its Timeout (and a
// margin for NCCL's abort), not hang.
func TestGPUKilledRank(t *testing.T) { testKilledRank(t, "TestGPUKilledRank", "kill", false, false) }

// TestGPUKilledRankBlocking is TestGPUKilledRank with blocking
// communicators (Options.Blocking): the all-reduce is queued, its peers
// connected by the first, and the wait for it is bounded as before.
func TestGPUKilledRankBlocking(t *testing.T) {
	testKilledRank(t, "TestGPUKilledRankBlocking", "kill-blocking", true, false)
}

// TestGPUKilledRankBlockingClose is TestGPUKilledRankBlocking with no
// Comm.Wait: rank 0 closes its communicator with the all-reduce queued,
// and Close, which waits for it, must abort the communicator within the
// Timeout rather than wait in NCCL's finalization.
func TestGPUKilledRankBlockingClose(t *testing.T) {
	testKilledRank(t, "TestGPUKilledRankBlockingClose", "kill-blocking-close", true, true)
}

func testKilledRank(t *testing.T, test, mode string, blocking, closeFirst bool) {
	if os.Getenv(childEnv) == mode {
		c, me := child(t, &Options{Timeout: killTimeout, Blocking: blocking})
		ctx, cancel := context.WithTimeout(context.Background(), gpuTimeout)
		defer cancel()
		r, err := newRank(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		a, err := from(r, []float32{1, 2, 3})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.run(AllReduce(r.s, c, a, a, Sum)); err != nil {
			t.Fatalf("rank %d: first all-reduce: %v", me, err)
		}
		if me == 1 {
			fmt.Println("rank 1: killing itself")
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
		time.Sleep(500 * time.Millisecond) // rank 1 is dead by now
		t0 := time.Now()
		// NCCL may have seen the dead rank already, and refuse the
		// all-reduce: then Close has no collective to wait for, and
		// need not fail.
		var runErr error
		if closeFirst {
			runErr = Run(AllReduce(r.s, c, a, a, Sum))
			err = c.Close()
		} else {
			err = r.run(AllReduce(r.s, c, a, a, Sum))
		}
		took := time.Since(t0)
		fmt.Printf("rank 0: the all-reduce with the dead rank returned after %v: %v (Run: %v)\n", took, err, runErr)
		if runErr == nil && !errors.Is(err, ErrAborted) {
			t.Fatalf("rank 0: %v, want an error wrapping ErrAborted", err)
		}
		if took > killTimeout+20*time.Second {
			t.Fatalf("rank 0: waited %v, timeout %v", took, killTimeout)
		}
		if err := c.Close(); !errors.Is(err, highlevel.ErrClosed) {
			t.Errorf("Close after the abort: %v", err)
		}
		fmt.Println(childDone(mode, 0))
		return
	}
	requireGPUs(t, 2)
	outs, errs := children(t, test, mode)
	var ee *exec.ExitError
	if !errors.As(errs[1], &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("rank 1: %v, want killed by SIGKILL; its output:\n%s", errs[1], outs[1])
	}
	if errs[0] != nil || !strings.Contains(outs[0], childDone(mode, 0)) {
		t.Errorf("rank 0: %v; its output:\n%s", errs[0], outs[0])
	}
	t.Log(outs[0])
}
