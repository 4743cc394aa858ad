package main

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// chartSources are the sources drawn as bars, top to bottom in a group.
var chartSources = []source{srcGo, srcCuPy, srcCudaCore}

// barColors are the colors of the bars of chartSources.
var barColors = map[source]color.Color{
	srcGo:       color.RGBA{0x00, 0xad, 0xd8, 0xff}, // Go gopher blue
	srcCuPy:     color.RGBA{0xe8, 0x71, 0x0a, 0xff},
	srcCudaCore: color.RGBA{0x76, 0xb9, 0x00, 0xff}, // NVIDIA green
}

// writeChartFile writes a PNG chart of rows to the file name; it reports
// false, writing nothing, when no row has a ratio to chart.
func writeChartFile(name string, rows []row, title string) (bool, error) {
	p, err := chart(rows, title)
	if err != nil || p == nil {
		return false, err
	}
	return true, writeFile(name, func(w io.Writer) error { return writePNG(w, p) })
}

// writePNG draws p to w as a 10 × 8 inch PNG at 150 dpi.
func writePNG(w io.Writer, p *plot.Plot) error {
	c := vgimg.NewWith(vgimg.UseWH(10*vg.Inch, 8*vg.Inch), vgimg.UseDPI(150))
	// A margin, as the plot draws up to the edges.
	m := vg.Points(10)
	p.Draw(draw.Crop(draw.New(c), m, -m, m, -m))
	_, err := vgimg.PngCanvas{Canvas: c}.WriteTo(w)
	return err
}

// Chart geometry, in points, for a 10 × 8 inch image.
const (
	chartHeight = 470 // height of the data area, about
	legendEntry = 16  // height of a legend entry
	labelSize   = 11  // font size of the labels
)

