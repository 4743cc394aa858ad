package highlevel

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocuda/cuda/internal/gpuprobe"
	"github.com/gocuda/cuda/internal/randomtest"
)

// stressKernels are TestGPUStagedCopyStress's kernels: stress_spin keeps
// the device busy, stress_fill writes v to n words.
const stressKernels = `
extern "C" __global__ void stress_spin(unsigned *p, int n, int rounds) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n) return;
	unsigned x = p[i];
	for (int r = 0; r < rounds; r++) x = x * 1664525u + 1013904223u;
	p[i] = x;
}
extern "C" __global__ void stress_fill(unsigned *p, unsigned v, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) p[i] = v;
}
`

const (
	// stressWait bounds every wait of TestGPUStagedCopyStress.
	stressWait = time.Minute
	// stressStaged is the size from which copies with pageable memory are
	// staged (see MemoryPointer.CopyFromHostPointer).
	stressStaged = 2 << 20
)

// TestGPUStagedCopyStress looks for copies that corrupt the memory they
// copy to or from when everything runs at once (issue 45: a 2-4 MiB pool
// block read back bytes never written there). Four goroutines each own a
// block of 2 to 4 MiB, two from a MemoryPool and two from Device.Alloc,
// filled at allocation with a staged CopyFromHost; each round, an owner
// writes a pattern unique to the write (its id and each word's index) to
// a span at a random offset with CopyFromHost or CopyFromHostAsync, and
// reads a span back with CopyToHost or CopyToHostAsync, half of the spans
// 2 MiB or more, which are staged through pinned buffers. Meanwhile two
// goroutines run kernels on streams of their own and two capture graphs,
// in every mode, and launch them. Every read is compared with the owner's
// copy of its block.
//
// A copy may be refused with ErrCapturing while a capture is in progress
// (a plain copy is ordered on the legacy default stream, which the package
// refuses during captures): such a refusal must have changed nothing, as
// the package promises of its refusals. Any other error fails the test.
//
// $GOCUDA_STRESS_ROUNDS sets the rounds per owner (default 20, 5 with
// -short); scripts/gpu.sh runs 1000.
func TestGPUStagedCopyStress(t *testing.T) {
	gpuprobe.Require(t)
	d, err := DefaultDevice()
	if err != nil {
		t.Fatal(err)
	}
	rounds := 20
	if testing.Short() {
		rounds = 5
	}
	rounds = randomtest.Int(t, "GOCUDA_STRESS_ROUNDS", rounds)
	c, err := Compile(stressKernels, &CompileOptions{Name: "stress.cu"})
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	m, err := LoadModule(c.Image)
	if err != nil {
		t.Fatalf("LoadModule: %v", err)
	}
	defer m.Close()
	st := &stressTest{t: t, d: d}
	if st.spin, err = m.Kernel("stress_spin"); err != nil {
		t.Fatal(err)
	}
	if st.fill, err = m.Kernel("stress_fill"); err != nil {
		t.Fatal(err)
	}
	if st.pool, err = NewMemoryPool(d); err != nil {
		t.Fatal(err)
	}
	defer st.pool.Close()
	// Load the kernels into the device before any capture: a strict
	// capture refuses the loading, at a kernel's first launch.
	warm, err := d.Alloc(4)
	if err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(st.spin.Launch(nil, stressGrid(1), warm, int32(1), int32(1)),
		st.fill.Launch(nil, stressGrid(1), warm, uint32(0), int32(1)), d.Synchronize(), warm.Free()); err != nil {
		t.Fatal(err)
	}

	// The memory is freed once no capture runs: a Free during one in
	// CaptureGlobal mode is refused, which TestGPUMixed looks at.
	var mem [8]MemoryPointer // 4 owners' blocks, 2 kernels' and 2 captures' scratch memory
	defer func() {
		for _, p := range mem {
			if p.Memory() != nil {
				if err := p.Free(); err != nil {
					t.Errorf("Free: %v", err)
				}
			}
		}
	}()
	for i := range 4 {
		if mem[4+i], err = d.Alloc(4 << 20); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	var busy, owners sync.WaitGroup
	for i := range 2 {
		busy.Go(func() { st.kernels(i, mem[4+i], stop) })
		busy.Go(func() { st.captures(i, mem[6+i], stop) })
	}
	for g := range 4 {
		owners.Go(func() { mem[g] = st.owner(g, rounds) })
	}
	owners.Wait()
	close(stop)
	busy.Wait()
	t.Logf("%d owners of %d rounds: %d copies of 2 MiB or more, %d refused during captures; %d graphs launched, %d captures refused",
		4, rounds, st.staged.Load(), st.refused.Load(), st.launched.Load(), st.capRefused.Load())
}

// A stressTest is what TestGPUStagedCopyStress's goroutines share.
type stressTest struct {
	t          *testing.T
	d          Device
	pool       *MemoryPool
	spin, fill *Kernel
	// capCount holds the captures begun (upper 32 bits) and in progress
	// (lower ones): a refusal with ErrCapturing is expected when a capture
	// was in progress at some time during the copy.
	capCount                              atomic.Int64
	ids                                   atomic.Uint32
	staged, refused, launched, capRefused atomic.Int64
}

func stressGrid(n int) LaunchConfig {
	return LaunchConfig{Grid: Dim3{X: (n + 255) / 256}, Block: Dim3{X: 256}}
}

// expected reports whether err, returned by an operation that began when
// capCount was then, is a refusal of a capture in progress.
func (st *stressTest) expected(err error, then int64) bool {
	now := st.capCount.Load()
	during := then%(1<<32) > 0 || now%(1<<32) > 0 || then>>32 != now>>32
	return during && errors.Is(err, ErrCapturing)
}

// stressPattern returns the bytes write id puts at bytes off to off+n-1 of
// a block: byte o holds byte o%4 of the word id<<20 | o/4, little-endian,
// so that a wrong word read back names the write and the word it came from.
func stressPattern(id uint32, off, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		o := off + i
		b[i] = byte(((id&0xFFF)<<20 | uint32(o/4)&0xFFFFF) >> (8 * (o % 4)))
	}
	return b
}

