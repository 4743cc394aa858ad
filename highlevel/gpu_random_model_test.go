package highlevel

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/gocuda/cuda/cudadrv"
	"github.com/gocuda/cuda/internal/testsrc"
)

// The tests of TestGPURandomOps's oracle (gpu_random_oracle_test.go): they
// need no GPU, and run wherever the package's tests do.

// randomWord is what TestRandomModel knows of a word: the values it may
// hold, nil for any.
type randomWord []uint32

// TestRandomModel checks TestGPURandomOps's model of an allocation's words
// (randomMem's runs: set, forget, maybe, copyFrom, maybeCopy, check)
// against the values each word may hold, on random writes, copies, failed
// ones and reads.
func TestRandomModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 300 {
		n := 1 + r.IntN(64)
		a, b := newRandomMem("a", n), newRandomMem("b", n)
		wa, wb := make([]randomWord, n), make([]randomWord, n)
		for op := range 60 {
			i := r.IntN(n)
			j := i + 1 + r.IntN(n-i)
			v := uint32(r.IntN(6))
			m, w := a, wa
			if r.IntN(3) == 0 {
				m, w = b, wb
			}
			var did string
			switch r.IntN(7) {
			case 0, 1:
				did = fmt.Sprintf("set(%d, %d, %d)", i, j, v)
				m.set(i, j, v, "set")
				for x := i; x < j; x++ {
					w[x] = randomWord{v}
				}
			case 2:
				did = fmt.Sprintf("forget(%d, %d)", i, j)
				m.forget(i, j)
				for x := i; x < j; x++ {
					w[x] = nil
				}
			case 3:
				did = fmt.Sprintf("maybe(%d, %d, %d)", i, j, v)
				m.maybe(i, j, v, "maybe")
				for x := i; x < j; x++ {
					w[x] = randomUnion(w[x], []uint32{v})
				}
			case 4, 5:
				k := j - i
				bi := r.IntN(n - k + 1)
				failed := r.IntN(2) == 0
				did = fmt.Sprintf("copy of b[%d:%d] to a[%d:%d] (failed %v)", bi, bi+k, i, j, failed)
				if failed {
					a.maybeCopy(i, b, bi, k, "copy")
				} else {
					a.copyFrom(i, b, bi, k)
				}
				for x := range k {
					if failed {
						wa[i+x] = randomUnion(wa[i+x], wb[bi+x])
					} else {
						wa[i+x] = wb[bi+x]
					}
				}
			case 6:
				// A read: each word one of its values (any for an unknown
				// one), now and then one it cannot hold.
				got := make([]uint32, j-i)
				bad := -1
				for x := range got {
					if c := w[i+x]; c != nil {
						got[x] = c[r.IntN(len(c))]
					} else {
						got[x] = uint32(r.IntN(100))
					}
				}
				if r.IntN(4) == 0 {
					for x := range got {
						if w[i+x] != nil {
							got[x], bad = 1000, x
							break
						}
					}
				}
				did = fmt.Sprintf("check(%d, %v)", i, got)
				msg := m.check(i, got)
				switch {
				case bad >= 0 && msg == "":
					t.Fatalf("round %d op %d: %s: word %d read 1000, outside %v, and check found nothing", round, op, did, i+bad, w[i+bad])
				case bad < 0 && msg != "":
					t.Fatalf("round %d op %d: %s: %s; the words may hold %v", round, op, did, msg, w[i:j])
				case bad < 0:
					for x := range got {
						if len(w[i+x]) > 1 {
							w[i+x] = randomWord{got[x]} // read: known from now on
						}
					}
				}
			}
			randomModelMatches(t, fmt.Sprintf("round %d op %d (%s)", round, op, did), a, wa)
			randomModelMatches(t, fmt.Sprintf("round %d op %d (%s)", round, op, did), b, wb)
		}
	}
}

