package highlevel

import (
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// BenchmarkGPUDriverCall times successful calls into the driver, one cgo
// call each: an asynchronous memset on a stream of the caller's, and one
// on the legacy default stream, which waits for it. A refused call's error
// carries the driver's log lines, which the package reads only on failure:
// these calls must cost what they did before. On the stand-in driver
// (GOCUDA_CUDA naming a libcuda.so.1 built from internal/driver/testdata)
// it times the package's and the shim's side of a call.
func BenchmarkGPUDriverCall(b *testing.B) {
	d := gpu(b)
	s, err := NewStream(d, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	m, err := d.Alloc(4096)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Free()
	b.Run("MemsetAsync", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := m.MemsetAsync(s, 1, 4096); err != nil {
				b.Fatal(err)
			}
		}
		if err := s.Synchronize(); err != nil {
			b.Fatal(err)
		}
	})
	b.Run("Memset", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := m.Memset(1, 4096); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// gpuRefusals are calls a driver refuses, through the package, each with
// the driver function that refuses it: an allocation of a pebibyte, the
// elapsed time of events made without timing, a kernel's dynamic shared
// memory set past any device's.
func gpuRefusals(t *testing.T, d Device) []struct {
	name, fn string
	call     func() error
} {
	t.Helper()
	s, err := NewStream(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	var events [2]*Event
	for i := range events {
		if events[i], err = NewEvent(d, &EventOptions{DisableTiming: true}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { events[i].Close() })
		if err := events[i].Record(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	k := kernel(t, testModule(t), "dynamic_smem")
	return []struct {
		name, fn string
		call     func() error
	}{
		{"Alloc of 1 PiB", "cuMemAlloc", func() error {
			m, err := d.Alloc(1 << 50)
			if err == nil {
				m.Free()
			}
			return err
		}},
		{"ElapsedTime of events without timing", "cuEventElapsedTime", func() error {
			_, err := ElapsedTime(events[0], events[1])
			return err
		}},
		{"1 GiB of dynamic shared memory", "cuKernelSetAttribute", func() error {
			return k.SetAttribute(d, KernelMaxDynamicSharedSize, 1<<30)
		}},
	}
}

// TestGPUDriverLog checks the driver's error log on a GPU: where the
// driver has it (CUDA 12.9 on), the error of a refused call carries the
// driver's lines for it (at least one of gpuRefusals' must, each
// non-empty), which the logger got as records of lib driver too; a
// successful call after carries none; on an older driver, no error
// carries lines and the logger gets nothing. It logs each refusal's error,
// to show what the driver says.
func TestGPUDriverLog(t *testing.T) {
	d := gpu(t)
	v, err := DriverVersion()
	if err != nil {
		t.Fatal(err)
	}
	h := &recordHandler{level: slog.LevelDebug}
	SetLogger(slog.New(h))
	defer SetLogger(nil)
	explained := 0
	for _, r := range gpuRefusals(t, d) {
		err := r.call()
		if err == nil {
			t.Errorf("%s: no error", r.name)
			continue
		}
		lines := DriverLog(err)
		t.Logf("%s: %v\n\tDriverLog: %q", r.name, err, lines)
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: a message of several lines", r.name)
		}
		for _, line := range lines {
			if strings.TrimSpace(line) == "" {
				t.Errorf("%s: an empty line in %q", r.name, lines)
			}
		}
		if len(lines) > 0 {
			explained++
		}
	}
	recs := h.records()
	for _, rec := range recs {
		t.Logf("record: %v %q %v", rec.level, rec.msg, rec.attrs)
		if rec.attrs["lib"] != "driver" {
			t.Errorf("record %+v: want lib=driver", rec)
		}
	}
	if m, err := d.Alloc(4096); err != nil || DriverLog(err) != nil {
		t.Errorf("an allocation after: %v", err)
	} else {
		m.Free()
	}
	switch {
	case v < 12090 && (explained > 0 || len(recs) > 0):
		t.Errorf("driver %d, without the error log: %d errors with lines, %d records", v, explained, len(recs))
	case v >= 12090 && explained == 0 && len(recs) > 0:
		t.Errorf("driver %d: the driver logged %d lines, none attached to its call's error: it calls its logger on another thread than the call's?", v, len(recs))
	case v >= 12090 && explained == 0:
		t.Errorf("driver %d: the driver explained none of the refusals", v)
	}
}

// TestGPUDriverLogGoroutines makes gpuRefusals' calls from goroutines at
// once: each error carries lines of its own call's function only (where
// the driver's lines name it).
func TestGPUDriverLogGoroutines(t *testing.T) {
	d := gpu(t)
	refusals := gpuRefusals(t, d)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 30 {
				r := refusals[(g+i)%len(refusals)]
				err := r.call()
				for _, line := range DriverLog(err) {
					if fn, _, ok := strings.Cut(line, ": "); ok && strings.HasPrefix(fn, "cu") && !strings.HasPrefix(fn, r.fn) {
						t.Errorf("%s: a line of %s: %q", r.name, fn, line)
					}
				}
			}
		})
	}
	wg.Wait()
}
