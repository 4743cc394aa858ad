package bench

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/gocuda/cuda/highlevel/collective"
	"github.com/gocuda/cuda/nccl"
)

// The two-process all-reduce benchmarks (BenchmarkAllReduceProcesses,
// BenchmarkCollectiveAllReduceProcesses and its variants) run the test
// binary again as their rank 1, TestAllReduceProcessesRank1, with these
// variables set.
const (
	// rank1Env names the benchmark whose rank 1 the process is: "nccl",
	// "collective", "collective-blocking" or "collective-blocking-raw"
	// (a blocking communicator of collective's, its sums the raw
	// binding's calls).
	rank1Env = "GOCUDA_BENCH_RANK1"
	// ncclIDEnv is BenchmarkAllReduceProcesses' unique id, in hex.
	ncclIDEnv = "GOCUDA_BENCH_NCCL_ID"
)

// procsTimeout bounds each step of a two-process benchmark on either rank:
// the start, each round, the end. A rank that fails may leave the other
// waiting in NCCL, in a call that never returns: past procsTimeout rank 0
// kills rank 1 and panics, and rank 1 exits (see rank1). A round takes
// about a second at the -test.benchtime of 0.5s that gpu.sh gives.
const procsTimeout = time.Minute

// An allReduceRank is one process's rank of a two-process all-reduce.
type allReduceRank interface {
	// allReduce queues one in-place float32 sum of count elements.
	allReduce(count uint64) error
	// sync waits for the sums queued.
	sync() error
	// close ends the rank, aborting its communicator where tb failed.
	close(tb testing.TB)
}

// allReduceRound is one round of a two-process benchmark, which both ranks
// make together, each sum waiting for the other rank's: allReduceWarmup
// sums of count elements and a wait, then n sums and a wait. start, unless
// nil, is called between the two: the warm-up's wait ends on both ranks at
// the end of the same sum, so that both time the same n sums.
func allReduceRound(r allReduceRank, count uint64, n int, start func()) error {
	for range allReduceWarmup {
		if err := r.allReduce(count); err != nil {
			return err
		}
	}
	if err := r.sync(); err != nil {
		return err
	}
	if start != nil {
		start()
	}
	for range n {
		if err := r.allReduce(count); err != nil {
			return err
		}
	}
	return r.sync()
}

// benchmarkProcs is rank 0 of a two-process all-reduce, on device 0: it
// starts rank 1 with rank1Env set to variant and the variables env, joins
// it with join, and runs each size of allReduceSizes as a sub-benchmark,
// each of its runs a round that rank 1 makes too. It reports ns/op, MB/s
// and busbw-GB/s as BenchmarkAllReduce does.
func benchmarkProcs(b *testing.B, variant string, env []string, join func(testing.TB) allReduceRank) {
	procs(b, variant, env, join, allReduceSizes, func(b *testing.B, peer *rank1, r allReduceRank, count uint64) {
		peer.round(b, count, b.N)
		// Not b.Loop: it would stop the timer before the wait.
		if err := allReduceRound(r, count, b.N, b.ResetTimer); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		peer.done(b)
		size := int(count) * 4
		b.SetBytes(int64(size))
		// nccl-tests' bus bandwidth, 2(n-1)/n times the bytes over the
		// time, is the bytes over the time for n = 2 ranks.
		b.ReportMetric(float64(size)/(b.Elapsed().Seconds()/float64(b.N))/1e9, "busbw-GB/s")
	})
}

// procs is rank 0 of a two-process benchmark, on device 0: it starts rank
// 1 with rank1Env set to variant and the variables env, joins it with
// join, and runs each of sizes (bytes) as a sub-benchmark, on a locked OS
// thread, with run, which sends rank 1 its round and waits for its reply.
func procs(b *testing.B, variant string, env []string, join func(testing.TB) allReduceRank, sizes []int,
	run func(b *testing.B, peer *rank1, r allReduceRank, count uint64)) {
	peer := startRank1(b, variant, env)
	r := join(b)
	closed := false
	defer func() {
		if !closed { // a size failed: r aborts
			r.close(b)
		}
	}()
	for _, size := range sizes {
		ok := b.Run("size="+sizeName(size), func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			run(b, peer, r, uint64(size/4))
		})
		if !ok {
			return
		}
	}
	// Closing is collective: rank 0 closes while rank 1 does.
	peer.finish(b, func() {
		closed = true
		r.close(b)
	})
}

