package collective

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocuda/cuda/cudadrv"
	"github.com/gocuda/cuda/highlevel"
	"github.com/gocuda/cuda/internal/stubtest"
	"github.com/gocuda/cuda/internal/testsrc"
	"github.com/gocuda/cuda/nccl"
)

// The stand-ins the stub tests run on: highlevel's driver (its sources
// beside the shim, built with the headers of the CUDA major the test is
// built for) and NCCL's (testdata/stubnccl.c).
var (
	stubShim    = filepath.Join("..", "internal", "driver")
	stubHeaders = filepath.Join("..", "..", "headers", fmt.Sprintf("cuda-%d.%d", cudadrv.VERSION/1000, cudadrv.VERSION%1000/10))
)

// stubLibraries builds the stand-in driver and NCCL and returns the
// environment that makes the packages load them, libcudart unloadable.
func stubLibraries(t *testing.T) []string {
	t.Helper()
	driver := filepath.Join(stubShim, "testdata", "stubdriver.c")
	testsrc.Require(t, driver, stubHeaders, filepath.Join("testdata", "stubnccl.c"))
	src, err := os.ReadFile(driver)
	if err != nil {
		t.Fatal(err)
	}
	procs, err := filepath.Abs(filepath.Join(stubShim, "testdata", "stubprocs.c"))
	if err != nil {
		t.Fatal(err)
	}
	cuda := stubtest.Library(t, "libcuda.so.1", string(src), "-I"+stubHeaders, "-I"+stubShim, procs)
	src, err = os.ReadFile(filepath.Join("testdata", "stubnccl.c"))
	if err != nil {
		t.Fatal(err)
	}
	nccl := stubtest.Library(t, "libnccl.so.2", string(src))
	return []string{"GOCUDA_CUDA=" + cuda, "GOCUDA_NCCL=" + nccl, "GOCUDA_CUDART=" + filepath.Join(t.TempDir(), "no-libcudart.so")}
}

