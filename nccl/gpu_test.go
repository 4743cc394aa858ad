package nccl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/gocuda/cuda/cudart"
	"github.com/gocuda/cuda/internal/gputest"
)

// The GPU tests need libnccl.so.2 and, except TestGPUErrors, two GPUs. A
// collective whose peers never arrive waits forever, and gpu.sh runs the test
// binary without -test.timeout, so every step that waits on other ranks runs
// under a deadline (stepTimeout) and fails the test instead of hanging.
const stepTimeout = 2 * time.Minute

// requireGPUs ends the test as gputest.Require does unless a GPU,
// libnccl.so.2 and libcudart are here, and skips it where there are fewer
// than atLeast devices; it returns the number of devices.
func requireGPUs(t testing.TB, atLeast int) int {
	t.Helper()
	gputest.Require(t, "NCCL", Load)
	var n int32
	if err := cudart.GetDeviceCount(&n); err != nil {
		t.Fatalf("GetDeviceCount: %v", err)
	}
	if int(n) < atLeast {
		t.Skipf("needs %d CUDA devices: count %d", atLeast, n)
	}
	return int(n)
}

// hung is set once a step has timed out: its goroutines are stuck in NCCL
// or CUDA, so cleaning up (which synchronizes) would hang as well.
var hung atomic.Bool

// run runs fn in a goroutine locked to its OS thread (NCCL's group state and
// CUDA's current device belong to the thread) and returns its error, or one
// saying that it has not returned after stepTimeout; the goroutine is then
// left behind, stuck.
func run(what string, fn func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		done <- fn()
	}()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	case <-time.After(stepTimeout):
		hung.Store(true)
		return fmt.Errorf("%s: no answer after %v (a rank failed or hangs)", what, stepTimeout)
	}
}

// within is run that fails the test on an error.
func within(t *testing.T, what string, fn func() error) {
	t.Helper()
	if err := run(what, fn); err != nil {
		t.Fatal(err)
	}
}

// cleanup is run for cleaning up: it reports an error without stopping the
// test, and does nothing once a step has hung.
func cleanup(t *testing.T, what string, fn func() error) {
	t.Helper()
	if hung.Load() {
		t.Logf("%s: skipped, an earlier step hung", what)
		return
	}
	if err := run(what, fn); err != nil {
		t.Error(err)
	}
}

// each returns a function that runs fn(r) for every rank r in [0, n) at the
// same time, each in a goroutine locked to its OS thread with device r
// current, and returns their errors joined.
func each(n int, fn func(r int) error) func() error {
	return func() error {
		errs := make([]error, n)
		var wg sync.WaitGroup
		for r := range n {
			wg.Go(func() {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				if err := cudart.SetDevice(int32(r)); err != nil {
					errs[r] = fmt.Errorf("rank %d: SetDevice: %w", r, err)
				} else if err := fn(r); err != nil {
					errs[r] = fmt.Errorf("rank %d: %w", r, err)
				}
			})
		}
		wg.Wait()
		return errors.Join(errs...)
	}
}

// onEach runs fn on every rank as each does, failing the test if any fails
// or they have not all returned after stepTimeout.
func onEach(t *testing.T, n int, what string, fn func(r int) error) {
	t.Helper()
	within(t, what, each(n, fn))
}

// Each rank all-reduces two buffers: a, out of place into aOut, and b, in
// place. Their elements are small integers, so that every float32 sum is
// exact whatever order NCCL adds them in. countA is not a multiple of any
// chunk size NCCL might use, so the tail is exercised.
const (
	countA = 1<<20 + 3
	countB = 1001
)

func valueA(r, i int) float32 { return float32(r + 1 + i%7) }
func valueB(r, i int) float32 { return float32((r + 1) * (i%5 + 1)) }

// sumA and sumB are what the sums over n ranks of valueA and valueB must be.
func sumA(n, i int) float32 { return float32(n*(n+1)/2 + n*(i%7)) }
func sumB(n, i int) float32 { return float32(n * (n + 1) / 2 * (i%5 + 1)) }