// owner writes and reads its own block for the given rounds, and returns
// it.
func (st *stressTest) owner(g, rounds int) MemoryPointer {
	t := st.t
	r := rand.New(rand.NewPCG(uint64(g), 45))
	s, err := NewStream(st.d, &StreamOptions{NonBlocking: true})
	if err != nil {
		t.Error(err)
		return MemoryPointer{}
	}
	defer s.Close()
	n := 2<<20 + 8*r.IntN(1<<18)
	from := "MemoryPool.Alloc"
	var p MemoryPointer
	err = st.retry(func() (err error) {
		if g%2 == 0 {
			p, err = st.pool.Alloc(n)
		} else {
			from = "Device.Alloc"
			p, err = st.d.Alloc(n)
		}
		return err
	})
	if err != nil {
		t.Errorf("owner %d: %s of %d bytes: %v", g, from, n, err)
		return MemoryPointer{}
	}
	want := stressPattern(st.ids.Add(1), 0, n)
	if err := st.retry(func() error { return CopyFromHost(p, want) }); err != nil {
		t.Errorf("owner %d: the fill of %d bytes from %s: %v", g, n, from, err)
		return p
	}
	what := fmt.Sprintf("owner %d's block of %d bytes from %s", g, n, from)
	for round := range rounds {
		st.write(r, s, p, want, fmt.Sprintf("%s, round %d", what, round))
		if !st.read(r, s, p, want, fmt.Sprintf("%s, round %d", what, round)) {
			break
		}
	}
	return p
}

