package collective

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gocuda/cuda/highlevel"
)

// TestGPUCapturedCollectivesLaunchedMany captures all-reduces of sizes from
// 8 bytes to 256 KiB into one graph per rank, then launches the graphs many
// times, each time after filling the send arrays with new values, and
// checks every result of every launch: a graph that reused a stale buffer,
// skipped a call or ran before its fill would show.
func TestGPUCapturedCollectivesLaunchedMany(t *testing.T) {
	requireGPUs(t, 1)
	comms := newComms(t, &Options{Timeout: gpuTimeout})
	n := len(comms)
	ctx, cancel := context.WithTimeout(context.Background(), gpuTimeout)
	defer cancel()
	ranks := newRanks(t, ctx, comms)
	counts := []int{2, 31, 1024, 16 << 10, 64 << 10} // float32: 8 B to 256 KiB
	send := make([][]*highlevel.Array[float32], n)
	recv := make([][]*highlevel.Array[float32], n)
	for i, r := range ranks {
		for _, c := range counts {
			s, err1 := from(r, make([]float32, c))
			d, err2 := from(r, make([]float32, c))
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			send[i], recv[i] = append(send[i], s), append(recv[i], d)
		}
		if err := r.s.Synchronize(); err != nil {
			t.Fatal(err)
		}
	}
	// Every rank's stream captures at once: Run enters them together.
	for _, r := range ranks {
		if err := r.s.BeginCapture(highlevel.CaptureRelaxed); err != nil {
			t.Fatal(err)
		}
	}
	for k := range counts {
		var group []Call
		for i, r := range ranks {
			group = append(group, AllReduce(r.s, r.c, send[i][k], recv[i][k], Sum))
		}
		if err := runCaptured(group); err != nil {
			t.Fatalf("Run of %d floats on capturing streams: %v", counts[k], err)
		}
	}
	execs := instantiateCaptures(t, ranks)
	const launches = 25
	for l := range launches {
		// Rank i sends i+l+1 everywhere: the sum is n(n+1)/2 + n·l.
		for i, r := range ranks {
			for _, a := range send[i] {
				if err := a.FillAsync(r.s, float32(i+l+1)); err != nil {
					t.Fatal(err)
				}
			}
			if err := execs[i].Launch(r.s); err != nil {
				t.Fatalf("launch %d of rank %d's graph: %v", l, i, err)
			}
		}
		want := float32(n*(n+1)/2 + n*l)
		for i, r := range ranks {
			if err := r.c.Wait(ctx, r.s); err != nil {
				t.Fatal(err)
			}
			for k, a := range recv[i] {
				got, err := a.ToHost()
				if err != nil {
					t.Fatal(err)
				}
				what := fmt.Sprintf("launch %d, rank %d, all-reduce of %d floats", l, i, counts[k])
				if err := check(what, Sum, got, func(int) float32 { return want }); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

// runCaptured runs group, calls on capturing streams, which queue their
// work into the captures: it returns Run's error, or one once Run still
// waits after 30 s (Run entered the streams one by one, and the second
// capturing stream waited for the first's capture lock forever).
func runCaptured(group []Call) error {
	ran := make(chan error, 1)
	go func() { ran <- Run(group...) }()
	select {
	case err := <-ran:
		return err
	case <-time.After(30 * time.Second):
		return errors.New("Run over capturing streams still waits after 30s")
	}
}

// instantiateCaptures ends each rank's capture and returns the
// instantiations of their graphs, closed when t ends.
func instantiateCaptures(t *testing.T, ranks []*rank) []*highlevel.GraphExec {
	t.Helper()
	execs := make([]*highlevel.GraphExec, len(ranks))
	for i, r := range ranks {
		g, err := r.s.EndCapture()
		if err != nil {
			t.Fatal(err)
		}
		execs[i], err = g.Instantiate(nil)
		g.Close()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { execs[i].Close() })
	}
	return execs
}
