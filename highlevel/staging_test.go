package highlevel

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

// fakeDMA is a device for the pipeline: a copy queued through a buffer runs
// only when the pipeline waits for that buffer, as a DMA engine's would run
// some time after it was queued. A pipeline that touched a buffer before
// waiting for it would move stale or overwritten bytes, and the comparison
// of the results would catch it.
type fakeDMA struct {
	t        *testing.T
	p        *pipeline
	dev      []byte
	toDevice bool
	queued   [2][]func()
	failAt   int // the start call that fails, counting from 1; 0 for none
	starts   int
}

func newFakeDMA(t *testing.T, dev []byte, chunk int, toDevice bool) *fakeDMA {
	f := &fakeDMA{t: t, p: &pipeline{}, dev: dev, toDevice: toDevice}
	for i := range f.p.bufs {
		f.p.bufs[i] = bytes.Repeat([]byte{0xEE}, chunk)
	}
	f.p.start = func(b, off, l int) error {
		f.starts++
		if f.starts == f.failAt {
			return errors.New("injected failure")
		}
		if len(f.queued[b]) != 0 {
			t.Errorf("chunk at %d queued through buffer %d while the device still copies it", off, b)
		}
		buf := f.p.bufs[b][:l]
		dev := f.dev[off : off+l]
		f.queued[b] = append(f.queued[b], func() {
			if f.toDevice {
				copy(dev, buf)
			} else {
				copy(buf, dev)
			}
		})
		return nil
	}
	f.p.wait = func(b int) error {
		for _, c := range f.queued[b] {
			c()
		}
		f.queued[b] = nil
		return nil
	}
	return f
}

func (f *fakeDMA) idle() bool { return len(f.queued[0]) == 0 && len(f.queued[1]) == 0 }

func pattern(n, seed int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + seed + i>>11)
	}
	return b
}

func TestPipeline(t *testing.T) {
	chunk := 4096 + 3
	for _, n := range []int{1, 100, chunk - 1, chunk, chunk + 1, 2 * chunk, 2*chunk + 1, 3 * chunk, 5*chunk + 17, 64 * chunk} {
		for _, align := range []int{0, 1, 3, 8} {
			for _, toDevice := range []bool{true, false} {
				t.Run(fmt.Sprintf("n=%d/align=%d/toDevice=%v", n, align, toDevice), func(t *testing.T) {
					host := pattern(n+align, 1)[align:]
					dev := pattern(n, 2)
					want := bytes.Clone(dev)
					if toDevice {
						want = bytes.Clone(host)
					} else {
						host = make([]byte, n+align)[align:]
					}
					f := newFakeDMA(t, dev, chunk, toDevice)
					var err error
					if toDevice {
						err = f.p.toDevice(host)
					} else {
						err = f.p.fromDevice(host)
					}
					if err != nil {
						t.Fatal(err)
					}
					if !f.idle() {
						t.Error("returned with copies queued")
					}
					got := host
					if toDevice {
						got = dev
					}
					if !bytes.Equal(got, want) {
						t.Errorf("copy differs at byte %d", firstDifference(got, want))
					}
				})
			}
		}
	}
}

// TestPipelineFailure checks that a failed start is returned and that the
// pipeline waits for the copies already queued, so that no buffer goes
// back to its pool while the device copies it.
func TestPipelineFailure(t *testing.T) {
	const chunk, n = 1000, 10000
	for _, failAt := range []int{1, 2, 3, 7} {
		for _, toDevice := range []bool{true, false} {
			f := newFakeDMA(t, make([]byte, n), chunk, toDevice)
			f.failAt = failAt
			var err error
			if toDevice {
				err = f.p.toDevice(make([]byte, n))
			} else {
				err = f.p.fromDevice(make([]byte, n))
			}
			if err == nil || err.Error() != "injected failure" {
				t.Errorf("failing start %d (toDevice %v): got %v, want the injected failure", failAt, toDevice, err)
			}
			if !f.idle() {
				t.Errorf("failing start %d (toDevice %v): returned with copies queued", failAt, toDevice)
			}
		}
	}
}

func TestParallelCopy(t *testing.T) {
	for _, n := range []int{0, 1, copyPiece - 1, copyPiece, 2*copyPiece + 1, 8*copyPiece + 7, 40*copyPiece + 3} {
		src := pattern(n, 3)
		dst := make([]byte, n)
		parallelCopy(dst, src)
		if !bytes.Equal(dst, src) {
			t.Errorf("n=%d: copy differs at byte %d", n, firstDifference(dst, src))
		}
	}
}

func TestStagingChunk(t *testing.T) {
	for _, tt := range []struct{ n, want int }{
		{stagingThreshold, minStagingChunk},
		{16 << 20, 2 << 20},
		{20<<20 + 1, 2<<20 + 512<<10},
		{64 << 20, 8 << 20},
		{256 << 20, maxStagingChunk},
		{4 << 30, maxStagingChunk},
	} {
		if got := stagingChunk(tt.n); got != tt.want {
			t.Errorf("stagingChunk(%d) = %d, want %d", tt.n, got, tt.want)
		}
	}
}

func firstDifference(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