// chart returns a horizontal bar chart of the times of chartSources
// relative to C for the rows that have a C result, or nil if there are none.
// Bars start at the reference line at 1, so they point right when slower
// than C and left when faster; a column at the right gives Go's ratios.
func chart(rows []row, title string) (*plot.Plot, error) {
	var shown []row
	for _, r := range rows {
		if positive(r.ratio(srcGo)) {
			shown = append(shown, r)
		}
	}
	if len(shown) == 0 {
		return nil, nil
	}
	// The first row is drawn at the top, at y = n-1.
	slices.Reverse(shown)
	n := float64(len(shown))
	var srcs []source
	for _, src := range chartSources {
		if slices.ContainsFunc(shown, func(r row) bool { return positive(r.ratio(src)) }) {
			srcs = append(srcs, src)
		}
	}

	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(16)
	p.Title.Padding = vg.Points(10)
	p.X.Label.Text = "time relative to C (lower is faster)"
	p.X.Label.TextStyle.Font.Size = vg.Points(13)
	p.X.Tick.Label.Font.Size = vg.Points(labelSize)
	p.X.Scale = plot.LogScale{}
	p.Legend.TextStyle.Font.Size = vg.Points(12)
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.XOffs = vg.Points(6)
	p.Legend.Padding = vg.Points(2)
	grid := plotter.NewGrid()
	grid.Horizontal.Color = nil
	p.Add(grid)

	names := make([]string, len(shown))
	for i, r := range shown {
		names[i] = r.label
	}
	p.NominalY(names...)
	p.Y.Tick.Label.Font.Size = vg.Points(labelSize)
	// Leave room above the top group for the legend and the column heads.
	top := n - 0.5
	band := float64(legendEntry*len(srcs) + labelSize + 4)
	p.Y.Min = -0.5
	p.Y.Max = top + band*n/(chartHeight-band)

	// The bars are stacked on a base of ones that is not drawn, and fill
	// 3/4 of a group's height, at most 22pt a bar.
	ones := make(plotter.Values, len(shown))
	for i := range ones {
		ones[i] = 1
	}
	base, err := plotter.NewBarChart(ones, 1)
	if err != nil {
		return nil, fmt.Errorf("chart: %w", err)
	}
	width := vg.Points(min(22, 0.75*chartHeight/(n*float64(len(srcs)))))
	lo, hi := 1.0, 1.0
	for j, src := range srcs {
		vals := make(plotter.Values, len(shown))
		for i, r := range shown {
			if q := r.ratio(src); positive(q) {
				vals[i] = q - 1
				lo, hi = min(lo, q), max(hi, q)
			}
		}
		bars, err := plotter.NewBarChart(vals, width)
		if err != nil {
			return nil, fmt.Errorf("chart: %w", err)
		}
		bars.StackOn(base)
		bars.Horizontal = true
		bars.Offset = width * vg.Length(float64(len(srcs)-1)/2-float64(j))
		bars.Color = barColors[src]
		bars.LineStyle.Width = 0
		p.Add(bars)
		p.Legend.Add(sourceLabels[src]+" / C", bars)
	}
	// At least ×1.25 on each side of 1, then a column for Go's ratios.
	lo, hi = min(lo/1.1, 0.8), max(hi*1.1, 1.25)
	p.X.Min = lo
	p.X.Max = hi * math.Pow(hi/lo, 0.12)
	p.X.Tick.Marker = ratioTicks{max: hi}

	// The reference line at 1, labelled C above the top group.
	ref, err := plotter.NewLine(plotter.XYs{{X: 1, Y: -0.5}, {X: 1, Y: top}})
	if err != nil {
		return nil, fmt.Errorf("chart: %w", err)
	}
	ref.Width = vg.Points(1.5)
	ref.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
	ref.Color = color.Gray{0x40}

	refLabel, err := newLabels(plotter.XYs{{X: 1, Y: top}}, []string{"C"}, draw.XCenter, draw.YBottom)
	if err != nil {
		return nil, err
	}

	// Go's ratios, right-aligned in the column, under a head.
	xys := plotter.XYs{{X: p.X.Max, Y: top}}
	texts := []string{"Go/C"}
	for i, r := range shown {
		xys = append(xys, plotter.XY{X: p.X.Max, Y: float64(i)})
		texts = append(texts, formatRatio(r.ratio(srcGo)))
	}
	column, err := newLabels(xys, texts, draw.XRight, draw.YCenter)
	if err != nil {
		return nil, err
	}
	column.TextStyle[0].YAlign = draw.YBottom
	column.Offset.X = -vg.Points(2)
	p.Add(ref, refLabel, column)
	return p, nil
}

// newLabels returns labels texts at xys, aligned as given.
func newLabels(xys plotter.XYs, texts []string, x text.XAlignment, y text.YAlignment) (*plotter.Labels, error) {
	l, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: texts})
	if err != nil {
		return nil, fmt.Errorf("chart: %w", err)
	}
	for i := range l.TextStyle {
		st := &l.TextStyle[i]
		st.Font.Size = vg.Points(labelSize)
		st.XAlign, st.YAlign = x, y
	}
	return l, nil
}

// positive reports whether x is finite and positive, as a log scale needs.
func positive(x float64) bool {
	return finite(x) && x > 0
}

// ratioTicks marks a log axis of ratios with nice values up to max, as
// dense as needed to label at least five.
type ratioTicks struct{ max float64 }

// tickMantissas are the values marked in each decade, sparse to dense.
var tickMantissas = [][]float64{
	{1, 2, 5},
	{1, 1.5, 2, 3, 5, 7},
	{1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8},
	{1, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.8, 2, 2.5, 3, 3.5, 4, 5, 6, 7, 8, 9},
}

// Ticks implements plot.Ticker.
func (t ratioTicks) Ticks(lo, hi float64) []plot.Tick {
	hi = min(hi, t.max)
	var ticks []plot.Tick
	for _, ms := range tickMantissas {
		ticks = ticks[:0]
		for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
			for _, m := range ms {
				v, _ := strconv.ParseFloat(strconv.FormatFloat(m*math.Pow(10, e), 'g', 6, 64), 64)
				if v >= lo && v <= hi {
					ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', -1, 64) + "x"})
				}
			}
		}
		if len(ticks) >= 5 {
			break
		}
	}
	return ticks
}
