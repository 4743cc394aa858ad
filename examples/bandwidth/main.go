// Command bandwidth measures host-to-device, device-to-host and
// device-to-device copy bandwidth, the figures of NVIDIA's bandwidthTest
// sample (cuda-samples, Samples/1_Utilities/bandwidthTest), using package
// highlevel.
//
// Run it from the module root:
//
//	go run ./examples/bandwidth [-device N] [-size 256MiB] [-n 20]
//
// -size is the bytes of one copy: a number with an optional unit, B, KB, MB,
// GB (powers of 1000) or KiB, MiB, GiB (powers of 1024). The default, 256 MiB,
// is the project's design table's; bandwidthTest's quick mode copies 32 MB
// (32000000 bytes), which -size 32MB reproduces. -n is the number of timed
// copies, after one untimed warm-up copy; -device defaults to
// highlevel.DefaultDevice ($CUDA_DEVICE, ~/.cuda-device, else the first usable
// device).
//
// Each measurement is timed with two CUDA events recorded on a created stream
// around the n copies. Rates are in GB/s of 1e9 bytes per second, as
// bandwidthTest gives them. Pinned host memory comes from
// highlevel.AllocPinned, pageable memory is a Go []byte. For
// device-to-device copies bandwidthTest counts every byte twice, once read and
// once written; the table gives the copy rate and that figure.
//
// Without CUDA, or with no device, it prints the reason to standard error and
// exits with status 1, as it does for any other error.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gocuda/cuda/highlevel"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "bandwidth:", err)
		os.Exit(1)
	}
}

// run parses the command line args and writes the table to w.
func run(args []string, w io.Writer) (err error) {
	fs := flag.NewFlagSet("bandwidth", flag.ContinueOnError)
	devFlag := fs.Int("device", -1, "CUDA device number; -1 means highlevel.DefaultDevice")
	sizeFlag := fs.String("size", "256MiB", "bytes per copy: 268435456, 256MiB, 32MB (bandwidthTest's default)...")
	n := fs.Int("n", 20, "timed copies per measurement")
	if err := fs.Parse(args); err != nil {
		return err
	}
	size, err := parseSize(*sizeFlag)
	if err != nil {
		return err
	}
	if *n <= 0 {
		return fmt.Errorf("-n %d: must be positive", *n)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}

	count, err := highlevel.DeviceCount()
	if err != nil {
		return fmt.Errorf("CUDA is not usable here: %w", err)
	}
	if count == 0 {
		return errors.New("no CUDA device found")
	}
	dev := highlevel.Device(*devFlag)
	if *devFlag < 0 {
		if dev, err = highlevel.DefaultDevice(); err != nil {
			return err
		}
	}
	name, err := dev.Name()
	if err != nil {
		return err
	}
	props, err := dev.Properties()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "device %d: %s (compute capability %d.%d)\n", dev.ID(), name, props.Major, props.Minor)
	fmt.Fprintf(w, "transfer size %d bytes, %d repetitions\n", size, *n)

	// Everything allocated is given back when run returns, its errors joined
	// to run's.
	free := func(f func() error) { err = errors.Join(err, f()) }
	s, err := highlevel.NewStream(dev, nil)
	if err != nil {
		return err
	}
	defer free(s.Close)
	start, err := highlevel.NewEvent(dev, nil)
	if err != nil {
		return err
	}
	defer free(start.Close)
	stop, err := highlevel.NewEvent(dev, nil)
	if err != nil {
		return err
	}
	defer free(stop.Close)
	var d [2]highlevel.MemoryPointer
	for i := range d {
		if d[i], err = dev.Alloc(size); err != nil {
			return err
		}
		defer free(d[i].Free)
	}
	pinned, err := highlevel.AllocPinned(size)
	if err != nil {
		return err
	}
	defer free(pinned.Free)
	// A view of the pinned memory, valid until pinned.Free.
	pin, err := highlevel.PinnedSlice[byte](pinned)
	if err != nil {
		return err
	}
	pageable := make([]byte, size)

	// measure times n copies by copy after one warm-up and returns the rate.
	measure := func(copy func() error) (float64, error) {
		if err := copy(); err != nil {
			return 0, err
		}
		if err := start.Record(s); err != nil {
			return 0, err
		}
		for range *n {
			if err := copy(); err != nil {
				return 0, err
			}
		}
		if err := stop.Record(s); err != nil {
			return 0, err
		}
		if err := stop.Synchronize(); err != nil {
			return 0, err
		}
		t, err := highlevel.ElapsedTime(start, stop)
		return gbps(size, *n, t), err
	}
	// The pageable copies use the Async forms too: from or to pageable
	// memory CUDA stages the data through its own pinned buffers and returns
	// only when the host side is done, so they are synchronous with respect
	// to the host, and the events still bracket the whole transfer.
	// (bandwidthTest times pageable copies with a host timer instead.)
	var rates [5]float64
	copies := []func() error{
		func() error { return highlevel.CopyFromHostAsync(s, d[0], pin) },
		func() error { return highlevel.CopyFromHostAsync(s, d[0], pageable) },
		func() error { return highlevel.CopyToHostAsync(s, pin, d[0]) },
		func() error { return highlevel.CopyToHostAsync(s, pageable, d[0]) },
		func() error { return d[1].CopyFromDeviceAsync(s, d[0], size) },
	}
	for i, c := range copies {
		if rates[i], err = measure(c); err != nil {
			return err
		}
	}

	fmt.Fprintln(w, "D2D: copy rate; bandwidthTest counts each byte read and written (2x)")
	fmt.Fprintf(w, "%-6s %13s %15s\n", "", "pinned GB/s", "pageable GB/s")
	fmt.Fprintf(w, "%-6s %13.1f %15.1f\n", "H2D", rates[0], rates[1])
	fmt.Fprintf(w, "%-6s %13.1f %15.1f\n", "D2H", rates[2], rates[3])
	fmt.Fprintf(w, "%-6s %13.1f   (read+write counted: %.1f)\n", "D2D", rates[4], 2*rates[4])
	return nil
}

// units are the suffixes parseSize accepts, lower-cased.
var units = map[string]int{
	"": 1, "b": 1,
	"kb": 1e3, "mb": 1e6, "gb": 1e9,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30,
}

// parseSize parses a positive byte count such as "1048576", "32MB" or
// "256MiB"; the unit's case does not matter.
func parseSize(s string) (int, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return r < '0' || r > '9' })
	if i < 0 {
		i = len(t)
	}
	unit, ok := units[strings.ToLower(strings.TrimSpace(t[i:]))]
	n, err := strconv.Atoi(t[:i])
	if !ok || err != nil || n <= 0 || n > int(^uint(0)>>1)/unit {
		return 0, fmt.Errorf("-size %q: want a positive number of bytes, such as 1048576, 32MB or 256MiB", s)
	}
	return n * unit, nil
}

// gbps returns the rate of n copies of size bytes in t, in GB/s (1e9 bytes
// per second).
func gbps(size, n int, t time.Duration) float64 {
	if t <= 0 {
		return 0
	}
	return float64(size) * float64(n) / t.Seconds() / 1e9
}
