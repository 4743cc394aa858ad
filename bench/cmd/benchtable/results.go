package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"

	"golang.org/x/perf/benchfmt"
)

// A source is one of the implementations being compared.
type source int

const (
	srcC source = iota
	srcGo
	srcCuPy
	srcCudaCore
	numSources
)

// sourceNames are the sources as named in the CSV header and in warnings.
var sourceNames = [numSources]string{"c", "go", "cupy", "cudacore"}

// sourceLabels are the sources as named in the table and the chart.
var sourceLabels = [numSources]string{"C", "Go", "CuPy", "cuda.core"}

// minRuns is the number of repetitions below which a warning is printed.
const minRuns = 5

// stats summarizes the repetitions of one benchmark from one source.
// A missing measurement is NaN.
type stats struct {
	ns   float64 // median ns/op
	mbps float64 // median MB/s (1e6 bytes/s)
	runs int     // number of result lines
}

// readSource reads the benchmark files names as one source and returns the
// stats of each benchmark by normalized name. Malformed lines are reported
// to warn and skipped.
func readSource(names []string, warn io.Writer) (map[string]*stats, error) {
	type samples struct {
		ns, mbps []float64
		runs     int
	}
	all := make(map[string]*samples)
	for _, name := range names {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		r := benchfmt.NewReader(f, name)
		for r.Scan() {
			switch rec := r.Result().(type) {
			case *benchfmt.SyntaxError:
				fmt.Fprintf(warn, "benchtable: warning: %v\n", rec)
			case *benchfmt.Result:
				key := normalizeName(rec.Name)
				s := all[key]
				if s == nil {
					s = new(samples)
					all[key] = s
				}
				s.runs++
				// The reader tidies ns/op to sec/op and MB/s to B/s.
				if v, ok := rec.Value("sec/op"); ok {
					s.ns = append(s.ns, v*1e9)
				}
				if v, ok := rec.Value("B/s"); ok {
					s.mbps = append(s.mbps, v/1e6)
				}
			}
		}
		err = r.Err()
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", name, err)
		}
	}
	out := make(map[string]*stats, len(all))
	for key, s := range all {
		out[key] = &stats{ns: median(s.ns), mbps: median(s.mbps), runs: s.runs}
	}
	return out, nil
}

// normalizeName returns the benchmark name n without its GOMAXPROCS suffix
// (the reader already dropped the "Benchmark" prefix):
// "AllReduce/size=256MiB-32" becomes "AllReduce/size=256MiB".
func normalizeName(n benchfmt.Name) string {
	base, parts := n.Parts()
	var b strings.Builder
	b.Write(base)
	for _, p := range parts {
		if p[0] != '-' {
			b.Write(p)
		}
	}
	return b.String()
}

