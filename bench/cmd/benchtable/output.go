package main

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// missing is shown for a value that is not there.
const missing = "—"

// tableSources are the sources in the order of the table's columns.
var tableSources = []source{srcC, srcGo, srcCuPy, srcCudaCore}

// writeMarkdown writes rows to w as a Markdown table, with title, if any,
// as its caption.
func writeMarkdown(w io.Writer, rows []row, title string) error {
	bw := bufio.NewWriter(w)
	if title != "" {
		fmt.Fprintf(bw, "**%s**\n\n", title)
	}
	fmt.Fprintln(bw, "| operation | unit | C | Go | CuPy | cuda.core | Go/C | target | met |")
	fmt.Fprintln(bw, "|:--|:--|--:|--:|--:|--:|--:|:--|:--|")
	for _, r := range rows {
		unit, cells := r.values()
		cells = append(cells, formatRatio(r.ratio(srcGo)), r.targetString(), r.metString(missing))
		fmt.Fprintf(bw, "| %s | %s | %s |\n", r.label, unit, strings.Join(cells, " | "))
	}
	fmt.Fprintln(bw, "\nGo/C is Go's time over C's: lower is faster; for bandwidth rows it is C's GB/s over Go's.")
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing table: %w", err)
	}
	return nil
}

// values returns the row's unit and the values of tableSources in it.
// A time row uses one unit, chosen for its smallest value.
func (r *row) values() (unit string, cells []string) {
	if r.kind == bandwidthKind {
		for _, src := range tableSources {
			cells = append(cells, formatFixed(r.gbps(src), 1))
		}
		return "GB/s", cells
	}
	least := math.Inf(1)
	for _, src := range tableSources {
		if v := r.ns(src); finite(v) {
			least = min(least, v)
		}
	}
	unit, scale := timeUnit(least)
	for _, src := range tableSources {
		cells = append(cells, formatSig(r.ns(src)/scale))
	}
	return unit, cells
}

// timeUnit returns the largest of ns, µs, ms and s in which ns is at
// least 1, and its size in ns.
func timeUnit(ns float64) (unit string, scale float64) {
	switch {
	case ns >= 1e9:
		return "s", 1e9
	case ns >= 1e6:
		return "ms", 1e6
	case ns >= 1e3:
		return "µs", 1e3
	}
	return "ns", 1
}

// formatSig formats v with three significant digits, or more for
// v ≥ 1000; a missing v is shown as missing.
func formatSig(v float64) string {
	switch {
	case !finite(v):
		return missing
	case math.Abs(v) >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case math.Abs(v) >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// formatFixed formats v with prec decimals; a missing v is shown as missing.
func formatFixed(v float64, prec int) string {
	if !finite(v) {
		return missing
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}

// formatRatio formats a ratio such as 1.03x; a missing one is shown as
// missing.
func formatRatio(v float64) string {
	if !finite(v) {
		return missing
	}
	return strconv.FormatFloat(v, 'f', 2, 64) + "x"
}

// short formats v with at most three decimals and no trailing zeros.
func short(v float64) string {
	return strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64)
}

// targetString returns the row's target for readers: bandwidth ratios are
// given as a fraction of C's GB/s.
func (r *row) targetString() string {
	t := r.target
	switch t.kind {
	case ratioTarget:
		if r.kind == bandwidthKind {
			return "≥ " + short(1/t.value) + "x C's GB/s"
		}
		return "≤ " + short(t.value) + "x"
	case absTarget:
		unit, scale := timeUnit(t.value)
		return "≤ " + short(t.value/scale) + " " + unit
	case overCTarget:
		unit, scale := timeUnit(t.value)
		return "≤ C + " + short(t.value/scale) + " " + unit
	}
	return missing
}

// metString returns "yes" or "no", or none when the target cannot be
// evaluated.
func (r *row) metString(none string) string {
	met, ok := r.met()
	switch {
	case !ok:
		return none
	case met:
		return "yes"
	}
	return "no"
}

// csvHeader is the first record of the CSV output.
var csvHeader = []string{
	"name", "label", "kind",
	"c_ns", "go_ns", "cupy_ns", "cudacore_ns",
	"c_gbps", "go_gbps", "cupy_gbps", "cudacore_gbps",
	"go_runs", "c_runs",
	"go_c", "cupy_c", "cudacore_c",
	"target", "met",
}

// writeCSV writes rows to w as CSV, one record per row; missing values are
// empty fields.
func writeCSV(w io.Writer, rows []row) error {
	cw := csv.NewWriter(w)
	cw.Write(csvHeader)
	for _, r := range rows {
		rec := []string{r.name, r.label, r.kind.String()}
		for _, src := range tableSources {
			rec = append(rec, csvFloat(r.ns(src), 10))
		}
		for _, src := range tableSources {
			rec = append(rec, csvFloat(r.gbps(src), 10))
		}
		for _, src := range []source{srcGo, srcC} {
			runs := ""
			if s := r.res[src]; s != nil {
				runs = strconv.Itoa(s.runs)
			}
			rec = append(rec, runs)
		}
		for _, src := range []source{srcGo, srcCuPy, srcCudaCore} {
			rec = append(rec, csvFloat(r.ratio(src), 6))
		}
		target := r.targetString()
		if target == missing {
			target = ""
		}
		rec = append(rec, target, r.metString(""))
		cw.Write(rec)
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("writing CSV: %w", err)
	}
	return nil
}

// csvFloat formats v for CSV with at most digits significant digits and no
// exponent, or returns "" for a missing v.
func csvFloat(v float64, digits int) string {
	if !finite(v) {
		return ""
	}
	v, _ = strconv.ParseFloat(strconv.FormatFloat(v, 'g', digits, 64), 64)
	return strconv.FormatFloat(v, 'f', -1, 64)
}