// randomModelMatches checks that m's runs are well formed (the first at 0,
// none empty, neighbours merged) and say what w says of each word, and
// that runs clips to a span.
func randomModelMatches(t *testing.T, where string, m *randomMem, w []randomWord) {
	t.Helper()
	if m.segs[0].at != 0 {
		t.Fatalf("%s: the first run starts at %d", where, m.segs[0].at)
	}
	for k, s := range m.segs {
		e := m.segEnd(k)
		if e <= s.at {
			t.Fatalf("%s: empty run %d at %d..%d: %+v", where, k, s.at, e, m.segs)
		}
		if k > 0 && (m.segs[k-1].vals == nil) == (s.vals == nil) && slices.Equal(m.segs[k-1].vals, s.vals) {
			t.Fatalf("%s: runs %d and %d not merged: %+v", where, k-1, k, m.segs)
		}
		if len(s.vals) > randomCands || s.vals != nil && len(s.vals) == 0 || !slices.IsSorted(s.vals) {
			t.Fatalf("%s: run %d holds %v", where, k, s.vals)
		}
		for x := s.at; x < e; x++ {
			if !slices.Equal(w[x], s.vals) || (w[x] == nil) != (s.vals == nil) {
				t.Fatalf("%s: word %d may hold %v in the model, %v in fact", where, x, s.vals, w[x])
			}
		}
	}
	x := rand.IntN(m.n)
	y := x + 1 + rand.IntN(m.n-x)
	rs := m.runs(x, y)
	if len(rs) == 0 || rs[0].at != x || rs[len(rs)-1].end != y {
		t.Fatalf("%s: runs(%d, %d) = %+v", where, x, y, rs)
	}
	for k, r := range rs {
		if k > 0 && rs[k-1].end != r.at {
			t.Fatalf("%s: runs(%d, %d) = %+v: a gap", where, x, y, rs)
		}
		for z := r.at; z < r.end; z++ {
			if !slices.Equal(w[z], r.vals) || (w[z] == nil) != (r.vals == nil) {
				t.Fatalf("%s: runs(%d, %d): word %d may hold %v, in fact %v", where, x, y, z, r.vals, w[z])
			}
		}
	}
}

// TestRandomJudge checks how TestGPURandomOps judges errors: each part of
// a joined error must be explained by what the program did (an object it
// closed or freed, another goroutine's capture, a capture's own draws, what
// the call allows), and an error the program's actions require must come.
func TestRandomJudge(t *testing.T) {
	unsupported := opErr("launch", driverStatus(cudadrv.ERROR_STREAM_CAPTURE_UNSUPPORTED))
	unjoined := opErr("end capture", driverStatus(cudadrv.ERROR_STREAM_CAPTURE_UNJOINED))
	isolation := opErr("wait event", driverStatus(cudadrv.ERROR_STREAM_CAPTURE_ISOLATION))
	invalidated := opErr("record event", driverStatus(cudadrv.ERROR_STREAM_CAPTURE_INVALIDATED))
	unknown := opErr("launch graph", driverStatus(cudadrv.ERROR_UNKNOWN))
	closed := opErr("launch", ErrClosed)
	freed := opErr("copy", ErrFreed)
	capturing := opErr("synchronize", ErrCapturing)
	var gone = []error{ErrClosed}
	for _, c := range []struct {
		err  error
		f    randomFacts
		want []string // nil: no names
		bad  string   // a part of the problem, "" for none
	}{
		{nil, randomFacts{}, nil, ""},
		// ErrClosed only where the program closed what the call names, and
		// required once the Close had returned before the call.
		{closed, randomFacts{}, nil, "unexpected"},
		{closed, randomFacts{closing: gone}, []string{"closed"}, ""},
		{closed, randomFacts{closing: []error{ErrFreed}}, nil, "unexpected"},
		{nil, randomFacts{closing: gone}, nil, ""},
		{nil, randomFacts{before: gone, closing: gone}, nil, "want highlevel: use of closed object"},
		{capturing, randomFacts{before: gone, closing: gone, others: true}, nil, "want highlevel: use of closed object"},
		{errors.Join(closed, capturing), randomFacts{before: gone, closing: gone, others: true}, []string{"closed", "capturing"}, ""},
		// ErrFreed likewise.
		{freed, randomFacts{closing: gone}, nil, "unexpected"},
		{freed, randomFacts{closing: []error{ErrFreed}}, []string{"freed"}, ""},
		{nil, randomFacts{before: []error{ErrFreed}, closing: []error{ErrFreed}}, nil, "want highlevel: use of freed memory"},
		// ErrCapturing where another goroutine's capture overlapped, or a
		// capture's own draws require a refusal.
		{capturing, randomFacts{}, nil, "unexpected"},
		{capturing, randomFacts{others: true}, []string{"capturing"}, ""},
		{capturing, randomFacts{allow: allowCaptureStatus, must: "Query of the capturing stream"}, []string{"capturing"}, ""},
		{capturing, randomFacts{allow: allowUpdateShape, must: "an update of another shape"}, nil, "unexpected"},
		// CUDA's capture statuses: only a capture's own draws, or a close
		// of its stream, explain them; another goroutine's capture does not.
		{unsupported, randomFacts{others: true}, nil, "unexpected"},
		{unsupported, randomFacts{allow: allowCaptureStatus, others: true}, nil, "unexpected"},
		{unsupported, randomFacts{allow: allowCaptureStatus, must: "cuMemAlloc during a capture"}, []string{"capture"}, ""},
		{errors.Join(closed, unjoined), randomFacts{allow: allowCaptureStatus, closing: gone}, []string{"closed", "capture"}, ""},
		{errors.Join(closed, unjoined), randomFacts{closing: gone}, nil, "unexpected"},
		{nil, randomFacts{allow: allowCaptureStatus, must: "a fork left unjoined"}, nil, "want an error: a fork left unjoined"},
		// ISOLATION for a WaitEvent whose stream another goroutine captured
		// during the call.
		{isolation, randomFacts{allow: allowIsolation}, nil, "unexpected"},
		{isolation, randomFacts{allow: allowIsolation, isolated: true}, []string{"isolation"}, ""},
		{invalidated, randomFacts{allow: allowJoin}, nil, "unexpected"},
		{invalidated, randomFacts{allow: allowJoin, isolated: true}, []string{"joined"}, ""},
		{invalidated, randomFacts{isolated: true}, nil, "unexpected"},
		{unknown, randomFacts{allow: allowLaunchUnknown, others: true}, []string{"launchunknown"}, ""},
		{unknown, randomFacts{allow: allowLaunchUnknown}, nil, "unexpected"},
		{unknown, randomFacts{others: true}, nil, "unexpected"},
		{isolation, randomFacts{isolated: true, others: true}, nil, "unexpected"},
		// Each part must be expected.
		{opErr("capture", errors.Join(closed, errors.New("other"))), randomFacts{closing: gone, others: true}, nil, "unexpected"},
		// What only some calls allow.
		{fmt.Errorf("wait: %w", context.DeadlineExceeded), randomFacts{}, nil, "unexpected"},
		{fmt.Errorf("wait: %w", context.DeadlineExceeded), randomFacts{allow: allowDeadline}, []string{"deadline"}, ""},
		{opErr("update", driverStatus(cudadrv.ERROR_GRAPH_EXEC_UPDATE_FAILURE)), randomFacts{allow: allowDeadline}, nil, "unexpected"},
		{opErr("update", driverStatus(cudadrv.ERROR_GRAPH_EXEC_UPDATE_FAILURE)), randomFacts{allow: allowUpdateShape, must: "shape"}, []string{"updateshape"}, ""},
		{opErr("open", driverStatus(cudadrv.ERROR_INVALID_CONTEXT)), randomFacts{allow: allowIPCSelf}, []string{"ipcself"}, ""},
		{opErr("open", ErrFreed), randomFacts{allow: allowIPCSelf}, nil, "unexpected"},
		{(&Array[uint32]{}).Free(), randomFacts{allow: allowView}, []string{"view"}, ""},
		{nil, randomFacts{allow: allowView, must: "Array.Free of a view"}, nil, "want an error"},
		{opErr("begin capture", driverStatus(cudadrv.ERROR_STREAM_CAPTURE_UNSUPPORTED)), randomFacts{allow: allowLegacyCapture | allowCaptureStatus, must: "legacy"},
			[]string{"capture"}, ""},
		{opErr("begin capture", driverStatus(cudadrv.ERROR_INVALID_VALUE)), randomFacts{allow: allowLegacyCapture | allowCaptureStatus, must: "legacy"},
			[]string{"legacycapture"}, ""},
	} {
		got, problem := randomJudge(c.err, c.f)
		if !slices.Equal(got, c.want) || (c.bad == "") != (problem == "") || !strings.Contains(problem, c.bad) {
			t.Errorf("randomJudge(%v, %+v) = %v, %q; want %v, a problem with %q", c.err, c.f, got, problem, c.want, c.bad)
		}
	}
}

