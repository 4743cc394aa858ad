package bench

import (
	"slices"
	"testing"
	"time"
)

// paired times Go's side of a benchmark against C's, in blocks of block
// operations that take turns, each block ended by sync (the wait for its
// streams):
// b.N operations of each. goSide and cSide make n operations. Separate runs
// of the two drift apart by more than the few percent the targets allow;
// blocks a few milliseconds apart see the same host. It reports the median
// time of an operation of each (ns/op for Go, c-ns/op for C) and the median
// of the blocks' ratios (go/c).
func paired(b *testing.B, sync func() error, block int, goSide, cSide func(n int) error) {
	b.Helper()
	pairedAs(b, "c", sync, block, goSide, cSide)
}

// pairedAs is paired with another side than C's: the name of that side
// names its metrics, name-ns/op and go/name.
func pairedAs(b *testing.B, name string, sync func() error, block int, goSide, cSide func(n int) error) {
	b.Helper()
	sides := [2]func(int) error{goSide, cSide}
	// timed times n operations of side i, in ns an operation.
	timed := func(i, n int) float64 {
		start := time.Now()
		if err := sides[i](n); err != nil {
			b.Fatal(err)
		}
		if err := sync(); err != nil {
			b.Fatal(err)
		}
		return float64(time.Since(start).Nanoseconds()) / float64(n)
	}
	timed(0, block) // warm up
	timed(1, block)
	var goNs, cNs, ratios []float64
	b.ResetTimer()
	for done := 0; done < b.N; done += block {
		n := min(block, b.N-done)
		var t [2]float64
		first := len(ratios) % 2 // the sides take turns going first
		t[first] = timed(first, n)
		t[1-first] = timed(1-first, n)
		goNs, cNs, ratios = append(goNs, t[0]), append(cNs, t[1]), append(ratios, t[0]/t[1])
	}
	b.StopTimer()
	b.ReportMetric(median(goNs), "ns/op")
	b.ReportMetric(median(cNs), name+"-ns/op")
	b.ReportMetric(median(ratios), "go/"+name)
}

// median returns the median of v, which it sorts.
func median(v []float64) float64 {
	slices.Sort(v)
	if n := len(v); n%2 == 0 {
		return (v[n/2-1] + v[n/2]) / 2
	}
	return v[len(v)/2]
}
