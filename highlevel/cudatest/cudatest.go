// Package cudatest helps tests that need a GPU: PyCUDA's mark_cuda_test.
//
//	func TestSaxpy(t *testing.T) {
//		d := cudatest.Require(t)
//		...
//	}
package cudatest

import (
	"testing"

	"github.com/gocuda/cuda/highlevel"
	"github.com/gocuda/cuda/internal/gpuprobe"
)

// Require ends the test, with the reason, where it cannot use a GPU: it
// skips it where the machine has none (no CUDA driver is installed, or the
// driver reports no device), and fails it where the driver is there but
// fails (too old, broken), or where $GOCUDA_TEST_GPU is 1, which a machine
// that has a GPU sets so that tests fail there rather than skip.
// Otherwise it returns highlevel.DefaultDevice. At cleanup it fails the
// test if the default memory pool or the default pinned memory pool has
// more bytes in use than at the start: memory the test did not free.
func Require(t testing.TB) highlevel.Device {
	t.Helper()
	gpuprobe.Require(t)
	d, err := highlevel.DefaultDevice()
	if err != nil {
		t.Fatalf("cudatest: %v", err)
	}
	pool, err := highlevel.DefaultMemoryPool()
	if err != nil {
		t.Fatalf("cudatest: %v", err)
	}
	pools := []struct {
		name string
		used func() int
	}{
		{"default memory pool", pool.UsedBytes},
		{"default pinned memory pool", highlevel.DefaultPinnedMemoryPool().UsedBytes},
	}
	before := make([]int, len(pools))
	for i, p := range pools {
		before[i] = p.used()
	}
	t.Cleanup(func() {
		for i, p := range pools {
			if after := p.used(); after > before[i] {
				t.Errorf("cudatest: the %s has %d bytes in use, %d at the start: memory the test did not free", p.name, after, before[i])
			}
		}
	})
	return d
}