func fill(count int, f func(i int) float32) []float32 {
	h := make([]float32, count)
	for i := range h {
		h[i] = f(i)
	}
	return h
}

func toDevice(dst unsafe.Pointer, src []float32) error {
	return cudart.Memcpy(dst, unsafe.Pointer(&src[0]), uint64(len(src))*4, cudart.MemcpyHostToDevice)
}

func fromDevice(src unsafe.Pointer, count int) ([]float32, error) {
	h := make([]float32, count)
	err := cudart.Memcpy(unsafe.Pointer(&h[0]), src, uint64(count)*4, cudart.MemcpyDeviceToHost)
	return h, err
}

// compare checks every element of got against want(i), bit for bit.
func compare(what string, got []float32, want func(i int) float32) error {
	bad := 0
	var first string
	for i, g := range got {
		if w := want(i); math.Float32bits(g) != math.Float32bits(w) {
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

// rankBuffers is one rank's device memory and stream.
type rankBuffers struct {
	stream     cudart.Stream
	a, aOut, b unsafe.Pointer
}

// reset loads rank r's inputs into a and b and fills aOut with NaNs (all
// bits set), so that a collective that writes nothing is caught. Device r is
// current.
func (rb *rankBuffers) reset(r int) error {
	if err := toDevice(rb.a, fill(countA, func(i int) float32 { return valueA(r, i) })); err != nil {
		return fmt.Errorf("copying a: %w", err)
	}
	if err := toDevice(rb.b, fill(countB, func(i int) float32 { return valueB(r, i) })); err != nil {
		return fmt.Errorf("copying b: %w", err)
	}
	if err := cudart.Memset(rb.aOut, 0xff, countA*4); err != nil {
		return fmt.Errorf("Memset: %w", err)
	}
	// The copies from pageable memory may return before their DMA is done,
	// and the stream is not ordered after the default stream's memset.
	return cudart.DeviceSynchronize()
}

// verify waits for rank r's stream and checks aOut and b against the sums
// over n ranks, and that a, the out-of-place input, is unchanged.
func (rb *rankBuffers) verify(r, n int) error {
	if err := cudart.StreamSynchronize(rb.stream); err != nil {
		return fmt.Errorf("StreamSynchronize: %w", err)
	}
	for _, c := range []struct {
		name  string
		p     unsafe.Pointer
		count int
		want  func(i int) float32
	}{
		{"recvbuff of the out-of-place all-reduce", rb.aOut, countA, func(i int) float32 { return sumA(n, i) }},
		{"buffer of the in-place all-reduce", rb.b, countB, func(i int) float32 { return sumB(n, i) }},
		{"sendbuff of the out-of-place all-reduce", rb.a, countA, func(i int) float32 { return valueA(r, i) }},
	} {
		got, err := fromDevice(c.p, c.count)
		if err != nil {
			return fmt.Errorf("copying back the %s: %w", c.name, err)
		}
		if err := compare(c.name, got, c.want); err != nil {
			return err
		}
	}
	return nil
}

// checkComms checks what each communicator says of itself: comms[r] is rank
// r of len(comms), on device r.
func checkComms(t *testing.T, comms []Comm) {
	t.Helper()
	for r, c := range comms {
		var count, rank, dev int32
		if err := errors.Join(CommCount(c, &count), CommUserRank(c, &rank), CommCuDevice(c, &dev)); err != nil {
			t.Fatalf("comm %d: %v", r, err)
		}
		if int(count) != len(comms) || int(rank) != r || int(dev) != r {
			t.Errorf("comm %d: CommCount %d, CommUserRank %d, CommCuDevice %d; want %d, %d, %d", r, count, rank, dev, len(comms), r, r)
		}
	}
}

// allReduceAll runs the all-reduces three ways over comms, one
// communicator per device, and checks every element on every device after
// each: a goroutine per device calling AllReduce alone; the same goroutines
// each grouping two all-reduces; and one goroutine grouping both
// all-reduces of every device, as BenchmarkAllReduce does. It destroys the
// communicators at the end.
func allReduceAll(t *testing.T, comms []Comm) {
	n := len(comms)
	defer cleanup(t, "CommDestroy", func() error {
		var errs []error
		for r, c := range comms {
			if err := CommDestroy(c); err != nil {
				errs = append(errs, fmt.Errorf("comm %d: %w", r, err))
			}
		}
		return errors.Join(errs...)
	})
	checkComms(t, comms)

	bufs := make([]rankBuffers, n)
	defer cleanup(t, "freeing", each(n, func(r int) error {
		rb := &bufs[r]
		var errs []error
		for _, p := range []unsafe.Pointer{rb.a, rb.aOut, rb.b} {
			if p != nil {
				errs = append(errs, cudart.Free(p))
			}
		}
		if rb.stream != 0 {
			errs = append(errs, cudart.StreamDestroy(rb.stream))
		}
		return errors.Join(errs...)
	}))
	onEach(t, n, "allocating", func(r int) error {
		rb := &bufs[r]
		// A blocking stream: NCCL's kernels then also wait for the default
		// stream's work.
		return errors.Join(
			cudart.StreamCreate(&rb.stream),
			cudart.Malloc(&rb.a, countA*4),
			cudart.Malloc(&rb.aOut, countA*4),
			cudart.Malloc(&rb.b, countB*4))
	})

	onEach(t, n, "one AllReduce per goroutine", func(r int) error {
		rb := &bufs[r]
		if err := rb.reset(r); err != nil {
			return err
		}
		// b is not reduced this time: take it as already summed.
		if err := toDevice(rb.b, fill(countB, func(i int) float32 { return sumB(n, i) })); err != nil {
			return err
		}
		if err := AllReduce(rb.a, rb.aOut, countA, Float32, Sum, comms[r], rb.stream); err != nil {
			return fmt.Errorf("AllReduce: %w", err)
		}
		return rb.verify(r, n)
	})

	onEach(t, n, "GroupStart, two AllReduce, GroupEnd per goroutine", func(r int) error {
		rb := &bufs[r]
		if err := rb.reset(r); err != nil {
			return err
		}
		if err := GroupStart(); err != nil {
			return fmt.Errorf("GroupStart: %w", err)
		}
		err1 := AllReduce(rb.a, rb.aOut, countA, Float32, Sum, comms[r], rb.stream)
		err2 := AllReduce(rb.b, rb.b, countB, Float32, Sum, comms[r], rb.stream)
		// GroupEnd whatever happened: the group is this thread's.
		if err := errors.Join(err1, err2, GroupEnd()); err != nil {
			return fmt.Errorf("grouped AllReduce: %w", err)
		}
		return rb.verify(r, n)
	})

	onEach(t, n, "resetting", func(r int) error { return bufs[r].reset(r) })
	within(t, "one goroutine: GroupStart, two AllReduce per device, GroupEnd", func() error {
		if err := GroupStart(); err != nil {
			return fmt.Errorf("GroupStart: %w", err)
		}
		var errs []error
		for r := range n {
			rb := &bufs[r]
			errs = append(errs,
				AllReduce(rb.a, rb.aOut, countA, Float32, Sum, comms[r], rb.stream),
				AllReduce(rb.b, rb.b, countB, Float32, Sum, comms[r], rb.stream))
		}
		return errors.Join(append(errs, GroupEnd())...)
	})
	onEach(t, n, "checking the single-goroutine group", func(r int) error { return bufs[r].verify(r, n) })
}

// TestGPUAllReduceOneProcess all-reduces float32 sums over every GPU of one
// process, with communicators made two ways: by a goroutine per device
// calling CommInitRank with a shared unique id, and by CommInitAll.
func TestGPUAllReduceOneProcess(t *testing.T) {
	n := requireGPUs(t, 2)
	t.Logf("%d devices, NCCL from %s", n, LibraryPath())

	t.Run("CommInitRank", func(t *testing.T) {
		var id UniqueId
		if err := GetUniqueId(&id); err != nil {
			t.Fatalf("GetUniqueId: %v", err)
		}
		comms := make([]Comm, n)
		// Each CommInitRank returns once all n ranks have joined.
		onEach(t, n, "CommInitRank", func(r int) error {
			return CommInitRank(&comms[r], int32(n), id, int32(r))
		})
		allReduceAll(t, comms)
	})

	t.Run("CommInitAll", func(t *testing.T) {
		if hung.Load() {
			t.Skip("an earlier step hung")
		}
		comms := make([]Comm, n)
		within(t, "CommInitAll", func() error { return CommInitAll(&comms[0], int32(n), nil) })
		allReduceAll(t, comms)
	})
}

// childRankEnv, set in the environment of a child of
// TestGPUAllReduceTwoProcesses, holds its rank; the child then reads the
// unique id from its standard input.
const childRankEnv = "GOCUDA_NCCL_TEST_RANK"

// childDone is what a child prints once its all-reduce checked out.
func childDone(rank int) string {
	return fmt.Sprintf("nccl child rank %d of 2 on device %d: all-reduce of %d float32 correct", rank, rank, countA)
}

// TestGPUAllReduceTwoProcesses all-reduces across two processes, one GPU
// each: the test makes the unique id and runs itself twice as the two ranks,
// passing the id on their standard input.
func TestGPUAllReduceTwoProcesses(t *testing.T) {
	if s := os.Getenv(childRankEnv); s != "" {
		twoProcessChild(t, s)
		return
	}
	requireGPUs(t, 2)
	// The bootstrap root that the children find through the id runs in this
	// process, which must live until they have both joined.
	var id UniqueId
	if err := GetUniqueId(&id); err != nil {
		t.Fatalf("GetUniqueId: %v", err)
	}
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	var (
		outs [2]bytes.Buffer
		errs [2]error
		wg   sync.WaitGroup
	)
	for r := range 2 {
		// The child's own timeout comes first, so that a hang shows its
		// goroutines' stacks rather than a kill.
		cmd := exec.CommandContext(ctx, exe, "-test.run=^TestGPUAllReduceTwoProcesses$", "-test.v", "-test.count=1",
			"-test.timeout="+(stepTimeout-20*time.Second).String())
		cmd.Env = append(os.Environ(), childRankEnv+"="+strconv.Itoa(r))
		// exec copies the id into a pipe that is the child's standard input.
		cmd.Stdin = bytes.NewReader(id.Internal[:])
		cmd.Stdout = &outs[r]
		cmd.Stderr = &outs[r]
		cmd.WaitDelay = 10 * time.Second
		wg.Go(func() {
			err := cmd.Run()
			if err == nil {
				return
			}
			switch ctx.Err() {
			case context.DeadlineExceeded:
				err = fmt.Errorf("%w: killed after %v", err, stepTimeout)
			case context.Canceled:
				err = fmt.Errorf("%w: killed because the other rank failed", err)
			}
			errs[r] = err
			// The other rank would wait for this one forever.
			cancel()
		})
	}
	wg.Wait()
	for r := range 2 {
		out := outs[r].String()
		switch {
		case errs[r] != nil:
			t.Errorf("rank %d: %v; its output:\n%s", r, errs[r], out)
		case !strings.Contains(out, childDone(r)):
			t.Errorf("rank %d exited 0 without reporting its all-reduce; its output:\n%s", r, out)
		default:
			t.Log(childDone(r))
		}
	}
}

// twoProcessChild is rank s of TestGPUAllReduceTwoProcesses, on device s.
func twoProcessChild(t *testing.T, s string) {
	rank, err := strconv.Atoi(s)
	if err != nil || rank < 0 || rank > 1 {
		t.Fatalf("%s=%q: want 0 or 1", childRankEnv, s)
	}
	var id UniqueId
	if _, err := io.ReadFull(os.Stdin, id.Internal[:]); err != nil {
		t.Fatalf("reading the unique id from standard input: %v", err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("rank %d: %s: %v", rank, what, err)
		}
	}
	// report is must for deferred cleanups, which must not stop the test.
	report := func(what string, err error) {
		if err != nil {
			t.Errorf("rank %d: %s: %v", rank, what, err)
		}
	}
	must("SetDevice", cudart.SetDevice(int32(rank)))
	var comm Comm
	must("CommInitRank", CommInitRank(&comm, 2, id, int32(rank)))
	defer func() { report("CommDestroy", CommDestroy(comm)) }()
	var count, user, dev int32
	must("CommCount", CommCount(comm, &count))
	must("CommUserRank", CommUserRank(comm, &user))
	must("CommCuDevice", CommCuDevice(comm, &dev))
	if count != 2 || int(user) != rank || int(dev) != rank {
		t.Errorf("CommCount %d, CommUserRank %d, CommCuDevice %d; want 2, %d, %d", count, user, dev, rank, rank)
	}

	var stream cudart.Stream
	var send, recv unsafe.Pointer
	must("StreamCreate", cudart.StreamCreate(&stream))
	defer func() { report("StreamDestroy", cudart.StreamDestroy(stream)) }()
	must("Malloc", cudart.Malloc(&send, countA*4))
	defer func() { report("Free", cudart.Free(send)) }()
	must("Malloc", cudart.Malloc(&recv, countA*4))
	defer func() { report("Free", cudart.Free(recv)) }()
	must("copying in", toDevice(send, fill(countA, func(i int) float32 { return valueA(rank, i) })))
	must("Memset", cudart.Memset(recv, 0xff, countA*4))
	must("DeviceSynchronize", cudart.DeviceSynchronize())

	must("AllReduce", AllReduce(send, recv, countA, Float32, Sum, comm, stream))
	must("StreamSynchronize", cudart.StreamSynchronize(stream))
	got, err := fromDevice(recv, countA)
	must("copying out", err)
	must("checking", compare("recvbuff", got, func(i int) float32 { return sumA(2, i) }))
	fmt.Println(childDone(rank))
}

// wantResult checks that err is the status want, as a Result.
func wantResult(t *testing.T, what string, err error, want Result) {
	t.Helper()
	var r Result
	if !errors.As(err, &r) {
		t.Errorf("%s = %v (%T), want the Result %v", what, err, err, want)
		return
	}
	if !errors.Is(err, want) {
		t.Errorf("%s = %v, want %v", what, r, want)
		return
	}
	s, err := GetErrorString(r)
	if err != nil || s == "" {
		t.Errorf("GetErrorString(%v) = %q, %v", r, s, err)
	}
	t.Logf("%s: %v: %s", what, r, s)
}

// TestGPUErrors checks that NCCL's argument checks come back as Results.
// In NCCL 2.28 CommInitRank checks its ranks before it uses the id (nranks 0
// fails before anything else; a bad rank after NCCL's and CUDA's
// initialization, which needs a device), and AllReduce checks the
// communicator for NULL before touching it.
func TestGPUErrors(t *testing.T) {
	requireGPUs(t, 1)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cudart.SetDevice(0); err != nil {
		t.Fatalf("SetDevice: %v", err)
	}
	var v int32
	if err := GetVersion(&v); err != nil {
		t.Fatalf("GetVersion: %v", err)
	}
	t.Logf("NCCL %d from %s (headers %d)", v, LibraryPath(), VERSION_CODE)

	var id UniqueId // never reached: the ranks are checked first
	for _, c := range []struct{ nranks, rank int32 }{{0, 0}, {2, 2}, {2, -1}} {
		var comm Comm
		err := CommInitRank(&comm, c.nranks, id, c.rank)
		wantResult(t, fmt.Sprintf("CommInitRank(nranks %d, rank %d)", c.nranks, c.rank), err, InvalidArgument)
		if comm != 0 {
			t.Errorf("CommInitRank(nranks %d, rank %d) made a communicator", c.nranks, c.rank)
		}
	}
	wantResult(t, "AllReduce on a NULL communicator",
		AllReduce(nil, nil, 1, Float32, Sum, Comm(COMM_NULL), 0), InvalidArgument)
	wantResult(t, "GroupEnd without GroupStart", GroupEnd(), InvalidUsage)
	if err := CommDestroy(Comm(COMM_NULL)); err != nil {
		t.Errorf("CommDestroy(NULL) = %v, want nil", err)
	}
}