// A rank1 is rank 1 of a two-process benchmark as rank 0 sees it: the test
// binary run again as TestAllReduceProcessesRank1. Rank 0 sends it each
// round, "count n" a line, on its standard input; it replies "done" a
// round, a line on its file 3, and exits at the end of its input.
//
// Rank 0 may be stuck in NCCL, waiting for a rank 1 that failed, in a call
// that never returns. A watchdog then kills rank 1 and panics, as the
// testing package does past -test.timeout: when a step of rank 0 takes
// over procsTimeout, or exitGrace after rank 1 exited unasked.
type rank1 struct {
	cmd     *exec.Cmd
	rounds  io.WriteCloser
	replies *bufio.Scanner
	// out is its standard output and error, to be read once it exited.
	out    bytes.Buffer
	exited chan struct{} // closed once it exited
	err    error         // how it exited, once exited is closed

	mu     sync.Mutex
	watch  *time.Timer
	ending bool // rank 0 ends rank 1: its exit is no failure of its own
}

// exitGrace is how long rank 0 has to see that rank 1 exited unasked, by
// the end of its replies, before the watchdog ends it.
const exitGrace = 5 * time.Second

// startRank1 starts rank 1 and arms the watchdog; a cleanup of b kills
// rank 1 if it is still running.
func startRank1(b *testing.B, variant string, env []string) *rank1 {
	b.Helper()
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	replies, w, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { replies.Close() })
	defer w.Close() // rank 1 has its copy
	p := &rank1{replies: bufio.NewScanner(replies), exited: make(chan struct{})}
	// No -test.timeout: the watchdogs bound each step instead.
	p.cmd = exec.Command(exe, "-test.run=^TestAllReduceProcessesRank1$", "-test.count=1", "-test.timeout=0")
	p.cmd.Env = append(append(os.Environ(), rank1Env+"="+variant), env...)
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	p.cmd.ExtraFiles = []*os.File{w}
	p.cmd.WaitDelay = 10 * time.Second
	if p.rounds, err = p.cmd.StdinPipe(); err != nil {
		b.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	p.watch = time.AfterFunc(procsTimeout, p.timeout)
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
		p.mu.Lock()
		if !p.ending {
			p.watch.Reset(exitGrace)
		}
		p.mu.Unlock()
	}()
	b.Cleanup(p.kill)
	return p
}

// timeout is the watchdog: it kills rank 1 and panics with its output.
func (p *rank1) timeout() {
	p.cmd.Process.Kill()
	<-p.exited
	panic(fmt.Sprintf("two-process all-reduce: a step of rank 0 took over %v, or rank 1 exited unasked; rank 1 (%v) said:\n%s",
		procsTimeout, p.err, p.out.Bytes()))
}

// arm gives the next step of rank 0 procsTimeout, unless rank 1 exited
// and exitGrace runs.
func (p *rank1) arm() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.exited:
	default:
		p.watch.Reset(procsTimeout)
	}
}

// kill stops the watchdog, kills rank 1 and waits for it to exit.
func (p *rank1) kill() {
	p.mu.Lock()
	p.ending = true
	p.watch.Stop()
	p.mu.Unlock()
	p.cmd.Process.Kill()
	<-p.exited
}

// fatalf kills rank 1 and fails the benchmark with its output.
func (p *rank1) fatalf(b *testing.B, format string, args ...any) {
	b.Helper()
	p.kill()
	b.Fatalf("%s; rank 1 (%v) said:\n%s", fmt.Sprintf(format, args...), p.err, p.out.Bytes())
}

// round sends rank 1 a round of n sums of count elements.
func (p *rank1) round(b *testing.B, count uint64, n int) {
	b.Helper()
	p.arm()
	if _, err := fmt.Fprintln(p.rounds, count, n); err != nil {
		p.fatalf(b, "sending a round: %v", err)
	}
}

