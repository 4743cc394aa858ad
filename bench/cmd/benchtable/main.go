// Benchtable turns benchmark results of the Go bindings, their C twins, CuPy
// and cuda.core, all in the Go benchmark format, into one comparison table.
//
// Usage:
//
//	benchtable -go go.txt[,go2.txt] [-c c.txt[,c2.txt]] [-cupy cupy.txt]
//		[-cudacore cudacore.txt] [-csv out.csv] [-png out.png] [-title "..."]
//
// It prints a Markdown table to standard output, one row per known
// benchmark that has a Go result, with the median of each source's
// repetitions, Go's time relative to C's and whether Go meets its target.
// With -csv it also writes the table as CSV, and with -png a chart of the
// times of Go, CuPy and cuda.core relative to C.
//
// A file may list several repetitions of a benchmark; the median is used.
// A source with fewer than 5 repetitions of a benchmark is named in a
// warning on standard error.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	err := run(os.Args[1:], os.Stdout, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
}

// run parses the command line args, reads the inputs and writes the table
// to stdout, the files asked for, and warnings to stderr.
func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("benchtable", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var files [numSources]string
	fs.StringVar(&files[srcGo], "go", "", "Go benchmark `files`, comma-separated (required)")
	fs.StringVar(&files[srcC], "c", "", "C benchmark `files`, comma-separated")
	fs.StringVar(&files[srcCuPy], "cupy", "", "CuPy benchmark `file`")
	fs.StringVar(&files[srcCudaCore], "cudacore", "", "cuda.core benchmark `file`")
	csvOut := fs.String("csv", "", "write the table as CSV to `file`")
	pngOut := fs.String("png", "", "write a chart of the ratios to C as PNG to `file`")
	title := fs.String("title", "", "chart title and table caption, e.g. device and date")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: benchtable -go FILE[,FILE] [-c FILE[,FILE]] [-cupy FILE] [-cudacore FILE] [-csv OUT.csv] [-png OUT.png] [-title TEXT]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	if files[srcGo] == "" {
		fs.Usage()
		return errors.New("-go is required")
	}

	var results [numSources]map[string]*stats
	for src, list := range files {
		r, err := readSource(splitList(list), stderr)
		if err != nil {
			return fmt.Errorf("reading %s results: %w", sourceNames[src], err)
		}
		results[src] = r
	}
	rows := buildRows(results)

	if few := fewRuns(rows); len(few) > 0 {
		fmt.Fprintf(stderr, "benchtable: warning: fewer than %d runs, medians are less reliable: %s\n",
			minRuns, strings.Join(few, ", "))
	}
	if err := writeMarkdown(stdout, rows, *title); err != nil {
		return err
	}
	if *csvOut != "" {
		if err := writeFile(*csvOut, func(w io.Writer) error { return writeCSV(w, rows) }); err != nil {
			return err
		}
	}
	if *pngOut != "" {
		ok, err := writeChartFile(*pngOut, rows, *title)
		if err != nil {
			return err
		}
		if !ok {
			fmt.Fprintln(stderr, "benchtable: warning: no row has both a Go and a C result; no chart written")
		}
	}
	return nil
}

// splitList splits a comma-separated list of file names, dropping empty
// names.
func splitList(s string) []string {
	var names []string
	for _, name := range strings.Split(s, ",") {
		if name = strings.TrimSpace(name); name != "" {
			names = append(names, name)
		}
	}
	return names
}

// writeFile creates the file name and writes it with write.
func writeFile(name string, write func(io.Writer) error) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	return nil
}
