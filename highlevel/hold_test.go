package highlevel

import "testing"

// checkGraphHoldsFreed checks, on the stand-in driver, that memory a graph
// holds is not handed back by Free: a pool block captured into a graph and
// freed stays in use, and the pool gives its address to no other
// allocation, until the graph is closed.
func checkGraphHoldsFreed(t *testing.T) {
	d := Device(0)
	pool, err := NewMemoryPool(d)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	s, err := NewStream(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m, err := pool.Alloc(1024)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.BeginCapture(CaptureRelaxed); err != nil {
		t.Fatal(err)
	}
	if err := m.MemsetAsync(s, 0, 1024); err != nil {
		t.Fatal(err)
	}
	g, err := s.EndCapture()
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Free(); err != nil {
		t.Fatalf("Free of memory a graph holds: %v", err)
	}
	if used := pool.UsedBytes(); used < 1024 {
		t.Errorf("UsedBytes after Free of memory a graph holds: %d, want the block still in use", used)
	}
	other, err := pool.Alloc(1024)
	if err != nil {
		t.Fatal(err)
	}
	if other.Ptr() == m.Ptr() {
		t.Errorf("the pool gave %p, which a graph holds, to another allocation", m.Ptr())
	}
	other.Free()
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
}