// span returns a span of a block of n bytes: 2 MiB or more one time in
// two, else up to 64 KiB; start and length multiples of align.
func stressSpan(r *rand.Rand, n, align int) (lo, hi int) {
	l := 1 + r.IntN(1<<16)
	if r.IntN(2) == 0 {
		l = stressStaged + r.IntN(n-stressStaged+1)
	}
	lo = r.IntN(n-l+1) &^ (align - 1)
	if l &^= align - 1; l == 0 {
		l = align
	}
	return lo, lo + l
}

// write writes a new pattern to a span of the block at p, in one of three
// ways, and updates want, the block's model, where it worked.
func (st *stressTest) write(r *rand.Rand, s *Stream, p MemoryPointer, want []byte, what string) {
	how := r.IntN(3)
	align := 1
	if how == 1 {
		align = 4
	}
	lo, hi := stressSpan(r, len(want), align)
	data := stressPattern(st.ids.Add(1), lo, hi-lo)
	dst, err := p.Add(lo)
	if err != nil {
		st.t.Error(err)
		return
	}
	then := st.capCount.Load()
	var name string
	switch how {
	case 0:
		name, err = "CopyFromHost[byte]", CopyFromHost(dst, data)
	case 1:
		w := make([]uint32, len(data)/4)
		for i := range w {
			w[i] = binary.LittleEndian.Uint32(data[4*i:])
		}
		name, err = "CopyFromHost[uint32]", CopyFromHost(dst, w)
	case 2:
		name = "CopyFromHostAsync[byte]"
		if err = CopyFromHostAsync(s, dst, data); err == nil {
			err = st.wait(s)
		}
	}
	switch {
	case err == nil:
		copy(want[lo:hi], data)
		if hi-lo >= stressStaged {
			st.staged.Add(1)
		}
	case st.expected(err, then):
		st.refused.Add(1) // a refusal: the block is as it was
	default:
		st.t.Errorf("%s: %s to bytes %d..%d: %v", what, name, lo, hi-1, err)
	}
}

// read reads a span of the block at p in one of three ways and compares it
// with want; it reports whether it was as want says.
func (st *stressTest) read(r *rand.Rand, s *Stream, p MemoryPointer, want []byte, what string) bool {
	how := r.IntN(3)
	align := 1
	if how == 1 {
		align = 4
	}
	lo, hi := stressSpan(r, len(want), align)
	src, err := p.Add(lo)
	if err != nil {
		st.t.Error(err)
		return false
	}
	then := st.capCount.Load()
	got := make([]byte, hi-lo)
	var name string
	switch how {
	case 0:
		name, err = "CopyToHost[byte]", CopyToHost(got, src)
	case 1:
		w := make([]uint32, len(got)/4)
		name, err = "CopyToHost[uint32]", CopyToHost(w, src)
		for i, v := range w {
			binary.LittleEndian.PutUint32(got[4*i:], v)
		}
	case 2:
		// To pageable memory, CUDA has written got when the call returns.
		name, err = "CopyToHostAsync[byte]", CopyToHostAsync(s, got, src)
	}
	switch {
	case err == nil:
	case st.expected(err, then):
		st.refused.Add(1)
		return true
	default:
		st.t.Errorf("%s: %s of bytes %d..%d: %v", what, name, lo, hi-1, err)
		return false
	}
	if hi-lo >= stressStaged {
		st.staged.Add(1)
	}
	if bytes.Equal(got, want[lo:hi]) {
		return true
	}
	i := 0
	for got[i] == want[lo+i] {
		i++
	}
	bad := 0
	for j := range got {
		if got[j] != want[lo+j] {
			bad++
		}
	}
	msg := fmt.Sprintf("%s: %s of bytes %d..%d: byte %d is %#02x, want %#02x; %d bytes differ",
		what, name, lo, hi-1, lo+i, got[i], want[lo+i], bad)
	if at := (lo + i) &^ 3; at >= lo && at+4 <= hi {
		v := binary.LittleEndian.Uint32(got[at-lo:])
		msg += fmt.Sprintf("; its word reads %#08x (word %d of write %d mod 4096), want %#08x",
			v, v&0xFFFFF, v>>20, binary.LittleEndian.Uint32(want[at:]))
	}
	st.t.Error(msg)
	return false
}

