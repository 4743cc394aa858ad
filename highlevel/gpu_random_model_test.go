package highlevel

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gocuda/cuda/cudadrv"
)

// TestRandomModel checks TestGPURandomOps's model of an allocation's words
// (randomMem's runs: set, copyFrom, runs) against one value per word, on
// random writes and copies. It needs no GPU.
func TestRandomModel(t *testing.T) {
	type word struct {
		v     uint32
		known bool
	}
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		n := 1 + r.IntN(64)
		a := &randomMem{n: n, segs: []randomSeg{{at: 0}}}
		b := &randomMem{n: n, segs: []randomSeg{{at: 0}}}
		wa, wb := make([]word, n), make([]word, n)
		for op := range 50 {
			i := r.IntN(n)
			j := i + 1 + r.IntN(n-i)
			v, known := uint32(r.IntN(4)), r.IntN(5) != 0
			switch r.IntN(3) {
			case 0:
				a.set(i, j, v, known, "")
				for x := i; x < j; x++ {
					wa[x] = word{v, known}
				}
			case 1:
				b.set(i, j, v, known, "")
				for x := i; x < j; x++ {
					wb[x] = word{v, known}
				}
			case 2:
				m := j - i
				bi := r.IntN(n - m + 1)
				a.copyFrom(i, b, bi, m)
				copy(wa[i:j], wb[bi:bi+m])
			}
			for _, c := range []struct {
				m *randomMem
				w []word
			}{{a, wa}, {b, wb}} {
				if c.m.segs[0].at != 0 {
					t.Fatalf("round %d op %d: the first run starts at %d", round, op, c.m.segs[0].at)
				}
				for k, s := range c.m.segs {
					e := c.m.segEnd(k)
					if e <= s.at {
						t.Fatalf("round %d op %d: empty run %d at %d..%d: %+v", round, op, k, s.at, e, c.m.segs)
					}
					if k > 0 && c.m.segs[k-1].known == s.known && (!s.known || c.m.segs[k-1].v == s.v) {
						t.Fatalf("round %d op %d: runs %d and %d not merged: %+v", round, op, k-1, k, c.m.segs)
					}
					for x := s.at; x < e; x++ {
						if c.w[x].known != s.known || s.known && c.w[x].v != s.v {
							t.Fatalf("round %d op %d: word %d is %+v in the model, %+v in fact", round, op, x, s, c.w[x])
						}
					}
				}
				// runs clips to the span asked for.
				x := r.IntN(n)
				y := x + 1 + r.IntN(n-x)
				rs := c.m.runs(x, y)
				if len(rs) == 0 || rs[0].at != x {
					t.Fatalf("round %d op %d: runs(%d, %d) = %+v", round, op, x, y, rs)
				}
				for k, s := range rs {
					e := y
					if k+1 < len(rs) {
						e = rs[k+1].at
					}
					for z := s.at; z < e; z++ {
						if c.w[z].known != s.known || s.known && c.w[z].v != s.v {
							t.Fatalf("round %d op %d: runs(%d, %d): word %d is %+v, in fact %+v", round, op, x, y, z, s, c.w[z])
						}
					}
				}
			}
		}
	}
}

// TestRandomExpected checks how TestGPURandomOps sorts errors: each part
// of a joined error must be expected, capture statuses only during a
// capture, the errors of some calls only where they are allowed.
func TestRandomExpected(t *testing.T) {
	unsupported := opErr("launch", driverStatus(cudadrv.ERROR_STREAM_CAPTURE_UNSUPPORTED))
	closed := opErr("launch", ErrClosed)
	for _, c := range []struct {
		err    error
		allow  randomAllow
		window bool
		want   []string // nil: unexpected
	}{
		{closed, 0, false, []string{"closed"}},
		{unsupported, 0, false, nil},
		{unsupported, 0, true, []string{"capture"}},
		{errors.Join(closed, unsupported), 0, true, []string{"closed", "capture"}},
		{errors.Join(closed, unsupported), 0, false, nil},
		{opErr("capture", errors.Join(closed, errors.New("other"))), 0, true, nil},
		{fmt.Errorf("wait: %w", context.DeadlineExceeded), 0, false, nil},
		{fmt.Errorf("wait: %w", context.DeadlineExceeded), allowDeadline, false, []string{"deadline"}},
		{opErr("update", driverStatus(cudadrv.ERROR_GRAPH_EXEC_UPDATE_FAILURE)), allowDeadline, true, nil},
		{opErr("update", driverStatus(cudadrv.ERROR_GRAPH_EXEC_UPDATE_FAILURE)), allowUpdateShape, false, []string{"updateshape"}},
		{opErr("open", driverStatus(cudadrv.ERROR_INVALID_CONTEXT)), allowIPCSelf, false, []string{"ipcself"}},
		{opErr("open", ErrFreed), allowIPCSelf, false, nil},
		{(&Array[uint32]{}).Free(), allowView, false, []string{"view"}},
		{opErr("begin capture", driverStatus(cudadrv.ERROR_INVALID_VALUE)), allowLegacyCapture, false, []string{"legacycapture"}},
	} {
		got, ok := randomClassify(c.err, c.allow, c.window)
		if ok != (c.want != nil) || !slices.Equal(got, c.want) {
			t.Errorf("randomClassify(%v, %b, window %v) = %v, %v; want %v", c.err, c.allow, c.window, got, ok, c.want)
		}
	}
}