// median returns the median of xs, or NaN if xs is empty. It sorts xs.
func median(xs []float64) float64 {
	n := len(xs)
	if n == 0 {
		return math.NaN()
	}
	slices.Sort(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// A kind says what a row's benchmark measures.
type kind int

const (
	timeKind      kind = iota // latency: shown as ns/op
	bandwidthKind             // a copy or fill: shown as GB/s
)

func (k kind) String() string {
	if k == bandwidthKind {
		return "bandwidth"
	}
	return "time"
}

// A targetKind says how a row's target is evaluated.
type targetKind int

const (
	noTarget    targetKind = iota
	ratioTarget            // Go's time over C's at most value
	absTarget              // Go's time at most value ns
	overCTarget            // Go's time at most C's plus value ns
)

// A target is what Go's result must meet.
type target struct {
	kind  targetKind
	value float64
}

// A spec describes one row of the table.
type spec struct {
	name   string // normalized benchmark name
	label  string // operation, as shown
	kind   kind
	target target
	// c is the C benchmark the row is compared with, when it is not name:
	// two ways of doing one thing in Go are compared with the one C way.
	c string
}

// specs are the rows of the table, in order.
var specs = []spec{
	{"GetDevice", "cudaGetDevice", timeKind, target{absTarget, 73}, ""},
	{"CtxGetDevice", "cuCtxGetDevice", timeKind, target{}, ""},
	{"DeviceAttribute", "device attribute (multiprocessor count)", timeKind, target{}, ""},
	{"LaunchEmpty", "empty kernel launch, throughput", timeKind, target{ratioTarget, 1.05}, ""},
	{"LaunchEmpty", "empty kernel launch, vs C on the same driver path", timeKind, target{ratioTarget, 1.05}, "LaunchEmptyLibrary"},
	{"LaunchEmptyRaw", "empty kernel launch, raw bindings, vs C on the same driver path", timeKind, target{}, "LaunchEmptyLibrary"},
	{"LaunchArgs", "kernel launch with 4 arguments, throughput", timeKind, target{}, ""},
	{"LaunchSync", "empty kernel launch + synchronize", timeKind, target{}, ""},
	{"PoolMallocFree", "pool malloc + free, 1 MiB", timeKind, target{absTarget, 150}, ""},
	{"MallocAsyncFree", "AllocAsync + FreeAsync, 1 MiB", timeKind, target{ratioTarget, 1.2}, ""},
	{"MallocAsyncFree", "AllocAsync + FreeAsync, 1 MiB, vs C from the same pool", timeKind, target{ratioTarget, 1.2}, "MallocFromPoolAsyncFree"},
	{"MallocAsyncFree", "AllocAsync + FreeAsync, 1 MiB, vs C's driver calls", timeKind, target{}, "MallocAsyncFreeDriver"},
	{"MallocAsyncFree", "AllocAsync + FreeAsync, 1 MiB, vs C's driver calls and the shim's questions", timeKind, target{}, "MallocAsyncFreeShim"},
	{"MallocAsyncFreePaired", "AllocAsync + FreeAsync, 1 MiB, alternating with C's calls in one process", timeKind, target{ratioTarget, 1.2}, ""},
	{"MallocAsyncFreeRawPaired", "cuMemAllocFromPoolAsync + cuMemFreeAsync, raw bindings, alternating with C's calls", timeKind, target{}, ""},
	{"EventRecord", "event record", timeKind, target{overCTarget, 50}, ""},
	{"StreamCreateDestroy", "stream create + destroy", timeKind, target{ratioTarget, 1.1}, ""},
	{"Mix", "stream mix: memset + 20 launches + D2D copy, 4 KiB", timeKind, target{ratioTarget, 1.05}, ""},
	{"MixPaired", "stream mix, alternating with C's calls in one process", timeKind, target{ratioTarget, 1.05}, ""},
	{"MixGraph", "stream mix captured once into a graph, vs C's calls", timeKind, target{}, "Mix"},
	{"MixMemset", "the mix's memset, 4 KiB", timeKind, target{}, ""},
	{"MixLaunch", "the mix's launch (axpy, 4 arguments)", timeKind, target{}, ""},
	{"MixD2D", "the mix's D2D copy, 4 KiB", timeKind, target{}, ""},
	{"Graph100", "graph of 100 empty kernels, launch + sync", timeKind, target{ratioTarget, 1.02}, ""},
	{"Graph100", "graph of 100 empty kernels, vs C on the same driver path", timeKind, target{ratioTarget, 1.02}, "Graph100Library"},
	{"WhileNode", "while node: 1000 runs of a kernel that sets the condition, launch + sync", timeKind, target{ratioTarget, 1.02}, ""},
	{"WhileNode", "while node, 1000 runs, vs C's host loop (flag in mapped memory)", timeKind, target{ratioTarget, 1}, "WhileHostLoop"},
	{"WhileNode", "while node, 1000 runs, vs C's host loop (flag copied back)", timeKind, target{ratioTarget, 1}, "WhileHostLoopCopy"},
	{"WhileHostLoop", "host loop: 1000 launches + syncs, flag in mapped memory", timeKind, target{}, ""},
	{"WhileHostLoopCopy", "host loop: 1000 launches + flag D2H copies + syncs", timeKind, target{}, ""},
	{"GraphBuild100", "graph of 100 kernel nodes: build + instantiate + destroy", timeKind, target{ratioTarget, 1.10}, ""},
	{"GraphSetKernelArgs", "graph kernel node: set arguments + launch + sync", timeKind, target{ratioTarget, 1.05}, ""},
	{"GraphBuild100Paired", "graph of 100 kernel nodes, alternating with C's calls in one process", timeKind, target{ratioTarget, 1.10}, ""},
	{"GraphSetKernelArgsPaired", "graph kernel node arguments, alternating with C's calls in one process", timeKind, target{ratioTarget, 1.05}, ""},
	{"H2DPinned", "H2D pinned, 256 MiB", bandwidthKind, target{ratioTarget, 1.02}, ""},
	{"D2HPinned", "D2H pinned, 256 MiB", bandwidthKind, target{ratioTarget, 1.02}, ""},
	{"H2DPageable", "H2D pageable, 256 MiB", bandwidthKind, target{ratioTarget, 0.5}, ""},
	{"D2HPageable", "D2H pageable, 256 MiB", bandwidthKind, target{ratioTarget, 0.5}, ""},
	{"H2DPageableUnstaged", "H2D pageable, 256 MiB, unstaged (cudaMemcpy)", bandwidthKind, target{}, "H2DPageable"},
	{"D2HPageableUnstaged", "D2H pageable, 256 MiB, unstaged (cudaMemcpy)", bandwidthKind, target{}, "D2HPageable"},
	{"H2DRegistered", "H2D pageable, 256 MiB, registered for the copy", bandwidthKind, target{}, "H2DPageable"},
	{"D2D", "D2D, 256 MiB", bandwidthKind, target{ratioTarget, 1.02}, ""},
	{"D2DDefaultKind", "D2D, 256 MiB, cudaMemcpyDefault (raw)", bandwidthKind, target{}, "D2D"},
	{"Memset", "memset, 256 MiB", bandwidthKind, target{ratioTarget, 1.02}, ""},
	{"Sgemm8192", "SGEMM 8192³ (linalg.MatMul)", timeKind, target{ratioTarget, 1.01}, ""},
	{"Wait/EventWait/kernel=10us", "wait for a 10 µs kernel: Event.Wait, vs cudaEventSynchronize", timeKind, target{ratioTarget, 1.2}, "WaitSync/kernel=10us"},
	{"Wait/EventWait/kernel=100us", "wait for a 100 µs kernel: Event.Wait", timeKind, target{ratioTarget, 1.2}, "WaitSync/kernel=100us"},
	{"Wait/EventWait/kernel=1000us", "wait for a 1 ms kernel: Event.Wait", timeKind, target{ratioTarget, 1.2}, "WaitSync/kernel=1000us"},
	{"Wait/StreamWait/kernel=10us", "wait for a 10 µs kernel: Stream.Wait", timeKind, target{ratioTarget, 1.2}, "WaitSync/kernel=10us"},
	{"Wait/StreamWait/kernel=100us", "wait for a 100 µs kernel: Stream.Wait", timeKind, target{ratioTarget, 1.2}, "WaitSync/kernel=100us"},
	{"Wait/StreamWait/kernel=1000us", "wait for a 1 ms kernel: Stream.Wait", timeKind, target{ratioTarget, 1.2}, "WaitSync/kernel=1000us"},
	{"Wait/StreamDone/kernel=10us", "wait for a 10 µs kernel: <-Stream.Done()", timeKind, target{ratioTarget, 1.2}, "WaitSync/kernel=10us"},
	{"Wait/StreamDone/kernel=100us", "wait for a 100 µs kernel: <-Stream.Done()", timeKind, target{ratioTarget, 1.2}, "WaitSync/kernel=100us"},
	{"Wait/StreamDone/kernel=1000us", "wait for a 1 ms kernel: <-Stream.Done()", timeKind, target{ratioTarget, 1.2}, "WaitSync/kernel=1000us"},
	{"Wait/EventWait/kernel=10us", "wait for a 10 µs kernel: Event.Wait, vs a blocking-sync event", timeKind, target{}, "WaitSyncBlocking/kernel=10us"},
	{"Wait/EventWait/kernel=1000us", "wait for a 1 ms kernel: Event.Wait, vs a blocking-sync event", timeKind, target{}, "WaitSyncBlocking/kernel=1000us"},
	{"Serve/Wait/workers=1/kernel=10us", "serving, 1 worker, 10 µs: Stream.Wait vs blocking C", timeKind, target{ratioTarget, 1}, "ServeBlocking/workers=1/kernel=10us"},
	{"Serve/Wait/workers=1/kernel=100us", "serving, 1 worker, 100 µs: Stream.Wait vs blocking C", timeKind, target{ratioTarget, 1}, "ServeBlocking/workers=1/kernel=100us"},
	{"Serve/Wait/workers=1/kernel=1000us", "serving, 1 worker, 1 ms: Stream.Wait vs blocking C", timeKind, target{ratioTarget, 1}, "ServeBlocking/workers=1/kernel=1000us"},
	{"Serve/Wait/workers=16/kernel=10us", "serving, 16 workers, 10 µs: Stream.Wait vs blocking C", timeKind, target{ratioTarget, 1}, "ServeBlocking/workers=16/kernel=10us"},
	{"Serve/Wait/workers=16/kernel=100us", "serving, 16 workers, 100 µs: Stream.Wait vs blocking C", timeKind, target{ratioTarget, 1}, "ServeBlocking/workers=16/kernel=100us"},
	{"Serve/Wait/workers=16/kernel=1000us", "serving, 16 workers, 1 ms: Stream.Wait vs blocking C", timeKind, target{ratioTarget, 1}, "ServeBlocking/workers=16/kernel=1000us"},
	{"Serve/Wait/workers=64/kernel=10us", "serving, 64 workers, 10 µs: Stream.Wait vs blocking C", timeKind, target{ratioTarget, 1}, "ServeBlocking/workers=64/kernel=10us"},
	{"Serve/Wait/workers=64/kernel=100us", "serving, 64 workers, 100 µs: Stream.Wait vs blocking C", timeKind, target{ratioTarget, 1}, "ServeBlocking/workers=64/kernel=100us"},
	{"Serve/Wait/workers=64/kernel=1000us", "serving, 64 workers, 1 ms: Stream.Wait vs blocking C", timeKind, target{ratioTarget, 1}, "ServeBlocking/workers=64/kernel=1000us"},
	{"Serve/Done/workers=1/kernel=10us", "serving, 1 worker, 10 µs: <-Stream.Done() vs blocking C", timeKind, target{ratioTarget, 1}, "ServeBlocking/workers=1/kernel=10us"},
	{"Serve/Done/workers=1/kernel=100us", "serving, 1 worker, 100 µs: <-Stream.Done() vs blocking C", timeKind, target{ratioTarget, 1}, "ServeBlocking/workers=1/kernel=100us"},
	{"Serve/Done/workers=1/kernel=1000us", "serving, 1 worker, 1 ms: <-Stream.Done() vs blocking C", timeKind, target{ratioTarget, 1}, "ServeBlocking/workers=1/kernel=1000us"},
	{"Serve/Done/workers=16/kernel=10us", "serving, 16 workers, 10 µs: <-Stream.Done() vs blocking C", timeKind, target{ratioTarget, 1}, "ServeBlocking/workers=16/kernel=10us"},
	{"Serve/Done/workers=16/kernel=100us", "serving, 16 workers, 100 µs: <-Stream.Done() vs blocking C", timeKind, target{ratioTarget, 1}, "ServeBlocking/workers=16/kernel=100us"},
	{"Serve/Done/workers=16/kernel=1000us", "serving, 16 workers, 1 ms: <-Stream.Done() vs blocking C", timeKind, target{ratioTarget, 1}, "ServeBlocking/workers=16/kernel=1000us"},
	{"Serve/Done/workers=64/kernel=10us", "serving, 64 workers, 10 µs: <-Stream.Done() vs blocking C", timeKind, target{ratioTarget, 1}, "ServeBlocking/workers=64/kernel=10us"},
	{"Serve/Done/workers=64/kernel=100us", "serving, 64 workers, 100 µs: <-Stream.Done() vs blocking C", timeKind, target{ratioTarget, 1}, "ServeBlocking/workers=64/kernel=100us"},
	{"Serve/Done/workers=64/kernel=1000us", "serving, 64 workers, 1 ms: <-Stream.Done() vs blocking C", timeKind, target{ratioTarget, 1}, "ServeBlocking/workers=64/kernel=1000us"},
	{"AllReduce/size=64MiB", "NCCL all-reduce 2 GPUs, 64 MiB", timeKind, target{ratioTarget, 1 / 0.95}, ""},
	{"AllReduce/size=256MiB", "NCCL all-reduce 2 GPUs, 256 MiB", timeKind, target{ratioTarget, 1 / 0.95}, ""},
	{"AllReduce/size=1GiB", "NCCL all-reduce 2 GPUs, 1 GiB", timeKind, target{ratioTarget, 1 / 0.95}, ""},
	{"AllReducePaired/size=32KiB", "NCCL all-reduce 2 GPUs, 32 KiB, alternating with C's calls in one process", timeKind, target{ratioTarget, 1 / 0.95}, ""},
	{"AllReducePaired/size=256KiB", "NCCL all-reduce 2 GPUs, 256 KiB, alternating with C's calls in one process", timeKind, target{ratioTarget, 1 / 0.95}, ""},
	{"CollectiveAllReduce/size=32KiB", "all-reduce 2 GPUs through highlevel/collective, 32 KiB, vs C", timeKind, target{ratioTarget, 1 / 0.95}, "AllReduce/size=32KiB"},
	{"CollectiveAllReduce/size=2MiB", "all-reduce 2 GPUs through highlevel/collective, 2 MiB, vs C", timeKind, target{ratioTarget, 1 / 0.98}, "AllReduce/size=2MiB"},
	{"CollectiveAllReduce/size=1GiB", "all-reduce 2 GPUs through highlevel/collective, 1 GiB, vs C", timeKind, target{ratioTarget, 1 / 0.98}, "AllReduce/size=1GiB"},
	{"CollectiveAllReduceBlocking/size=32KiB", "all-reduce 2 GPUs through highlevel/collective, blocking, 32 KiB, vs C", timeKind, target{ratioTarget, 1 / 0.95}, "AllReduce/size=32KiB"},
	{"CollectiveAllReduceBlocking/size=2MiB", "all-reduce 2 GPUs through highlevel/collective, blocking, 2 MiB, vs C", timeKind, target{ratioTarget, 1 / 0.98}, "AllReduce/size=2MiB"},
	{"AllReduceProcesses/size=32KiB", "NCCL all-reduce 2 GPUs, two processes, 32 KiB", timeKind, target{ratioTarget, 1 / 0.95}, ""},
	{"AllReduceProcesses/size=256KiB", "NCCL all-reduce 2 GPUs, two processes, 256 KiB", timeKind, target{ratioTarget, 1 / 0.95}, ""},
	{"AllReduceProcesses/size=2MiB", "NCCL all-reduce 2 GPUs, two processes, 2 MiB", timeKind, target{ratioTarget, 1 / 0.98}, ""},
	{"AllReduceProcesses/size=64MiB", "NCCL all-reduce 2 GPUs, two processes, 64 MiB", timeKind, target{ratioTarget, 1 / 0.98}, ""},
	{"AllReduceProcesses/size=1GiB", "NCCL all-reduce 2 GPUs, two processes, 1 GiB", timeKind, target{ratioTarget, 1 / 0.98}, ""},
	{"CollectiveAllReduceProcesses/size=32KiB", "all-reduce 2 GPUs, two processes, through highlevel/collective, 32 KiB, vs C", timeKind, target{ratioTarget, 1 / 0.95}, "AllReduceProcesses/size=32KiB"},
	{"CollectiveAllReduceProcesses/size=2MiB", "all-reduce 2 GPUs, two processes, through highlevel/collective, 2 MiB, vs C", timeKind, target{ratioTarget, 1 / 0.98}, "AllReduceProcesses/size=2MiB"},
	{"CollectiveAllReduceProcesses/size=1GiB", "all-reduce 2 GPUs, two processes, through highlevel/collective, 1 GiB, vs C", timeKind, target{ratioTarget, 1 / 0.98}, "AllReduceProcesses/size=1GiB"},
	{"CollectiveAllReduceProcessesBlocking/size=32KiB", "all-reduce 2 GPUs, two processes, through highlevel/collective, blocking, 32 KiB, vs C", timeKind, target{ratioTarget, 1 / 0.95}, "AllReduceProcesses/size=32KiB"},
	{"CollectiveAllReduceProcessesBlocking/size=2MiB", "all-reduce 2 GPUs, two processes, through highlevel/collective, blocking, 2 MiB, vs C", timeKind, target{ratioTarget, 1 / 0.98}, "AllReduceProcesses/size=2MiB"},
	{"Regenerate", "regenerate all bindings (2 cores, dev machine)", timeKind, target{absTarget, 5e9}, ""},
}

// A row is a spec with the results of each source; a missing one is nil.
type row struct {
	spec
	res [numSources]*stats
}

// buildRows returns the rows of specs that have a Go result.
func buildRows(results [numSources]map[string]*stats) []row {
	var rows []row
	for _, sp := range specs {
		if results[srcGo][sp.name] == nil {
			continue
		}
		r := row{spec: sp}
		for src := range numSources {
			r.res[src] = results[src][sp.name]
		}
		if sp.c != "" {
			r.res[srcC] = results[srcC][sp.c]
		}
		rows = append(rows, r)
	}
	return rows
}

// ns returns the median ns/op of src, or NaN.
func (r *row) ns(src source) float64 {
	if s := r.res[src]; s != nil {
		return s.ns
	}
	return math.NaN()
}

// gbps returns the median bandwidth of src in GB/s, or NaN.
func (r *row) gbps(src source) float64 {
	if s := r.res[src]; s != nil {
		return s.mbps / 1000
	}
	return math.NaN()
}

// ratio returns the time of src relative to C's, or NaN. For bandwidth
// rows without times it is C's bandwidth over src's.
func (r *row) ratio(src source) float64 {
	if q := r.ns(src) / r.ns(srcC); finite(q) {
		return q
	}
	if q := r.gbps(srcC) / r.gbps(src); r.kind == bandwidthKind && finite(q) {
		return q
	}
	return math.NaN()
}

// finite reports whether x is neither NaN nor infinite.
func finite(x float64) bool {
	return !math.IsNaN(x) && !math.IsInf(x, 0)
}

// met reports whether Go meets the row's target; ok is false when there is
// no target or the results to evaluate it are missing.
func (r *row) met() (met, ok bool) {
	var v, limit float64
	switch r.target.kind {
	case ratioTarget:
		v, limit = r.ratio(srcGo), r.target.value
	case absTarget:
		v, limit = r.ns(srcGo), r.target.value
	case overCTarget:
		v, limit = r.ns(srcGo), r.ns(srcC)+r.target.value
	default:
		return false, false
	}
	if !finite(v) || !finite(limit) {
		return false, false
	}
	return v <= limit, true
}

// fewRuns returns "source:name (runs)" for each result in rows with fewer
// than minRuns repetitions.
func fewRuns(rows []row) []string {
	var few []string
	for _, r := range rows {
		for src, s := range r.res {
			if s != nil && s.runs < minRuns {
				few = append(few, fmt.Sprintf("%s:%s (%d)", sourceNames[src], r.name, s.runs))
			}
		}
	}
	return few
}