// wait waits for s, within stressWait. A wait that says a capture is in
// progress, of a stream that takes part in none, is TestGPUMixed's to
// find (its hostfunc kind): here it is tried again.
func (st *stressTest) wait(s *Stream) error {
	ctx, cancel := context.WithTimeout(context.Background(), stressWait)
	defer cancel()
	return st.retry(func() error { return s.Wait(ctx) })
}

// retry calls fn until it returns anything but ErrCapturing, for at most
// stressWait: the refusals of captures in progress pass.
func (st *stressTest) retry(fn func() error) error {
	deadline := time.Now().Add(stressWait)
	for {
		err := fn()
		if !errors.Is(err, ErrCapturing) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// kernels runs busy kernels on scratch, on a stream of its own, until stop,
// waiting for them now and then.
func (st *stressTest) kernels(i int, scratch MemoryPointer, stop chan struct{}) {
	t := st.t
	r := rand.New(rand.NewPCG(uint64(i), 46))
	s, err := NewStream(st.d, &StreamOptions{NonBlocking: true, Priority: -i})
	if err != nil {
		t.Error(err)
		return
	}
	defer s.Close()
	for k := 0; ; k++ {
		select {
		case <-stop:
			if err := st.wait(s); err != nil {
				t.Errorf("kernels %d: Stream.Wait: %v", i, err)
			}
			return
		default:
		}
		n := 1<<12 + r.IntN(1<<18)
		if err := st.spin.Launch(s, stressGrid(n), scratch, int32(n), int32(16+r.IntN(512))); err != nil {
			t.Errorf("kernels %d: spin: %v", i, err)
			return
		}
		if k%8 == 7 {
			if err := st.wait(s); err != nil {
				t.Errorf("kernels %d: Stream.Wait: %v", i, err)
				return
			}
		}
	}
}

// captures captures a fill of target and a host function on a stream of
// its own, in each mode in turn, instantiates the graph, launches it and
// waits, until stop.
func (st *stressTest) captures(i int, target MemoryPointer, stop chan struct{}) {
	t := st.t
	s, err := NewStream(st.d, &StreamOptions{NonBlocking: true})
	if err != nil {
		t.Error(err)
		return
	}
	defer s.Close()
	var ran atomic.Int64
	launched := int64(0)
	for k := 0; ; k++ {
		select {
		case <-stop:
			if err := st.wait(s); err != nil {
				t.Errorf("captures %d: Stream.Wait: %v", i, err)
			}
			if ran.Load() != launched {
				t.Errorf("captures %d: %d host functions ran, want %d", i, ran.Load(), launched)
			}
			return
		default:
		}
		mode := CaptureMode((k + i) % 3)
		st.capCount.Add(1<<32 + 1)
		g, err := Capture(s, mode, func() error {
			if err := st.fill.Launch(s, stressGrid(1<<16), target, uint32(k), int32(1<<16)); err != nil {
				return err
			}
			return s.LaunchHostFunc(func() { ran.Add(1) })
		})
		st.capCount.Add(-1)
		if errors.Is(err, ErrCapturing) {
			// Another capture in CaptureGlobal mode was in progress.
			st.capRefused.Add(1)
			continue
		}
		if err != nil {
			t.Errorf("captures %d: Capture in %v mode: %v", i, mode, err)
			return
		}
		x, err := g.Instantiate(nil)
		if err == nil {
			if err = x.Launch(s); err == nil {
				launched++
				st.launched.Add(1)
				err = st.wait(s)
			}
			err = errors.Join(err, x.Close())
		}
		err = errors.Join(err, g.Close())
		if err != nil && !errors.Is(err, ErrCapturing) {
			t.Errorf("captures %d: a graph captured in %v mode: %v", i, mode, err)
			return
		}
	}
}