// TestRandomOverlap checks how TestGPURandomOps tells whether another
// goroutine's capture overlapped an operation, from capture counts read
// before and after it.
func TestRandomOverlap(t *testing.T) {
	count := func(begun, active int64) int64 { return begun<<32 + active }
	for _, c := range []struct {
		then, now, ownThen, ownNow int64
		want                       bool
	}{
		{count(3, 0), count(3, 0), 0, 0, false},
		{count(3, 1), count(3, 1), 0, 0, true},                      // one in progress
		{count(3, 0), count(4, 0), 0, 0, true},                      // one began and ended meanwhile
		{count(3, 0), count(4, 0), count(1, 0), count(2, 0), false}, // the goroutine's own
		{count(3, 0), count(5, 0), count(1, 0), count(2, 0), true},  // its own and another
		{count(3, 1), count(3, 1), count(1, 1), count(1, 1), false}, // its own in progress
		{count(3, 2), count(3, 1), count(1, 1), count(1, 1), true},  // another ended meanwhile
		{count(3, 0), count(4, 1), count(1, 0), count(2, 1), false}, // its own began and goes on
	} {
		if got := randomOverlap(c.then, c.now, c.ownThen, c.ownNow); got != c.want {
			t.Errorf("randomOverlap(%#x, %#x, %#x, %#x) = %v, want %v", c.then, c.now, c.ownThen, c.ownNow, got, c.want)
		}
	}
}

