package collective

import (
	"context"
	"errors"
	"testing"

	"github.com/gocuda/cuda/highlevel"
	"github.com/gocuda/cuda/nccl"
)

// These tests need neither a GPU nor NCCL: every call they make is refused
// before it reaches NCCL. fake is rank 0 of 2 with a handle NCCL never
// sees.
func fake() *Comm { return newComm(1, 0, nil, 0, 0, 2, nil) }

type myFloat float64
type myByte uint8

func TestDataType(t *testing.T) {
	for _, c := range []struct {
		got, want nccl.DataType
	}{
		{dataType[int8](), nccl.Int8},
		{dataType[uint8](), nccl.Uint8},
		{dataType[myByte](), nccl.Uint8},
		{dataType[int32](), nccl.Int32},
		{dataType[uint32](), nccl.Uint32},
		{dataType[int64](), nccl.Int64},
		{dataType[int](), nccl.Int64},
		{dataType[uint64](), nccl.Uint64},
		{dataType[uint](), nccl.Uint64},
		{dataType[float32](), nccl.Float32},
		{dataType[float64](), nccl.Float64},
		{dataType[myFloat](), nccl.Float64},
	} {
		if c.got != c.want {
			t.Errorf("got %v, want %v", c.got, c.want)
		}
	}
}

func TestReduceOp(t *testing.T) {
	for o, want := range map[ReduceOp]nccl.RedOp{Sum: nccl.Sum, Prod: nccl.Prod, Max: nccl.Max, Min: nccl.Min, Avg: nccl.Avg} {
		if got, err := o.nccl(); got != want || err != nil {
			t.Errorf("%v: %v, %v; want %v", o, got, err, want)
		}
	}
	if s := Avg.String(); s != "Avg" {
		t.Errorf("Avg.String() = %q", s)
	}
	if s := ReduceOp(9).String(); s != "ReduceOp(9)" {
		t.Errorf("ReduceOp(9).String() = %q", s)
	}
}

// TestCallArguments checks that calls that cannot work are refused with
// ErrConfig or highlevel.ErrNil, before anything reaches NCCL.
func TestCallArguments(t *testing.T) {
	c := fake()
	var none *highlevel.Array[float32]
	empty := &highlevel.Array[float32]{}
	for _, tc := range []struct {
		name string
		call Call
		want error
	}{
		{"zero Call", Call{}, highlevel.ErrNil},
		{"nil Comm", AllReduce(nil, nil, empty, empty, Sum), highlevel.ErrNil},
		{"zero Comm", AllReduce(nil, &Comm{}, empty, empty, Sum), highlevel.ErrNil},
		{"all-reduce, nil send", AllReduce(nil, c, none, empty, Sum), ErrConfig},
		{"all-reduce, nil recv", AllReduce(nil, c, empty, none, Sum), ErrConfig},
		{"all-reduce, no such op", AllReduce(nil, c, empty, empty, ReduceOp(7)), ErrConfig},
		{"all-reduce, negative op", AllReduce(nil, c, empty, empty, ReduceOp(-1)), ErrConfig},
		{"broadcast, root too large", Broadcast(nil, c, empty, empty, 2), ErrConfig},
		{"broadcast, negative root", Broadcast(nil, c, empty, empty, -1), ErrConfig},
		{"broadcast, nil send at the root", Broadcast(nil, c, none, empty, 0), ErrConfig},
		{"broadcast, nil recv", Broadcast(nil, c, empty, none, 1), ErrConfig},
		{"reduce, nil send", Reduce(nil, c, none, empty, Sum, 1), ErrConfig},
		{"reduce, nil recv at the root", Reduce(nil, c, empty, none, Sum, 0), ErrConfig},
		{"reduce, root too large", Reduce(nil, c, empty, empty, Sum, 5), ErrConfig},
		{"reduce, no such op", Reduce(nil, c, empty, empty, ReduceOp(5), 0), ErrConfig},
		{"all-gather, nil send", AllGather(nil, c, none, empty), ErrConfig},
		{"all-gather, nil recv", AllGather(nil, c, empty, none), ErrConfig},
		{"reduce-scatter, nil recv", ReduceScatter(nil, c, empty, none, Sum), ErrConfig},
		{"reduce-scatter, nil send", ReduceScatter(nil, c, none, empty, Sum), ErrConfig},
		{"send, peer too large", Send(nil, c, empty, 2), ErrConfig},
		{"send, nil array", Send(nil, c, none, 1), ErrConfig},
		{"recv, negative peer", Recv(nil, c, empty, -1), ErrConfig},
		{"recv, nil array", Recv(nil, c, none, 1), ErrConfig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Run(tc.call)
			if !errors.Is(err, tc.want) {
				t.Errorf("Run: %v, want an error wrapping %v", err, tc.want)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Errorf("Run: %T, want *Error", err)
			}
			// In a group, the bad call keeps the good ones from running.
			if err := Run(AllReduce(nil, c, empty, empty, Sum), tc.call); !errors.Is(err, tc.want) {
				t.Errorf("Run of a group: %v, want an error wrapping %v", err, tc.want)
			}
		})
	}
	if err := Run(); err != nil {
		t.Errorf("Run() = %v", err)
	}
}

