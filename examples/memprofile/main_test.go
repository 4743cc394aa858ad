package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/gocuda/cuda/internal/gpuprobe"
)

// TestRun runs the example and reads its profile back: the workers' arrays,
// n MiB of weights and n quarters of a MiB of activations for worker n-1,
// each labeled with its worker.
func TestRun(t *testing.T) {
	gpuprobe.Require(t)
	out := filepath.Join(t.TempDir(), "gpu.pprof")
	if err := run(out, 4); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	perWorker := map[string]int64{}
	for _, s := range p.Sample {
		for _, w := range s.Label["worker"] {
			perWorker[w] += s.Value[1]
		}
	}
	const mib = 1 << 20
	want := map[string]int64{"0": mib + mib/4, "1": 2 * (mib + mib/4), "2": 3 * (mib + mib/4), "3": 4 * (mib + mib/4)}
	for w, n := range want {
		if perWorker[w] != n {
			t.Errorf("worker %s holds %d bytes in the profile, want %d", w, perWorker[w], n)
		}
	}
}
