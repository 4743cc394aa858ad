package highlevel

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

// TestGPUArrayFill fills arrays of several element sizes and lengths, with
// values whose bytes are all equal (one memset) and others (copies that
// double), synchronously and on a stream, and reads every element back.
func TestGPUArrayFill(t *testing.T) {
	d := gpu(t)
	s, err := NewStream(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, n := range []int{1, 3, fillChunk - 1, fillChunk, fillChunk + 1, 3*fillChunk + 5, 1 << 20} {
		for _, async := range []bool{false, true} {
			t.Run(fmt.Sprintf("n=%d/async=%v", n, async), func(t *testing.T) {
				checkFill(t, s, n, async, float32(1.5))
				checkFill(t, s, n, async, float32(0))
				checkFill(t, s, n, async, int8(-3))
				checkFill(t, s, n, async, uint16(0x0102))
				checkFill(t, s, n, async, int32(-1))
				checkFill(t, s, n, async, float64(-2.25))
				checkFill(t, s, n, async, complex64(complex(2, 2)))
				checkFill(t, s, n, async, complex(1, -2))
				checkFill(t, s, n, async, [3]int16{1, -2, 3})
			})
		}
	}
}

// TestGPUArrayFillCaptured fills arrays in a capture: every element size
// that the driver's memsets cover is captured, and the graph, launched,
// fills; a size they do not cover copies from the host, which a capture
// refuses.
func TestGPUArrayFillCaptured(t *testing.T) {
	d := gpu(t)
	s, err := NewStream(d, &StreamOptions{NonBlocking: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const n = 3*fillChunk + 5
	f32, err1 := AllocArray[float32](d, n)
	u16, err2 := AllocArray[uint16](d, n)
	c128, err3 := AllocArray[complex128](d, n)
	odd, err4 := AllocArray[[3]int16](d, n)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		t.Fatal(err)
	}
	defer f32.Free()
	defer u16.Free()
	defer c128.Free()
	defer odd.Free()
	g, err := Capture(s, CaptureRelaxed, func() error {
		return errors.Join(f32.FillAsync(s, 1.5), u16.FillAsync(s, 0x0102), c128.FillAsync(s, complex(1, -2)))
	})
	if err != nil {
		t.Fatalf("Capture of fills of 4, 2 and 16 bytes: %v", err)
	}
	defer g.Close()
	x, err := g.Instantiate(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if err := errors.Join(x.Launch(s), s.Synchronize()); err != nil {
		t.Fatal(err)
	}
	checkAll(t, f32, 1.5)
	checkAll(t, u16, 0x0102)
	checkAll(t, c128, complex(1, -2))
	_, err = Capture(s, CaptureRelaxed, func() error { return odd.FillAsync(s, [3]int16{1, -2, 3}) })
	if !errors.Is(err, ErrCapturing) {
		t.Errorf("Capture of a fill of 6 bytes: %v, want ErrCapturing (a copy from pageable memory)", err)
	}
}

// checkAll checks that every element of a is v.
func checkAll[T comparable](t *testing.T, a *Array[T], v T) {
	t.Helper()
	got, err := a.ToHost()
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(got, func(x T) bool { return x != v }); i >= 0 {
		t.Errorf("%T array filled with %v: element %d is %v", v, v, i, got[i])
	}
}

// checkFill fills an array of n elements, whose contents are first made
// different from v, with v and checks every element.
func checkFill[T comparable](t *testing.T, s *Stream, n int, async bool, v T) {
	t.Helper()
	a, err := AllocArray[T](s.Device(), n)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Free()
	if err := a.MemoryPointer().Memset(0xa5, a.bytes()); err != nil {
		t.Fatal(err)
	}
	if async {
		err = a.FillAsync(s, v)
		if err == nil {
			err = s.Synchronize()
		}
	} else {
		err = a.Fill(v)
	}
	if err != nil {
		t.Fatalf("fill with %v: %v", v, err)
	}
	got, err := a.ToHost()
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(got, func(x T) bool { return x != v }); i >= 0 {
		t.Errorf("fill of %d with %v: element %d is %v", n, v, i, got[i])
	}
}

// TestGPUArrayCopyFrom copies between arrays, on one device, synchronously
// and on a stream, into a view, and checks the refusals.
func TestGPUArrayCopyFrom(t *testing.T) {
	d := gpu(t)
	s, err := NewStream(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const n = 1<<16 + 3
	want := make([]int32, n)
	for i := range want {
		want[i] = int32(i*7 - 5)
	}
	src, err := ArrayFrom(d, want)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Free()
	for _, async := range []bool{false, true} {
		dst, err := AllocArray[int32](nil, n)
		if err != nil {
			t.Fatal(err)
		}
		if async {
			err = dst.CopyFromAsync(s, src)
			if err == nil {
				err = s.Synchronize()
			}
		} else {
			err = dst.CopyFrom(src)
		}
		if err != nil {
			t.Fatalf("CopyFrom (async %v): %v", async, err)
		}
		got, err := dst.ToHost()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("CopyFrom (async %v): the copy differs", async)
		}
		// Into a view: the second half of dst from the first of src.
		half, err := dst.Slice(n/2, n)
		if err != nil {
			t.Fatal(err)
		}
		head, err := src.Slice(0, n-n/2)
		if err != nil {
			t.Fatal(err)
		}
		if err := half.CopyFrom(head); err != nil {
			t.Fatal(err)
		}
		got, err = dst.ToHost()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got[:n/2], want[:n/2]) || !slices.Equal(got[n/2:], want[:n-n/2]) {
			t.Errorf("CopyFrom into a view: wrong elements")
		}
		if err := dst.Free(); err != nil {
			t.Fatal(err)
		}
	}
	short, err := AllocArray[int32](d, n-1)
	if err != nil {
		t.Fatal(err)
	}
	freed, err := AllocArray[int32](d, n)
	if err != nil {
		t.Fatal(err)
	}
	freed.Free()
	for _, tt := range []struct {
		name string
		err  error
		want error
	}{
		{"shorter destination", short.CopyFrom(src), ErrInvalid},
		{"shorter source", src.CopyFromAsync(s, short), ErrInvalid},
		{"nil source", short.CopyFrom(nil), ErrNil},
		{"nil destination", (*Array[int32])(nil).CopyFrom(src), ErrNil},
		{"freed destination", freed.CopyFrom(src), ErrFreed},
		{"freed source", src.CopyFromAsync(s, freed), ErrFreed},
	} {
		if !errors.Is(tt.err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, tt.err, tt.want)
		}
	}
	short.Free()
}

// TestGPUAllocArrayAsync allocates stream-ordered arrays from the device's
// default pool, a MemoryAsyncPool and a MemoryPool, uses them on the
// stream and frees them.
func TestGPUAllocArrayAsync(t *testing.T) {
	d := gpu(t)
	s, err := NewStream(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ap, err := NewMemoryAsyncPool(d)
	if err != nil {
		t.Fatal(err)
	}
	defer ap.Close()
	mp, err := NewMemoryPool(d)
	if err != nil {
		t.Fatal(err)
	}
	defer mp.Close()
	for _, tt := range []struct {
		name string
		a    StreamAllocator
	}{
		{"default pool", nil},
		{"MemoryAsyncPool", ap},
		{"MemoryPool", mp},
	} {
		a, err := AllocArrayAsync[float64](s, tt.a, 1000)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if a.Len() != 1000 || a.Device() != d {
			t.Errorf("%s: %d elements on %v", tt.name, a.Len(), a.Device())
		}
		if err := a.FillAsync(s, 3.5); err != nil {
			t.Fatal(err)
		}
		got := make([]float64, 1000)
		if err := a.CopyToHostAsync(s, got); err != nil {
			t.Fatal(err)
		}
		if err := s.Synchronize(); err != nil {
			t.Fatal(err)
		}
		if got[0] != 3.5 || got[999] != 3.5 {
			t.Errorf("%s: read back %v ... %v", tt.name, got[0], got[999])
		}
		if err := a.Free(); err != nil {
			t.Errorf("%s: Free: %v", tt.name, err)
		}
		if err := a.Free(); !errors.Is(err, ErrFreed) {
			t.Errorf("%s: second Free: %v, want ErrFreed", tt.name, err)
		}
		empty, err := AllocArrayAsync[float64](s, tt.a, 0)
		if err != nil || empty.Len() != 0 {
			t.Errorf("%s: empty array: %v, %v", tt.name, empty, err)
		}
	}
	if _, err := AllocArrayAsync[float64](s, ap, -1); !errors.Is(err, ErrInvalid) {
		t.Errorf("length -1: %v, want ErrInvalid", err)
	}
	if _, err := AllocArrayAsync[*int](s, ap, 1); !errors.Is(err, ErrInvalid) {
		t.Errorf("pointer elements: %v, want ErrInvalid", err)
	}
}
