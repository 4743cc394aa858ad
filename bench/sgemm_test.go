package bench

import (
	"testing"

	"github.com/gocuda/cuda/cublas"
	"github.com/gocuda/cuda/highlevel"
	"github.com/gocuda/cuda/highlevel/linalg"
)

// BenchmarkSgemm8192 is an 8192×8192 SGEMM through linalg.MatMul on a
// stream, b.N of them queued and the stream synchronized at the end, as
// c/sgemm.cu times cublasSgemm. It reports TFLOPS (2n³ per product).
func BenchmarkSgemm8192(b *testing.B) {
	const n = 8192
	d := device(b)
	if err := cublas.Load(); err != nil {
		b.Skipf("no cuBLAS: %v", err)
	}
	h := make([]float32, n*n)
	for i := range h {
		h[i] = float32(i%17)/17 - 0.5
	}
	var arrs [3]*highlevel.Array[float32]
	for i := range arrs {
		a, err := highlevel.ArrayFrom(nil, h)
		if err != nil {
			b.Fatal(err)
		}
		defer a.Free()
		arrs[i] = a
	}
	s, err := highlevel.NewStream(d, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	mul := func() {
		if err := linalg.MatMul(s, arrs[0], arrs[1], arrs[2], n, n, n); err != nil {
			b.Fatal(err)
		}
	}
	mul() // warm up: the handle, cuBLAS's kernels
	if err := s.Synchronize(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		mul()
	}
	if err := s.Synchronize(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(2*n*n*n*float64(b.N)/b.Elapsed().Seconds()/1e12, "TFLOPS")
}