// TestClosedComm checks what a closed or aborted communicator returns,
// without NCCL: its life is closed by hand.
func TestClosedComm(t *testing.T) {
	empty := &highlevel.Array[float32]{}
	closed := fake()
	closed.life.Close()
	closed.ended.Store(true)
	aborted := fake()
	aborted.setCause(wrapf(ErrTimeout, ErrAborted, "a test"))
	aborted.aborting.Store(true)
	aborted.life.Close()
	aborted.ended.Store(true)
	for _, tc := range []struct {
		name string
		c    *Comm
		want []error
	}{
		{"closed", closed, []error{highlevel.ErrClosed}},
		{"aborted", aborted, []error{highlevel.ErrClosed, ErrAborted, ErrTimeout}},
	} {
		c := tc.c
		for what, err := range map[string]error{
			"Run":   Run(AllReduce(nil, c, empty, empty, Sum)),
			"Close": c.Close(),
			"Abort": c.Abort(),
			"Err":   c.Err(),
			"Do":    c.Do(func(nccl.Comm) error { return nil }),
		} {
			for _, w := range tc.want {
				if !errors.Is(err, w) {
					t.Errorf("%s: %s: %v, want an error wrapping %v", tc.name, what, err, w)
				}
			}
		}
		if _, err := c.Split(context.Background(), 0, 0, nil); !errors.Is(err, highlevel.ErrClosed) {
			t.Errorf("%s: Split: %v", tc.name, err)
		}
	}
}

func TestNilComm(t *testing.T) {
	for _, c := range []*Comm{nil, {}} {
		if c.Rank() != 0 || c.Size() != 0 || c.Device() != 0 || c.Timeout() != 0 {
			t.Errorf("%#v: Rank %d, Size %d, Device %v", c, c.Rank(), c.Size(), c.Device())
		}
		_, splitErr := c.Split(context.Background(), 0, 0, nil)
		for what, err := range map[string]error{
			"Close": c.Close(),
			"Abort": c.Abort(),
			"Err":   c.Err(),
			"Do":    c.Do(func(nccl.Comm) error { return nil }),
			"Wait":  c.Wait(context.Background(), nil),
			"Split": splitErr,
		} {
			if !errors.Is(err, highlevel.ErrNil) {
				t.Errorf("%#v: %s: %v, want an error wrapping highlevel.ErrNil", c, what, err)
			}
		}
	}
	if err := fake().Do(nil); err == nil {
		t.Error("Do(nil) accepted")
	}
	//lint:ignore SA1012 a nil context is what is tested
	if err := fake().Wait(nil, nil); !errors.Is(err, ErrConfig) { //nolint:staticcheck
		t.Errorf("Wait(nil context): %v", err)
	}
	for _, ck := range [][2]int{{-5, 0}, {1 << 31, 0}, {0, 1 << 31}, {0, -1<<31 - 1}} {
		if _, err := fake().Split(context.Background(), ck[0], ck[1], nil); !errors.Is(err, ErrConfig) {
			t.Errorf("Split(color %d, key %d): %v, want ErrConfig", ck[0], ck[1], err)
		}
	}
	// Refused before NCCL: the fake's handle would crash it.
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := fake().Split(done, 0, 0, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Split(a context done): %v, want context.Canceled", err)
	}
	if err := RunEach(nil, nil); err == nil {
		t.Error("RunEach(nil function) accepted")
	}
	if err := RunEach([]*Comm{fake(), nil}, func(*Comm) error { return nil }); !errors.Is(err, highlevel.ErrNil) {
		t.Errorf("RunEach with a nil Comm: %v", err)
	}
	if err := RunEach(nil, func(*Comm) error { return errors.New("never called") }); err != nil {
		t.Errorf("RunEach over no communicators: %v", err)
	}
}

func TestNewCommArguments(t *testing.T) {
	ctx := context.Background()
	id := UniqueID{1}
	for _, tc := range []struct {
		name       string
		ctx        context.Context
		id         UniqueID
		rank, size int
	}{
		{"nil context", nil, id, 0, 2},
		{"zero id", ctx, UniqueID{}, 0, 2},
		{"rank = size", ctx, id, 2, 2},
		{"negative rank", ctx, id, -1, 2},
		{"size 0", ctx, id, 0, 0},
		{"size beyond NCCL's int", ctx, id, 0, 1<<32 + 1},
		{"rank beyond NCCL's int", ctx, id, 1 << 32, 1<<32 + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewComm(tc.ctx, 0, tc.id, tc.rank, tc.size, nil); !errors.Is(err, ErrConfig) {
				t.Errorf("NewComm: %v, want an error wrapping ErrConfig", err)
			}
		})
	}
	//lint:ignore SA1012 a nil context is what is tested
	if _, err := NewComms(nil, nil, nil); !errors.Is(err, ErrConfig) { //nolint:staticcheck
		t.Errorf("NewComms(nil context): %v", err)
	}
	if _, err := NewComms(ctx, []highlevel.Device{0, 0}, nil); !errors.Is(err, ErrConfig) {
		t.Errorf("NewComms(a device twice): %v", err)
	}
}

func TestErrorMessages(t *testing.T) {
	c := fake()
	err := Run(AllReduce[float32](nil, c, nil, nil, Sum))
	const want = "collective: all-reduce on rank 0 of 2 (device 0): bad configuration: nil send"
	if err == nil || err.Error() != want {
		t.Errorf("got %q, want %q", err, want)
	}
}

func TestCloseAllClosed(t *testing.T) {
	a, b := fake(), fake()
	a.life.Close()
	a.ended.Store(true)
	b.life.Close()
	b.ended.Store(true)
	err := CloseAll([]*Comm{a, nil, b})
	if n := len(unjoin(err)); n != 2 || !errors.Is(err, highlevel.ErrClosed) {
		t.Errorf("CloseAll of two closed communicators: %d errors, %v", n, err)
	}
	if err := CloseAll(nil); err != nil {
		t.Errorf("CloseAll(nil) = %v", err)
	}
}