// TestRandomShortfalls checks the minimum counts: a quarter of what the
// odds make of the operations that reached the kind, checked only where
// that is randomMinExpect or more.
func TestRandomShortfalls(t *testing.T) {
	mins := []randomMinimum{{"capture ok", "capture", 0.5}, {"alloc ok", "alloc", 0.1}}
	for _, c := range []struct {
		n    map[string]int64
		want int // shortfalls
	}{
		{map[string]int64{}, 0},
		{map[string]int64{"reached capture": 100, "capture ok": 12}, 0}, // 50 expected: 12 is enough
		{map[string]int64{"reached capture": 100, "capture ok": 11}, 1},
		{map[string]int64{"reached capture": 64, "capture ok": 0}, 1}, // 32 expected
		{map[string]int64{"reached capture": 63, "capture ok": 0}, 0}, // 31.5 expected: too few to check
		{map[string]int64{"reached alloc": 1000, "capture ok": 0}, 1}, // alloc ok 0 of 100 expected
		{map[string]int64{"reached alloc": 1000, "alloc ok": 25}, 0},
	} {
		if got := randomShortfalls(c.n, mins); len(got) != c.want {
			t.Errorf("randomShortfalls(%v) = %q, want %d of them", c.n, got, c.want)
		}
	}
	// Every kind failing every time: each minimum whose expectation is
	// large enough is missed.
	n := map[string]int64{}
	for _, m := range randomMinimums {
		n["reached "+m.reached] = 1_000_000
	}
	if got := randomShortfalls(n, randomMinimums); len(got) != len(randomMinimums) {
		t.Errorf("with nothing counted, %d of %d minimums missed", len(got), len(randomMinimums))
	}
}

// TestRandomMinimumKeys checks that every minimum counts a key the
// program notes and is fraction of a kind that notes its reach: a typo
// would make the GPU test fail for a count nobody makes, or check
// nothing.
func TestRandomMinimumKeys(t *testing.T) {
	files := []string{"gpu_random_test.go", "gpu_random_basic_test.go", "gpu_random_memory_test.go", "gpu_random_graph_test.go"}
	testsrc.Require(t, files...)
	var src strings.Builder
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src.Write(b)
	}
	text := src.String()
	keys := map[string]bool{}
	for _, m := range regexp.MustCompile(`note\("([^"]+)"\)`).FindAllStringSubmatch(text, -1) {
		keys[m[1]] = true
	}
	// The keys made of parts.
	for _, class := range []string{"device", "stream-ordered", "legacy", "managed"} {
		keys["alloc "+class+" ok"] = true
	}
	for _, name := range randomWriteNames {
		keys["write "+name+" ok"] = true
	}
	for _, m := range regexp.MustCompile(`checkWhole\([^,]+, "([^"]+)"\)`).FindAllStringSubmatch(text, -1) {
		keys["check "+m[1]+" ok"] = true
	}
	for _, mode := range []CaptureMode{CaptureRelaxed, CaptureGlobal, CaptureThreadLocal} {
		keys[fmt.Sprintf("capture %v ok", mode)] = true
	}
	kinds := map[string]string{"end": "run"}
	for _, k := range randomKinds {
		name := runtime.FuncForPC(reflect.ValueOf(k.do).Pointer()).Name()
		kinds[k.name] = name[strings.LastIndex(name, ".")+1:]
	}
	for _, m := range randomMinimums {
		if !keys[m.key] {
			t.Errorf("minimum %q: the program notes no such count", m.key)
		}
		fn, ok := kinds[m.reached]
		if !ok {
			t.Errorf("minimum %q: no kind %q", m.key, m.reached)
			continue
		}
		// The kind's function notes what reached it.
		body := regexp.MustCompile(`(?s)\nfunc \((w|r) \*random(Worker|World)\) ` + fn + `\([^)]*\) \{\n(.*?)\n\}\n`).FindStringSubmatch(text)
		if body == nil || !strings.Contains(body[3], ".reached()") {
			t.Errorf("minimum %q: kind %s's function %s does not call reached", m.key, m.reached, fn)
		}
		if m.per <= 0 || m.per > 1 {
			t.Errorf("minimum %q: odds %v", m.key, m.per)
		}
	}
}

// TestLaunchUnknownBound checks the bound on the launches refused with
// CUDA_ERROR_UNKNOWN: 2, or 1 in 500 launches that worked.
func TestLaunchUnknownBound(t *testing.T) {
	for _, c := range []struct {
		unknown, launched int64
		fail              bool
	}{
		{0, 0, false}, {2, 10, false}, {3, 10, true}, {4, 2000, false}, {5, 2000, true},
	} {
		got := launchUnknownBound(map[string]int64{"expected launchunknown": c.unknown, "graphs launched": c.launched})
		if (got != "") != c.fail {
			t.Errorf("%d refused of %d launched: %q, want a failure %v", c.unknown, c.launched, got, c.fail)
		}
	}
}