// stubCases are what TestStubNCCL checks, each in a child process with
// the stand-in NCCL's faults env: the NCCL calls a communicator's life
// makes, as the stand-in logs them (its comments say how), for
// communicators with and without Options.Blocking; a case with no log to
// compare (want nil) checks what it asserts itself.
var stubCases = []struct {
	name    string
	devices int
	env     []string // the stand-in's faults
	run     func(t *testing.T) error
	want    []string // the stand-in's log
}{
	{"non-blocking", 1, nil, func(t *testing.T) error {
		c := stubComm(t, nil)
		stubAllReduce(t, c)
		return c.Close()
	}, []string{"init 1 blocking=0", "allreduce 1", "finalize 1", "destroy 1"}},
	{"Blocking: made and split non-blocking, the collectives blocking", 1, nil, func(t *testing.T) error {
		c := stubComm(t, &Options{Blocking: true})
		stubAllReduce(t, c)
		return c.Close()
	}, []string{"init 1 blocking=0", "split 2 1 blocking=1", "allreduce 2", "finalize 2", "destroy 2", "finalize 1", "destroy 1"}},
	{"Blocking: Abort ends both", 1, nil, func(t *testing.T) error {
		c := stubComm(t, &Options{Blocking: true})
		return c.Abort()
	}, []string{"init 1 blocking=0", "split 2 1 blocking=1", "abort 2", "abort 1"}},
	{"Blocking: Split splits the non-blocking one", 1, nil, func(t *testing.T) error {
		c := stubComm(t, &Options{Blocking: true})
		for _, opts := range []*Options{{Blocking: true}, nil} {
			d, err := c.Split(context.Background(), 0, 0, opts)
			if err != nil {
				return err
			}
			stubAllReduce(t, d)
			if err := d.Close(); err != nil {
				return err
			}
		}
		return c.Close()
	}, []string{
		"init 1 blocking=0", "split 2 1 blocking=1",
		"split 3 1 blocking=0", "split 4 3 blocking=1", "allreduce 4", "finalize 4", "destroy 4", "finalize 3", "destroy 3",
		"split 5 1 blocking=0", "allreduce 5", "finalize 5", "destroy 5",
		"finalize 2", "destroy 2", "finalize 1", "destroy 1",
	}},
	{"Blocking: Run costs NCCL's call and one look at the context, no allocation", 1, nil, func(t *testing.T) error {
		c := stubComm(t, &Options{Blocking: true})
		s, err := highlevel.NewStream(c.Device(), nil)
		if err != nil {
			return err
		}
		a, err := highlevel.AllocArray[float32](c.Device(), 4)
		if err != nil {
			return err
		}
		call := AllReduce(s, c, a, a, Sum)
		// The device's context stays current on the thread after the
		// first Run there (Device.DoRestoring).
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := Run(call); err != nil {
			return err
		}
		cgo := runtime.NumCgoCall()
		if err := Run(call); err != nil {
			return err
		}
		if n := runtime.NumCgoCall() - cgo; n != 2 {
			t.Errorf("Run made %d cgo calls, want 2", n)
		}
		if n := testing.AllocsPerRun(100, func() { Run(call) }); n != 0 {
			t.Errorf("Run allocated %v times, want 0", n)
		}
		return errors.Join(a.Free(), s.Close(), c.Abort())
	}, nil},
	{"initialization past the Timeout is aborted", 1, []string{"STUB_NCCL_BUSY=init:1000000000"}, func(t *testing.T) error {
		id, err := NewUniqueID()
		if err != nil {
			return err
		}
		_, err = NewComm(context.Background(), 0, id, 0, 1, &Options{Timeout: stubTimeout, Blocking: true})
		if !errors.Is(err, ErrTimeout) || !errors.Is(err, ErrAborted) {
			t.Errorf("NewComm: %v, want ErrTimeout and ErrAborted", err)
		}
		return nil
	}, []string{"init 1 blocking=0", "abort 1"}},
	{"Blocking: a refused split aborts the communicator split", 1, []string{"STUB_NCCL_FAIL=split:3"}, func(t *testing.T) error {
		id, err := NewUniqueID()
		if err != nil {
			return err
		}
		_, err = NewComm(context.Background(), 0, id, 0, 1, &Options{Blocking: true})
		if !errors.Is(err, nccl.InternalError) {
			t.Errorf("NewComm: %v, want ncclInternalError", err)
		}
		return nil
	}, []string{"init 1 blocking=0", "abort 1"}},
	{"Blocking: a split failing in the background aborts both", 1, []string{"STUB_NCCL_ASYNC=split:3"}, func(t *testing.T) error {
		id, err := NewUniqueID()
		if err != nil {
			return err
		}
		_, err = NewComm(context.Background(), 0, id, 0, 1, &Options{Blocking: true})
		if !errors.Is(err, nccl.InternalError) {
			t.Errorf("NewComm: %v, want ncclInternalError", err)
		}
		return nil
	}, []string{"init 1 blocking=0", "split 2 1 blocking=1", "abort 1", "abort 2"}},
	{"Blocking: a split past the Timeout aborts both", 1, []string{"STUB_NCCL_BUSY=split:1000000000"}, func(t *testing.T) error {
		id, err := NewUniqueID()
		if err != nil {
			return err
		}
		_, err = NewComm(context.Background(), 0, id, 0, 1, &Options{Timeout: stubTimeout, Blocking: true})
		if !errors.Is(err, ErrTimeout) || !errors.Is(err, ErrAborted) {
			t.Errorf("NewComm: %v, want ErrTimeout and ErrAborted", err)
		}
		return nil
	}, []string{"init 1 blocking=0", "split 2 1 blocking=1", "abort 1", "abort 2"}},
	{"Split past the Timeout aborts the communicator split", 1, []string{"STUB_NCCL_BUSY=split:1000000000"}, func(t *testing.T) error {
		c := stubComm(t, nil)
		if _, err := c.Split(context.Background(), 0, 0, &Options{Timeout: stubTimeout}); !errors.Is(err, ErrTimeout) {
			t.Errorf("Split: %v, want ErrTimeout", err)
		}
		if err := c.Close(); !errors.Is(err, highlevel.ErrClosed) || !errors.Is(err, ErrTimeout) {
			t.Errorf("Close after the failed split: %v, want ErrClosed and its cause", err)
		}
		return nil
	}, []string{"init 1 blocking=0", "split 2 1 blocking=0", "abort 1", "abort 2"}},
	{"Blocking: Close waits for the last streams Run queued on, closed or not", 1, nil, func(t *testing.T) error {
		c := stubComm(t, &Options{Blocking: true})
		a, err := highlevel.AllocArray[float32](c.Device(), 4)
		if err != nil {
			return err
		}
		var errs []error
		for i := range 10 {
			s, err := highlevel.NewStream(c.Device(), nil)
			if err != nil {
				return err
			}
			errs = append(errs, Run(AllReduce(s, c, a, a, Sum)))
			if i%2 == 0 {
				errs = append(errs, s.Close())
			}
		}
		if n := len(c.queued); n != queuedStreams {
			t.Errorf("%d streams remembered, want %d", n, queuedStreams)
		}
		return errors.Join(append(errs, c.Close(), a.Free())...)
	}, []string{"init 1 blocking=0", "split 2 1 blocking=1", "allreduce 2", "allreduce 2", "allreduce 2", "allreduce 2", "allreduce 2", "allreduce 2", "allreduce 2", "allreduce 2", "allreduce 2", "allreduce 2", "finalize 2", "destroy 2", "finalize 1", "destroy 1"}},
	{"Split while another goroutine aborts: the communicator made is aborted once the abort is done", 1, []string{"STUB_NCCL_BUSY=split:1000000000"}, func(t *testing.T) error {
		c := stubComm(t, nil)
		aborted := make(chan error)
		go func() {
			time.Sleep(stubTimeout / 4)
			aborted <- c.Abort()
		}()
		if _, err := c.Split(context.Background(), 0, 0, &Options{Timeout: 10 * stubTimeout}); !errors.Is(err, ErrAborted) {
			t.Errorf("Split: %v, want ErrAborted", err)
		}
		if err := <-aborted; err != nil {
			t.Errorf("Abort: %v", err)
		}
		// The cleanup may run in a goroutine of its own, once the
		// Abort is done.
		for range 500 {
			if b, _ := os.ReadFile(os.Getenv("STUB_NCCL_LOG")); strings.HasSuffix(string(b), "abort 2\n") {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		return nil
	}, []string{"init 1 blocking=0", "split 2 1 blocking=0", "abort 1", "abort 2"}},
	{"Blocking: a failed finalization aborts both", 1, []string{"STUB_NCCL_FAIL=finalize:3"}, func(t *testing.T) error {
		c := stubComm(t, &Options{Blocking: true})
		if err := c.Close(); !errors.Is(err, nccl.InternalError) {
			t.Errorf("Close: %v, want ncclInternalError", err)
		}
		return nil
	}, []string{"init 1 blocking=0", "split 2 1 blocking=1", "finalize 2", "abort 2", "abort 1"}},
	{"Blocking, named: NCCL keeps the name", 1, nil, func(t *testing.T) error {
		c := stubComm(t, &Options{Blocking: true, Name: "trainer"})
		stubAllReduce(t, c)
		d, err := c.Split(context.Background(), 0, 0, &Options{Name: "half"})
		if err != nil {
			return err
		}
		return errors.Join(d.Close(), c.Close())
	}, []string{"init 1 blocking=0 name=trainer", "split 2 1 blocking=1 name=trainer", "allreduce 2",
		"split 3 1 blocking=0 name=half", "finalize 3", "destroy 3", "finalize 2", "destroy 2", "finalize 1", "destroy 1"}},
	{"Blocking: Close past the Timeout aborts what is left", 1, []string{"STUB_NCCL_BUSY=finalize:1000000000"}, func(t *testing.T) error {
		c := stubComm(t, &Options{Timeout: stubTimeout, Blocking: true})
		if err := c.Close(); !errors.Is(err, ErrTimeout) || !errors.Is(err, ErrAborted) {
			t.Errorf("Close: %v, want ErrTimeout and ErrAborted", err)
		}
		if err := c.Abort(); !errors.Is(err, highlevel.ErrClosed) {
			t.Errorf("Abort after Close: %v, want ErrClosed", err)
		}
		return nil
	}, []string{"init 1 blocking=0", "split 2 1 blocking=1", "finalize 2", "destroy 2", "finalize 1", "abort 1"}},
	{"a Run failing in the background aborts", 1, []string{"STUB_NCCL_ASYNC=allreduce:3"}, func(t *testing.T) error {
		c := stubComm(t, nil)
		s, err := highlevel.NewStream(c.Device(), nil)
		if err != nil {
			return err
		}
		a, err := highlevel.AllocArray[float32](c.Device(), 4)
		if err != nil {
			return err
		}
		if err := Run(AllReduce(s, c, a, a, Sum)); !errors.Is(err, ErrAborted) || !errors.Is(err, nccl.InternalError) {
			t.Errorf("Run: %v, want ErrAborted and ncclInternalError", err)
		}
		if err := Run(AllReduce(s, c, a, a, Sum)); !errors.Is(err, highlevel.ErrClosed) {
			t.Errorf("Run after the abort: %v, want ErrClosed", err)
		}
		return errors.Join(a.Free(), s.Close())
	}, []string{"init 1 blocking=0", "allreduce 1", "abort 1"}},
	{"Wait sees a long wait end", 1, nil, func(t *testing.T) error {
		// The stream's own wait polls at an eighth of its age: after 6 s,
		// every 750 ms. Comm.Wait watches the stream every millisecond.
		// The bound is ten times what a quiet machine takes, for two
		// loaded cores and an emulator's timers, and still fails a Wait
		// left to the stream's polls two times in three.
		c := stubComm(t, nil)
		s, err := highlevel.NewStream(c.Device(), nil)
		if err != nil {
			return err
		}
		release := make(chan struct{})
		if err := s.LaunchHostFunc(func() { <-release }); err != nil {
			return err
		}
		released := make(chan time.Time, 1)
		go func() {
			time.Sleep(6 * time.Second)
			released <- time.Now()
			close(release)
		}()
		if err := c.Wait(context.Background(), s); err != nil {
			return err
		}
		returned := time.Now()
		select {
		case at := <-released:
			if late, bound := returned.Sub(at), 250*time.Millisecond; late > bound {
				t.Errorf("Wait returned %v after the work ended, want %v at most", late, bound)
			}
		default:
			t.Errorf("Wait returned before the work ended")
		}
		return errors.Join(s.Close(), c.Close())
	}, []string{"init 1 blocking=0", "finalize 1", "destroy 1"}},
	{"Wait reports a host function's panic once the work is done", 1, nil, func(t *testing.T) error {
		// The panic's report goes to the first call that asks for it: a
		// tick's query, while the work after it is still held back.
		c := stubComm(t, nil)
		s, err := highlevel.NewStream(c.Device(), nil)
		if err != nil {
			return err
		}
		release := make(chan struct{})
		s.LaunchHostFunc(func() { panic("boom") })
		s.LaunchHostFunc(func() { <-release })
		var released atomic.Bool
		time.AfterFunc(100*time.Millisecond, func() { released.Store(true); close(release) })
		err = c.Wait(context.Background(), s)
		if !released.Load() {
			t.Errorf("Wait returned before the work was done: %v", err)
		}
		if _, ok := errors.AsType[*highlevel.PanicError](err); !ok {
			t.Errorf("Wait: %v, want the host function's PanicError", err)
		}
		return errors.Join(s.Close(), c.Close())
	}, []string{"init 1 blocking=0", "finalize 1", "destroy 1"}},
	{"Abort of a communicator whose Run waits for another's NCCL calls returns at once", 2, []string{"STUB_NCCL_BUSY=split:1000000"}, func(t *testing.T) error {
		ctx := context.Background()
		comms, err := NewComms(ctx, nil, nil)
		if err != nil {
			return err
		}
		var calls []Call
		for _, c := range comms {
			s, err := highlevel.NewStream(c.Device(), nil)
			if err != nil {
				return err
			}
			defer s.Close()
			a, err := highlevel.AllocArray[float32](c.Device(), 4)
			if err != nil {
				return err
			}
			defer a.Free()
			calls = append(calls, AllReduce(s, c, a, a, Sum))
		}
		// A split of comms[1] that NCCL never ends holds its calls until
		// its Timeout, or an abort of comms[1]; a Run over both waits for
		// them, holding comms[0].
		split := make(chan error, 1)
		go func() {
			_, err := comms[1].Split(ctx, 0, 0, &Options{Timeout: 10 * time.Minute})
			split <- err
		}()
		for comms[1].calls.TryLock() {
			comms[1].calls.Unlock()
			time.Sleep(time.Millisecond)
		}
		run := make(chan error, 1)
		go func() { run <- Run(calls...) }()
		time.Sleep(50 * time.Millisecond) // the Run waits, or has not begun: either way the Abort must not wait
		stubEnded(t, "Abort", comms[0].Abort, nil)
		stubEnded(t, "the Run", func() error { return <-run }, ErrAborted)
		select {
		case err := <-split:
			t.Errorf("the split ended before its abort: %v", err)
		default:
		}
		stubEnded(t, "Abort of the other", comms[1].Abort, nil)
		stubEnded(t, "the split", func() error { return <-split }, ErrAborted)
		return nil
	}, nil},
	{"Blocking: Abort ends a Run that waits in NCCL", 1, []string{"STUB_NCCL_HANG=allreduce:1"}, func(t *testing.T) error {
		c := stubComm(t, &Options{Blocking: true})
		run := stubHungRun(t, c)
		stubEnded(t, "Abort", c.Abort, nil)
		stubEnded(t, "the Run", func() error { return <-run }, ErrAborted)
		return nil
	}, []string{"init 1 blocking=0", "split 2 1 blocking=1", "allreduce 2", "abort 2", "abort 1"}},
	{"Blocking: Abort ends a Close that waits for a Run in NCCL", 1, []string{"STUB_NCCL_HANG=allreduce:1"}, func(t *testing.T) error {
		c := stubComm(t, &Options{Blocking: true})
		run := stubHungRun(t, c)
		closed := make(chan error, 1)
		go func() { closed <- c.Close() }()
		for !c.life.Closed() {
			time.Sleep(time.Millisecond)
		}
		stubEnded(t, "Abort", c.Abort, highlevel.ErrClosed)
		stubEnded(t, "the Run", func() error { return <-run }, ErrAborted)
		stubEnded(t, "Close", func() error { return <-closed }, ErrAborted)
		return nil
	}, []string{"init 1 blocking=0", "split 2 1 blocking=1", "allreduce 2", "abort 2", "abort 1"}},
	{"Blocking: Abort ends a Close whose finalization waits in NCCL", 1, []string{"STUB_NCCL_HANG=finalize:1"}, func(t *testing.T) error {
		c := stubComm(t, &Options{Blocking: true})
		closed := make(chan error, 1)
		go func() { closed <- c.Close() }()
		stubBlocked(c)
		stubEnded(t, "Abort", c.Abort, highlevel.ErrClosed)
		stubEnded(t, "Close", func() error { return <-closed }, ErrAborted)
		return nil
	}, []string{"init 1 blocking=0", "split 2 1 blocking=1", "finalize 2", "abort 2", "abort 1"}},
	{"Blocking: RunEach ends the Run of a rank that waits in NCCL for one that failed", 2, []string{"STUB_NCCL_HANG=allreduce:1"}, func(t *testing.T) error {
		comms, err := NewComms(context.Background(), nil, &Options{Blocking: true})
		if err != nil {
			return err
		}
		failed := errors.New("rank 1 failed")
		err = stubEnded(t, "RunEach", func() error {
			return RunEach(comms, func(c *Comm) error {
				if c.Rank() == 1 {
					stubBlocked(comms[0])
					return failed
				}
				s, err := highlevel.NewStream(c.Device(), nil)
				if err != nil {
					return err
				}
				defer s.Close()
				a, err := highlevel.AllocArray[float32](c.Device(), 4)
				if err != nil {
					return err
				}
				defer a.Free()
				return Run(AllReduce(s, c, a, a, Sum))
			})
		}, failed)
		if !errors.Is(err, ErrAborted) {
			t.Errorf("RunEach: %v, want rank 0's ErrAborted too", err)
		}
		return nil
	}, []string{"init 1 blocking=0", "init 2 blocking=0", "split 3 1 blocking=1", "split 4 2 blocking=1",
		"allreduce 3", "abort 3", "abort 1", "abort 4", "abort 2"}},
	{"Split with a context done leaves the communicator alone", 1, nil, func(t *testing.T) error {
		c := stubComm(t, nil)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := c.Split(ctx, 0, 0, nil); !errors.Is(err, context.Canceled) {
			t.Errorf("Split: %v, want context.Canceled", err)
		}
		stubAllReduce(t, c)
		return c.Close()
	}, []string{"init 1 blocking=0", "allreduce 1", "finalize 1", "destroy 1"}},
	{"overlapping arrays and wrong lengths are refused, in place as NCCL defines it queued", 2, nil, stubOverlap,
		[]string{"init 1 blocking=0", "init 2 blocking=0",
			"allreduce 2", "allreduce 2", "broadcast 2", "broadcast 2", "reduce 2", "allgather 2", "reducescatter 2",
			"send 2", "send 2", "send 2", "recv 2", "finalize 1", "destroy 1", "finalize 2", "destroy 2"}},
	{"the stand-in computes the collectives asked of it", 2, []string{"STUB_COPY_US=0"}, func(t *testing.T) error {
		return stubCompute(t, nil)
	}, nil},
	{"Blocking: the stand-in computes the collectives asked of it", 2, []string{"STUB_COPY_US=0"}, func(t *testing.T) error {
		return stubCompute(t, &Options{Blocking: true})
	}, nil},
	{"random programs of goroutines sharing communicators", 1, []string{"STUB_COPY_US=0"}, stubRandom, nil},
	{"random programs, NCCL failing in the background after each all-reduce", 1, []string{"STUB_COPY_US=0", "STUB_NCCL_ASYNC=allreduce:3"}, stubRandom, nil},
	{"random programs, NCCL's splits slow", 1, []string{"STUB_COPY_US=0", "STUB_NCCL_BUSY=split:20"}, stubRandom, nil},
	{"Blocking: NewComms splits all in one group", 2, nil, func(t *testing.T) error {
		comms, err := NewComms(context.Background(), nil, &Options{Blocking: true})
		if err != nil {
			return err
		}
		// One at a time, for the log's order: the stand-in's finalization
		// waits for no other rank.
		return errors.Join(comms[0].Close(), comms[1].Close())
	}, []string{"init 1 blocking=0", "init 2 blocking=0", "split 3 1 blocking=1", "split 4 2 blocking=1",
		"finalize 3", "destroy 3", "finalize 1", "destroy 1", "finalize 4", "destroy 4", "finalize 2", "destroy 2"}},
}

// stubTimeout is the Timeout of the cases that run past it; stubNever that
// of those that must not: on two loaded cores, or under an emulator, the
// stand-ins' work for a split can take longer than stubTimeout.
const (
	stubTimeout = 200 * time.Millisecond
	stubNever   = 10 * time.Minute
)

// TestStubNCCL runs the package on the stand-in NCCL and driver, each case
// of stubCases in a child process, and compares the calls NCCL got with
// the case's.
func TestStubNCCL(t *testing.T) {
	env := stubLibraries(t)
	for _, tc := range stubCases {
		t.Run(tc.name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "nccl.log")
			env := append(slices.Clone(env), tc.env...)
			stubtest.Child(t, "TestStubNCCLChild", append(env, "STUB_NCCL_LOG="+log, "STUB_NCCL_CASE="+tc.name,
				fmt.Sprintf("STUB_DEVICES=%d", tc.devices))...)
			if tc.want == nil {
				return
			}
			b, err := os.ReadFile(log)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Split(strings.TrimSpace(string(b)), "\n"); !slices.Equal(got, tc.want) {
				t.Errorf("NCCL's calls:\n%s\nwant:\n%s", b, strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestStubNCCLChild(t *testing.T) {
	stubtest.SkipUnlessChild(t, "TestStubNCCL")
	for _, tc := range stubCases {
		if tc.name == os.Getenv("STUB_NCCL_CASE") {
			if err := tc.run(t); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("no case %q", os.Getenv("STUB_NCCL_CASE"))
}

// stubComm makes a communicator of one rank on device 0.
func stubComm(t *testing.T, opts *Options) *Comm {
	t.Helper()
	id, err := NewUniqueID()
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewComm(context.Background(), 0, id, 0, 1, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// stubAllReduce runs one all-reduce on c, on a stream and an array of its
// own, and waits for it.
func stubAllReduce(t *testing.T, c *Comm) {
	t.Helper()
	s, err := highlevel.NewStream(c.Device(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a, err := highlevel.AllocArray[float32](c.Device(), 4)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Free()
	if err := Run(AllReduce(s, c, a, a, Sum)); err != nil {
		t.Fatal(err)
	}
	if err := c.Wait(context.Background(), s); err != nil {
		t.Fatal(err)
	}
}

// stubCompute runs every kind of call on two ranks, one goroutine each
// (RunEach), and checks what the stand-in NCCL wrote: rank r sends
// r·10+i at element i (float32, and int32 for the mean).
func stubCompute(t *testing.T, opts *Options) error {
	comms, err := NewComms(context.Background(), nil, opts)
	if err != nil {
		return err
	}
	const n = 4
	// Every rank queues its calls, then waits for the other's (the
	// stand-in computes a collective when its last rank makes it), then
	// reads.
	var queued sync.WaitGroup
	queued.Add(len(comms))
	err = RunEach(comms, func(c *Comm) error {
		r := c.Rank()
		s, err := highlevel.NewStream(c.Device(), nil)
		if err != nil {
			return err
		}
		defer s.Close()
		var free []func() error
		defer func() {
			for _, f := range free {
				f()
			}
		}()
		arrayOf := func(vals []float32) *highlevel.Array[float32] {
			a, err := highlevel.AllocArray[float32](c.Device(), len(vals))
			if err != nil {
				t.Fatal(err)
			}
			free = append(free, a.Free)
			if err := a.CopyFromHost(vals); err != nil {
				t.Fatal(err)
			}
			return a
		}
		seq := func(base float32, m int) []float32 {
			v := make([]float32, m)
			for i := range v {
				v[i] = base + float32(i)
			}
			return v
		}
		read := func(a *highlevel.Array[float32]) []float64 {
			v, err := a.ToHost()
			if err != nil {
				t.Fatal(err)
			}
			out := make([]float64, len(v))
			for i, x := range v {
				out[i] = float64(x)
			}
			return out
		}
		want := func(f func(i int) float64, m int) []float64 {
			v := make([]float64, m)
			for i := range v {
				v[i] = f(i)
			}
			return v
		}
		mine := float32(10 * r)
		send := arrayOf(seq(mine, n))
		sum, max, bcast, prod, gather, scatter, got, inPlace := arrayOf(make([]float32, n)), arrayOf(make([]float32, n)),
			arrayOf(make([]float32, n)), arrayOf(make([]float32, n)), arrayOf(make([]float32, 2*n)), arrayOf(make([]float32, n)),
			arrayOf(make([]float32, n)), arrayOf(seq(mine, n))
		send2 := arrayOf(seq(mine, 2*n))
		ints, err := highlevel.AllocArray[int32](c.Device(), n)
		if err != nil {
			return err
		}
		free = append(free, ints.Free)
		if err := ints.CopyFromHost([]int32{int32(10 * r), int32(10*r + 1), int32(10*r + 2), int32(10*r + 3)}); err != nil {
			return err
		}
		for _, calls := range [][]Call{
			{AllReduce(s, c, send, sum, Sum)},
			{AllReduce(s, c, send, max, Max)},
			{AllReduce(s, c, inPlace, inPlace, Sum)},
			{AllReduce(s, c, ints, ints, Avg)},
			{Broadcast(s, c, send, bcast, 1)},
			{Reduce(s, c, send, prod, Prod, 0)},
			{AllGather(s, c, send, gather)},
			{ReduceScatter(s, c, send2, scatter, Sum)},
			{Send(s, c, send, 1-r), Recv(s, c, got, 1-r)},
		} {
			if err := Run(calls...); err != nil {
				return err
			}
		}
		if err := c.Wait(context.Background(), s); err != nil {
			return err
		}
		queued.Done()
		queued.Wait()
		prodWant := func(i int) float64 {
			if r == 0 {
				return float64(i * (10 + i))
			}
			return 0
		}
		avg, err := ints.ToHost()
		if err != nil {
			return err
		}
		for _, ck := range []struct {
			name      string
			got, want []float64
		}{
			{"all-reduce Sum", read(sum), want(func(i int) float64 { return float64(10 + 2*i) }, n)},
			{"all-reduce Max", read(max), want(func(i int) float64 { return float64(10 + i) }, n)},
			{"all-reduce in place", read(inPlace), want(func(i int) float64 { return float64(10 + 2*i) }, n)},
			{"all-reduce Avg of int32", []float64{float64(avg[0]), float64(avg[1]), float64(avg[2]), float64(avg[3])},
				want(func(i int) float64 { return float64(5 + i) }, n)},
			{"broadcast from rank 1", read(bcast), want(func(i int) float64 { return float64(10 + i) }, n)},
			{"reduce Prod to rank 0", read(prod), want(prodWant, n)},
			{"all-gather", read(gather), want(func(i int) float64 { return float64(10*(i/n) + i%n) }, 2*n)},
			{"reduce-scatter Sum", read(scatter), want(func(i int) float64 { return float64(10 + 2*(r*n+i)) }, n)},
			{"send and recv", read(got), want(func(i int) float64 { return float64(10*(1-r) + i) }, n)},
		} {
			if !slices.Equal(ck.got, ck.want) {
				t.Errorf("rank %d: %s: %v, want %v", r, ck.name, ck.got, ck.want)
			}
		}
		return nil
	})
	return errors.Join(err, comms[0].Close(), comms[1].Close())
}

// stubOverlap runs calls of rank 1 of 2 whose arrays overlap, or differ
// in length: those that NCCL defines in place are queued, the others
// refused with ErrConfig.
func stubOverlap(t *testing.T) error {
	comms, err := NewComms(context.Background(), nil, nil)
	if err != nil {
		return err
	}
	c := comms[1]
	s, err := highlevel.NewStream(c.Device(), nil)
	if err != nil {
		return err
	}
	a, err := highlevel.AllocArray[float32](c.Device(), 16)
	if err != nil {
		return err
	}
	b, err := highlevel.AllocArray[float32](c.Device(), 16)
	if err != nil {
		return err
	}
	view := func(x *highlevel.Array[float32], i, j int) *highlevel.Array[float32] {
		v, err := x.Slice(i, j)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	at := func(i, j int) *highlevel.Array[float32] { return view(a, i, j) }
	bt := func(i, j int) *highlevel.Array[float32] { return view(b, i, j) }
	for _, tc := range []struct {
		name  string
		calls []Call
		ok    bool
	}{
		{"all-reduce, recv shorter than send", []Call{AllReduce(s, c, a, bt(0, 8), Sum)}, false},
		{"broadcast at the root, recv shorter than send", []Call{Broadcast(s, c, a, bt(0, 8), 1)}, false},
		{"reduce at the root, recv shorter than send", []Call{Reduce(s, c, a, bt(0, 8), Sum, 1)}, false},
		{"all-gather, recv not Size times send", []Call{AllGather(s, c, at(0, 4), bt(0, 4))}, false},
		{"reduce-scatter, send not Size times recv", []Call{ReduceScatter(s, c, a, bt(0, 4), Sum)}, false},
		{"all-reduce in place", []Call{AllReduce(s, c, a, a, Sum)}, true},
		{"all-reduce in place, two views", []Call{AllReduce(s, c, at(0, 8), at(0, 8), Sum)}, true},
		{"all-reduce, shifted", []Call{AllReduce(s, c, at(0, 8), at(4, 12), Sum)}, false},
		{"all-reduce, recv one element into send", []Call{AllReduce(s, c, at(0, 8), at(7, 15), Sum)}, false},
		{"broadcast at the root in place", []Call{Broadcast(s, c, a, a, 1)}, true},
		{"broadcast at the root, shifted", []Call{Broadcast(s, c, at(0, 4), at(2, 6), 1)}, false},
		{"broadcast elsewhere: send unused", []Call{Broadcast(s, c, at(2, 6), at(0, 4), 0)}, true},
		{"reduce at the root, shifted", []Call{Reduce(s, c, at(2, 6), at(0, 4), Sum, 1)}, false},
		{"reduce elsewhere: recv unused", []Call{Reduce(s, c, at(2, 6), at(0, 4), Sum, 0)}, true},
		{"all-gather in place: send at rank 1's place", []Call{AllGather(s, c, at(4, 8), at(0, 8))}, true},
		{"all-gather from rank 0's place", []Call{AllGather(s, c, at(0, 4), at(0, 8))}, false},
		{"all-gather from across the places", []Call{AllGather(s, c, at(2, 6), at(0, 8))}, false},
		{"reduce-scatter in place: recv at rank 1's place", []Call{ReduceScatter(s, c, at(0, 8), at(4, 8), Sum)}, true},
		{"reduce-scatter into rank 0's place", []Call{ReduceScatter(s, c, at(0, 8), at(0, 4), Sum)}, false},
		{"a group sending one array twice", []Call{Send(s, c, a, 0), Send(s, c, a, 0)}, true},
		{"a group sending one array and receiving another", []Call{Send(s, c, a, 0), Recv(s, c, b, 0)}, true},
		{"a group receiving into what it sends", []Call{Send(s, c, at(0, 4), 0), Recv(s, c, at(2, 6), 0)}, false},
		{"a group receiving twice into one array", []Call{Recv(s, c, at(0, 4), 0), Recv(s, c, at(3, 4), 0)}, false},
		{"a group all-reducing into another's send", []Call{AllReduce(s, c, b, b, Sum), Send(s, c, b, 0)}, false},
	} {
		err := Run(tc.calls...)
		switch {
		case tc.ok && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case !tc.ok && !errors.Is(err, ErrConfig):
			t.Errorf("%s: %v, want ErrConfig", tc.name, err)
		}
	}
	// One at a time, for the log's order.
	return errors.Join(s.Close(), a.Free(), b.Free(), comms[0].Close(), comms[1].Close())
}

// stubHungRun begins an all-reduce on c, which the stand-in's
// STUB_NCCL_HANG keeps in NCCL until an abort, and returns its Run's
// result to come, once NCCL has it.
func stubHungRun(t *testing.T, c *Comm) <-chan error {
	t.Helper()
	s, err := highlevel.NewStream(c.Device(), nil)
	if err != nil {
		t.Fatal(err)
	}
	a, err := highlevel.AllocArray[float32](c.Device(), 4)
	if err != nil {
		t.Fatal(err)
	}
	run := make(chan error, 1)
	go func() {
		err := Run(AllReduce(s, c, a, a, Sum))
		run <- errors.Join(err, a.Free(), s.Close())
	}()
	stubBlocked(c)
	return run
}

// stubBlocked returns once a blocking NCCL call is in progress on c.
func stubBlocked(c *Comm) {
	for {
		c.block.Lock()
		blocked := c.blocked
		c.block.Unlock()
		if blocked {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// stubEnded checks that fn returns, within a minute, an error that is
// want (nil: nil), and returns it.
func stubEnded(t *testing.T, what string, fn func() error, want error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		if !errors.Is(err, want) { // for a nil want: err == nil
			t.Errorf("%s: %v, want %v", what, err, want)
		}
		return err
	case <-time.After(time.Minute):
		t.Fatalf("%s did not return in a minute", what)
	}
	return nil
}

// stubRandom runs randomPrograms on the stand-ins.
func stubRandom(t *testing.T) error {
	seeds := 50
	if testing.Short() || os.Getenv(stubtest.ExecEnv) != "" || os.Getenv("STUB_NCCL_BUSY") != "" {
		// A slow split holds its communicator's calls, which the other
		// goroutines' wait for: some 60 splits a program, each of tens
		// of milliseconds, more under an emulator's timers.
		seeds = 10
	}
	return randomPrograms(t, seeds, os.Getenv("STUB_NCCL_ASYNC") != "")
}

// randomPrograms runs random programs, one a seed: goroutines that share a
// communicator of one rank on device 0 (blocking or not), its streams and
// arrays, and queue all-reduces, wait, split, close streams, free arrays,
// abort and close, in any order. Every call must return, with nil or an
// error its program explains: of a closed, freed or aborted thing, or,
// where faults are injected, NCCL's. Each goroutine also all-reduces an
// array of its own into another, on a stream of its own, and checks the
// result, the sum over one rank being the array. Aborts and closes of the
// communicator come only in the last fifth of a goroutine's operations, and
// without faults at least 20 checked all-reduces a program must succeed.
// The stand-in NCCL ends the process if a communicator is used after its
// end.
func randomPrograms(t *testing.T, seeds int, faults bool) error {
	var succeeded, checked atomic.Int64
	const goroutines, ops = 6, 100
	for seed := range uint64(seeds) {
		rng := rand.New(rand.NewPCG(seed, 32))
		c := stubComm(t, &Options{Blocking: rng.IntN(2) == 0, Timeout: stubNever})
		var streams [3]*highlevel.Stream
		var arrays [3]*highlevel.Array[float32]
		for i := range streams {
			var err error
			if streams[i], err = highlevel.NewStream(c.Device(), nil); err != nil {
				return err
			}
			if arrays[i], err = highlevel.AllocArray[float32](c.Device(), 4); err != nil {
				return err
			}
		}
		// expected reports whether err, of an operation on what the
		// goroutines share, is explained by the program: freed marks an
		// operation that names a shared array or stream.
		expected := func(err error, shared bool) bool {
			return errors.Is(err, highlevel.ErrClosed) || errors.Is(err, ErrAborted) ||
				shared && errors.Is(err, highlevel.ErrFreed) || faults && errors.Is(err, nccl.InternalError)
		}
		ok := func(op string, err error, shared bool) {
			if err == nil {
				succeeded.Add(1)
			} else if !expected(err, shared) {
				t.Errorf("seed %d: %s: %v", seed, op, err)
			}
		}
		var wg sync.WaitGroup
		for g := range goroutines {
			r := rand.New(rand.NewPCG(seed, uint64(g)))
			own, err := highlevel.NewStream(c.Device(), nil)
			if err != nil {
				return err
			}
			src, err := highlevel.AllocArray[float32](c.Device(), 4)
			if err != nil {
				return err
			}
			dst, err := highlevel.AllocArray[float32](c.Device(), 4)
			if err != nil {
				return err
			}
			wg.Go(func() {
				defer func() { ok("own stream and arrays", errors.Join(own.Close(), src.Free(), dst.Free()), false) }()
				for i := range ops {
					s, a := streams[r.IntN(3)], arrays[r.IntN(3)]
					switch n := r.IntN(1000); {
					case n < 350:
						ok("run", Run(AllReduce(s, c, a, a, Sum)), true)
					case n < 450:
						want := []float32{float32(seed), float32(g), float32(i), r.Float32()}
						if err := src.CopyFromHost(want); err != nil {
							t.Errorf("seed %d: copy to its own array: %v", seed, err)
							return
						}
						err := Run(AllReduce(own, c, src, dst, Sum))
						if err == nil {
							err = c.Wait(context.Background(), own)
						}
						ok("checked all-reduce", err, false)
						if err != nil {
							continue
						}
						got, err := dst.ToHost()
						if err != nil || !slices.Equal(got, want) {
							t.Errorf("seed %d: all-reduce of %v over one rank: %v, %v", seed, want, got, err)
						}
						checked.Add(1)
					case n < 650:
						ok("wait", c.Wait(context.Background(), s), true)
					case n < 750:
						d, err := c.Split(context.Background(), []int{0, NoColor}[r.IntN(2)], 0, &Options{Blocking: r.IntN(2) == 0, Timeout: stubNever})
						ok("split", err, false)
						if d != nil {
							if r.IntN(2) == 0 {
								ok("run on the split", Run(AllReduce(s, d, a, a, Sum)), true)
							}
							ok("close the split", d.Close(), false)
						}
					case n < 900:
						ok("err", c.Err(), false)
						ok("do", c.Do(func(nccl.Comm) error { return nil }), false)
					case n < 910:
						ok("close a stream", s.Close(), true)
					case n < 917:
						ok("free an array", a.Free(), true)
					case n < 920 && i >= ops*4/5:
						ok("abort", c.Abort(), false)
					case n < 923 && i >= ops*4/5:
						ok("close", c.Close(), false)
					default:
						runtime.Gosched()
					}
				}
			})
		}
		wg.Wait()
		ok("close at the end", c.Close(), false)
		for i := range streams {
			ok("close a stream at the end", streams[i].Close(), true)
			ok("free an array at the end", arrays[i].Free(), true)
		}
	}
	t.Logf("%d seeds, %d calls succeeded, %d all-reduces checked", seeds, succeeded.Load(), checked.Load())
	if !faults && checked.Load() < int64(20*seeds) {
		t.Errorf("%d checked all-reduces succeeded, want %d at least: the programs' calls failed", checked.Load(), 20*seeds)
	}
	return nil
}
