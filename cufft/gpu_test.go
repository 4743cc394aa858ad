package cufft

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gocuda/cuda/cudart"
	"github.com/gocuda/cuda/internal/gputest"
)

// plan1d makes a 1-D plan destroyed at cleanup.
func plan1d(t *testing.T, nx int32, typ Type, batch int32) Handle {
	t.Helper()
	var p Handle
	if err := Plan1d(&p, nx, typ, batch); err != nil {
		t.Fatalf("Plan1d(%d, %v, %d): %v", nx, typ, batch, err)
	}
	t.Cleanup(func() { Destroy(p) })
	return p
}

// dft is the forward DFT of x (length n), sum_j x_j e^{-2πi jk/n}, in
// float64.
func dft(x []complex128) []complex128 {
	n := len(x)
	w := make([]complex128, n)
	for k := range w {
		s, c := math.Sincos(-2 * math.Pi * float64(k) / float64(n))
		w[k] = complex(c, s)
	}
	y := make([]complex128, n)
	for k := range y {
		var s complex128
		for j, v := range x {
			s += v * w[(j*k)%n]
		}
		y[k] = s
	}
	return y
}

// TestGPUC2C transforms 4 batches of 1024 random complex float32 with a
// C2C plan: the forward transform must match a float64 CPU DFT within 1e-4
// of its largest magnitude, and forward then inverse (cuFFT does not
// normalize) must give n times the input within 1e-3 relative.
func TestGPUC2C(t *testing.T) {
	gputest.Require(t, "cuFFT", Load)
	const n, batch = 1024, 4
	rng := rand.New(rand.NewPCG(9, 10))
	in := make([]cudart.CuComplex, n*batch)
	for i := range in {
		in[i] = cudart.CuComplex{X: 2*rng.Float32() - 1, Y: 2*rng.Float32() - 1}
	}
	plan := plan1d(t, n, C2C, batch)
	d := gputest.Alloc[Complex](t, n*batch)
	gputest.ToDevice(t, d, in)
	if err := ExecC2C(plan, d, d, FORWARD); err != nil {
		t.Fatalf("ExecC2C forward: %v", err)
	}
	got := make([]cudart.CuComplex, n*batch)
	gputest.ToHost(t, got, d)
	for b := range batch {
		x := make([]complex128, n)
		for j := range x {
			x[j] = complex(float64(in[b*n+j].X), float64(in[b*n+j].Y))
		}
		want := dft(x)
		var scale, worst float64
		for k, w := range want {
			scale = max(scale, cmplxAbs(w))
			g := got[b*n+k]
			worst = max(worst, cmplxAbs(complex(float64(g.X), float64(g.Y))-w))
		}
		if worst > 1e-4*scale {
			t.Errorf("batch %d: forward differs from the CPU DFT by %g (largest magnitude %g)", b, worst, scale)
		}
	}

	if err := ExecC2C(plan, d, d, INVERSE); err != nil {
		t.Fatalf("ExecC2C inverse: %v", err)
	}
	gputest.ToHost(t, got, d)
	var worst float64
	for i, g := range got {
		worst = max(worst, math.Hypot(float64(g.X)/n-float64(in[i].X), float64(g.Y)/n-float64(in[i].Y)))
	}
	if worst > 1e-3 {
		t.Errorf("inverse(forward(x))/n differs from x by %g", worst)
	}
}

func cmplxAbs(z complex128) float64 { return math.Hypot(real(z), imag(z)) }

// TestGPUR2C transforms 4 batches of 1024 random reals with R2C plans (n/2+1
// complex outputs each, matched against the CPU DFT's first half) and back
// with C2R, which must give n times the input within 1e-3.
func TestGPUR2C(t *testing.T) {
	gputest.Require(t, "cuFFT", Load)
	const n, batch, half = 1024, 4, 1024/2 + 1
	rng := rand.New(rand.NewPCG(11, 12))
	in := make([]Real, n*batch)
	for i := range in {
		in[i] = Real(2*rng.Float32() - 1)
	}
	fwd, inv := plan1d(t, n, R2C, batch), plan1d(t, n, C2R, batch)
	dr, dc := gputest.Alloc[Real](t, n*batch), gputest.Alloc[Complex](t, half*batch)
	gputest.ToDevice(t, dr, in)
	if err := ExecR2C(fwd, dr, dc); err != nil {
		t.Fatalf("ExecR2C: %v", err)
	}
	spec := make([]Complex, half*batch)
	gputest.ToHost(t, spec, dc)
	for b := range batch {
		x := make([]complex128, n)
		for j := range x {
			x[j] = complex(float64(in[b*n+j]), 0)
		}
		want := dft(x)
		var scale, worst float64
		for k := range half {
			scale = max(scale, cmplxAbs(want[k]))
			g := spec[b*half+k]
			worst = max(worst, cmplxAbs(complex(float64(g.X), float64(g.Y))-want[k]))
		}
		if worst > 1e-4*scale {
			t.Errorf("batch %d: R2C differs from the CPU DFT by %g (largest magnitude %g)", b, worst, scale)
		}
	}

	if err := ExecC2R(inv, dc, dr); err != nil {
		t.Fatalf("ExecC2R: %v", err)
	}
	got := make([]Real, n*batch)
	gputest.ToHost(t, got, dr)
	var worst float64
	for i, g := range got {
		worst = max(worst, math.Abs(float64(g)/n-float64(in[i])))
	}
	if worst > 1e-3 {
		t.Errorf("C2R(R2C(x))/n differs from x by %g", worst)
	}
}

// TestGPUBadInput: Plan1d with a size or batch that is zero or negative is
// CUFFT_INVALID_SIZE (cufft.h: "the nx or batch parameter is not a
// supported size"), and executing a handle that was never a plan is
// CUFFT_INVALID_PLAN.
func TestGPUBadInput(t *testing.T) {
	gputest.Require(t, "cuFFT", Load)
	for _, c := range []struct{ nx, batch int32 }{{0, 1}, {-1, 1}, {-1024, 1}, {1024, 0}, {1024, -1}} {
		var p Handle
		err := Plan1d(&p, c.nx, C2C, c.batch)
		var r Result
		if !errors.As(err, &r) {
			if err == nil {
				Destroy(p)
			}
			t.Errorf("Plan1d(nx %d, batch %d): %v (%T), want a cufft.Result", c.nx, c.batch, err, err)
			continue
		}
		t.Logf("Plan1d(nx %d, batch %d): %v", c.nx, c.batch, r)
		if r != INVALID_SIZE {
			t.Errorf("Plan1d(nx %d, batch %d): %v, want CUFFT_INVALID_SIZE", c.nx, c.batch, r)
		}
	}
	d := gputest.Alloc[Complex](t, 8)
	if err := ExecC2C(Handle(1<<30), d, d, FORWARD); !errors.Is(err, INVALID_PLAN) {
		t.Errorf("ExecC2C, handle 1<<30: %v, want CUFFT_INVALID_PLAN", err)
	}
}
