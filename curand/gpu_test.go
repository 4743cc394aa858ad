package curand

import (
	"errors"
	"math"
	"testing"
	"unsafe"

	"github.com/gocuda/cuda/cudart"
	"github.com/gocuda/cuda/internal/gputest"
)

// requireGPU skips the test without cuRAND or a GPU, and returns a
// seeded CURAND_RNG_PSEUDO_DEFAULT generator destroyed at cleanup.
func requireGPU(t *testing.T) Generator {
	t.Helper()
	gputest.Require(t, "cuRAND", Load)
	var g Generator
	if err := CreateGenerator(&g, RNG_PSEUDO_DEFAULT); err != nil {
		t.Fatalf("CreateGenerator: %v", err)
	}
	t.Cleanup(func() { DestroyGenerator(g) })
	if err := SetPseudoRandomGeneratorSeed(g, 1234); err != nil {
		t.Fatalf("SetPseudoRandomGeneratorSeed: %v", err)
	}
	return g
}

// toHost copies n float32 from p, once the device is done.
func toHost(t *testing.T, p *float32, n int) []float32 {
	t.Helper()
	s := make([]float32, n)
	gputest.ToHost(t, s, p)
	return s
}

// moments returns the sample mean and (population) variance of s.
func moments(s []float32) (mean, variance float64) {
	for _, x := range s {
		mean += float64(x)
	}
	mean /= float64(len(s))
	for _, x := range s {
		d := float64(x) - mean
		variance += d * d
	}
	return mean, variance / float64(len(s))
}

// TestGPUGenerate draws 1<<20 float32 from a seeded default pseudorandom
// generator: GenerateUniform's must all lie in (0, 1], with mean within
// 0.005 of 1/2 and variance within 0.002 of 1/12; GenerateNormal's (mean
// 1.5, stddev 2) must have a sample mean within 0.02 of 1.5 and a variance
// within 2% of 4. The tolerances are more than ten standard errors.
func TestGPUGenerate(t *testing.T) {
	g := requireGPU(t)
	const n = 1 << 20
	p := gputest.Alloc[float32](t, n)

	if err := GenerateUniform(g, p, n); err != nil {
		t.Fatalf("GenerateUniform: %v", err)
	}
	u := toHost(t, p, n)
	for i, x := range u {
		if !(x > 0 && x <= 1) {
			t.Fatalf("uniform[%d] = %v, want in (0, 1]", i, x)
		}
	}
	mean, variance := moments(u)
	t.Logf("uniform: mean %.5f, variance %.5f", mean, variance)
	if math.Abs(mean-0.5) > 0.005 || math.Abs(variance-1.0/12) > 0.002 {
		t.Errorf("uniform: mean %v, variance %v; want 0.5, %v", mean, variance, 1.0/12)
	}

	if err := GenerateNormal(g, p, n, 1.5, 2); err != nil {
		t.Fatalf("GenerateNormal: %v", err)
	}
	z := toHost(t, p, n)
	mean, variance = moments(z)
	t.Logf("normal(1.5, 2): mean %.5f, variance %.5f", mean, variance)
	if math.Abs(mean-1.5) > 0.02 || math.Abs(variance-4) > 0.02*4 {
		t.Errorf("normal(1.5, 2): mean %v, variance %v; want 1.5, 4", mean, variance)
	}
	if math.IsNaN(mean) || math.IsInf(variance, 0) {
		t.Errorf("normal: NaN or Inf in the output")
	}
}

// TestGPUBadInput: an odd count to GenerateNormal on a pseudorandom
// generator is CURAND_STATUS_LENGTH_NOT_MULTIPLE (Box-Muller makes pairs),
// and a null generator is CURAND_STATUS_NOT_INITIALIZED ("the generator was
// never created").
func TestGPUBadInput(t *testing.T) {
	g := requireGPU(t)
	p := gputest.Alloc[float32](t, 8)
	if err := GenerateNormal(g, p, 7, 0, 1); !errors.Is(err, STATUS_LENGTH_NOT_MULTIPLE) {
		t.Errorf("GenerateNormal n 7: %v, want CURAND_STATUS_LENGTH_NOT_MULTIPLE", err)
	}
	err := GenerateUniform(0, p, 8)
	var st Status
	if !errors.As(err, &st) {
		t.Errorf("GenerateUniform, null generator: %v (%T), want a curand.Status", err, err)
	} else if st != STATUS_NOT_INITIALIZED {
		t.Errorf("GenerateUniform, null generator: %v, want CURAND_STATUS_NOT_INITIALIZED", st)
	}
	// The generator still works.
	if err := GenerateNormal(g, p, 8, 0, 1); err != nil {
		t.Errorf("GenerateNormal n 8: %v", err)
	}
	if err := cudart.DeviceSynchronize(); err != nil {
		t.Errorf("DeviceSynchronize: %v", err)
	}
}

// TestGPUDirectionVectors reads the host table of Sobol' direction vectors
// (Joe and Kuo's, 20,000 dimensions of 32). Dimension 1 is van der
// Corput's: its j-th vector is 1<<(31-j). Dimension 2 has the primitive
// polynomial x+1 and m_1 = 1, so m_j = m_{j-1} XOR 2·m_{j-1} (1, 3, 5, 15,
// 17, ...) and v_j = m_j<<(32-j). An unknown set is
// CURAND_STATUS_OUT_OF_RANGE.
func TestGPUDirectionVectors(t *testing.T) {
	requireGPU(t)
	var v *[32]uint32
	if err := GetDirectionVectors32(&v, DIRECTION_VECTORS_32_JOEKUO6); err != nil {
		t.Fatalf("GetDirectionVectors32: %v", err)
	}
	if v == nil {
		t.Fatal("GetDirectionVectors32 returned a null pointer")
	}
	dims := unsafe.Slice(v, 2)
	m := uint32(1)
	for j := range 32 {
		if want := uint32(1) << (31 - j); dims[0][j] != want {
			t.Errorf("dimension 1, vector %d = %#x, want %#x", j, dims[0][j], want)
		}
		if j > 0 {
			m ^= m << 1
		}
		if want := m << (31 - j); dims[1][j] != want {
			t.Errorf("dimension 2, vector %d = %#x, want %#x", j, dims[1][j], want)
		}
	}
	var w *[32]uint32
	if err := GetDirectionVectors32(&w, DirectionVectorSet(0)); !errors.Is(err, STATUS_OUT_OF_RANGE) {
		t.Errorf("GetDirectionVectors32, set 0: %v, want CURAND_STATUS_OUT_OF_RANGE", err)
	}
}
