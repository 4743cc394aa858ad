// Bandwidth measures what NVIDIA's bandwidthTest sample does: copies from
// host to device and back, with pinned and with pageable (Go) host memory,
// and within the device, each timed over n copies with two events.
//
//	go run ./examples/bandwidth -device 0 -mib 256 -n 20
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/gocuda/cuda/highlevel"
)

func main() {
	dev := flag.Int("device", 0, "the GPU to measure")
	mib := flag.Int("mib", 256, "MiB per copy")
	n := flag.Int("n", 20, "timed copies per measurement")
	flag.Parse()
	if err := run(os.Stdout, highlevel.Device(*dev), *mib<<20, *n); err != nil {
		log.Fatal(err)
	}
}

// run writes to w the bandwidth of copies of size bytes on device d.
func run(w io.Writer, d highlevel.Device, size, n int) error {
	if size < 1 || n < 1 {
		return fmt.Errorf("%d bytes, %d copies: want at least 1 of each", size, n)
	}
	// Made together, then checked: Close and Free of nil only return an error.
	s, err1 := highlevel.NewStream(d, nil)
	start, err2 := highlevel.NewEvent(d, nil)
	end, err3 := highlevel.NewEvent(d, nil)
	src, err4 := highlevel.AllocArray[byte](d, size)
	dst, err5 := highlevel.AllocArray[byte](d, size)
	pinned, err6 := highlevel.AllocPinned(size)
	defer s.Close()
	defer start.Close()
	defer end.Close()
	defer src.Free()
	defer dst.Free()
	defer pinned.Free()
	if err := cmp.Or(err1, err2, err3, err4, err5, err6); err != nil {
		return err
	}
	pin, pageable := pinned.Bytes(), make([]byte, size)
	copies := []struct {
		name string
		copy func() error
	}{
		{"H2D pinned", func() error { return src.CopyFromHostAsync(s, pin) }},
		{"H2D pageable", func() error { return src.CopyFromHostAsync(s, pageable) }},
		{"D2H pinned", func() error { return src.CopyToHostAsync(s, pin) }},
		{"D2H pageable", func() error { return src.CopyToHostAsync(s, pageable) }},
		{"D2D", func() error { return dst.CopyFromAsync(s, src) }},
	}
	fmt.Fprintf(w, "%v: %d bytes per copy, %d copies (bandwidthTest doubles D2D: read and written)\n", d, size, n)
	for _, c := range copies {
		err := cmp.Or(c.copy(), start.Record(s)) // one untimed copy first
		for i := 0; i < n && err == nil; i++ {
			err = c.copy()
		}
		if err := cmp.Or(err, end.Record(s), end.Wait(context.Background())); err != nil {
			return err
		}
		t, err := highlevel.ElapsedTime(start, end)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%-13s %7.1f GB/s\n", c.name, float64(size)*float64(n)/t.Seconds()/1e9)
	}
	return nil
}