// done waits for rank 1's reply to the round.
func (p *rank1) done(b *testing.B) {
	b.Helper()
	if !p.replies.Scan() {
		p.fatalf(b, "rank 1 ended the round without a reply (%v)", cmp.Or(p.replies.Err(), io.EOF))
	}
	if reply := p.replies.Text(); reply != "done" {
		p.fatalf(b, "rank 1 replied %q to the round", reply)
	}
}

// finish ends rank 1's input, which rank 1 takes for the end, and waits
// for it to exit, calling closeRank meanwhile: rank 0 closes its
// communicator while rank 1 closes its own, as NCCL's finalization needs
// both.
func (p *rank1) finish(b *testing.B, closeRank func()) {
	b.Helper()
	p.mu.Lock()
	p.ending = true
	p.watch.Reset(procsTimeout)
	p.mu.Unlock()
	if err := p.rounds.Close(); err != nil {
		p.fatalf(b, "ending the rounds: %v", err)
	}
	closeRank()
	<-p.exited
	p.watch.Stop()
	if p.err != nil {
		b.Fatalf("rank 1: %v; it said:\n%s", p.err, p.out.Bytes())
	}
}

// TestAllReduceProcessesRank1 is rank 1 of the two-process benchmarks
// (BenchmarkAllReduceProcesses, BenchmarkCollectiveAllReduceProcesses,
// ...ProcessesBlocking, ...ProcessesPaired), which run it with rank1Env
// set: on device 1, it makes each round rank 0 sends, as rank 0 does, and
// replies once done (see rank1). Without rank1Env it skips.
func TestAllReduceProcessesRank1(t *testing.T) {
	variant := os.Getenv(rank1Env)
	if variant == "" {
		t.Skip("rank 1 of the two-process all-reduce benchmarks, which run it")
	}
	// The watchdog: a step stuck in NCCL, waiting for a rank 0 that is
	// gone, ends the process.
	watch := time.AfterFunc(procsTimeout, func() {
		fmt.Fprintf(os.Stderr, "rank 1: a step took over %v\n", procsTimeout)
		os.Exit(1)
	})
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	largest := allReduceSizes[len(allReduceSizes)-1]
	var r allReduceRank
	switch variant {
	case "nccl":
		var id nccl.UniqueId
		raw, err := hex.DecodeString(os.Getenv(ncclIDEnv))
		if err != nil || len(raw) != len(id.Internal) {
			t.Fatalf("$%s: %d bytes, %v", ncclIDEnv, len(raw), err)
		}
		copy(id.Internal[:], raw)
		r = newNCCLRank(t, id, 1, largest)
	case "collective", "collective-blocking", "collective-blocking-raw":
		cfg, err := collective.ConfigFromEnv()
		if err != nil {
			t.Fatal(err)
		}
		c := joinCollective(t, cfg, variant != "collective")
		if variant == "collective-blocking-raw" {
			c.useRaw(t)
		}
		r = c
	default:
		t.Fatalf("$%s=%q", rank1Env, variant)
	}
	defer r.close(t)
	replies := os.NewFile(3, "replies")
	rounds := bufio.NewScanner(os.Stdin)
	for {
		// Between rounds rank 1 waits for rank 0, which has a watchdog
		// of its own, and sees the end of its input if it is gone.
		watch.Stop()
		if !rounds.Scan() {
			break
		}
		watch.Reset(procsTimeout)
		var count uint64
		var n int
		if _, err := fmt.Sscan(rounds.Text(), &count, &n); err != nil {
			t.Fatalf("round %q: %v", rounds.Text(), err)
		}
		if err := allReduceRound(r, count, n, nil); err != nil {
			t.Fatalf("round of %d sums of %d elements: %v", n, count, err)
		}
		if _, err := fmt.Fprintln(replies, "done"); err != nil {
			t.Fatal(err)
		}
	}
	watch.Reset(procsTimeout) // for the close
	if err := rounds.Err(); err != nil {
		t.Fatal(err)
	}
}

// freePort returns a loopback port free a moment ago.
func freePort(b *testing.B) int {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
