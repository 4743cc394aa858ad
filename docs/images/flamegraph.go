//go:build ignore

// flamegraph draws a pprof profile's first sample type as a flame graph in
// SVG, the picture `go tool pprof -http` shows under View, Flame Graph:
// callers above their callees, each frame as wide as the bytes its stacks
// hold. docs/images/memprofile.svg is drawn with it from the profile
// examples/memprofile wrote on an H200:
//
//	go run docs/images/flamegraph.go gpu.pprof > docs/images/memprofile.svg
package main

import (
	"fmt"
	"html"
	"log"
	"os"
	"slices"
	"strings"

	"github.com/google/pprof/profile"
)

// A frame is a function of a stack and what the stacks through it hold.
type frame struct {
	name     string
	value    int64
	children []*frame
}

func (f *frame) child(name string) *frame {
	for _, c := range f.children {
		if c.name == name {
			return c
		}
	}
	c := &frame{name: name}
	f.children = append(f.children, c)
	return c
}

const (
	width  = 960.0
	row    = 18.0
	margin = 10.0
)

func main() {
	if len(os.Args) != 2 {
		log.Fatal("usage: go run flamegraph.go PROFILE > OUT.svg")
	}
	r, err := os.Open(os.Args[1])
	if err != nil {
		log.Fatal(err)
	}
	p, err := profile.Parse(r)
	if err != nil {
		log.Fatal(err)
	}
	root := &frame{name: "all"}
	for _, s := range p.Sample {
		v := s.Value[len(s.Value)-1] // inuse_space
		root.value += v
		f := root
		for i := len(s.Location) - 1; i >= 0; i-- {
			for j := len(s.Location[i].Line) - 1; j >= 0; j-- {
				f = f.child(s.Location[i].Line[j].Function.Name)
				f.value += v
			}
		}
	}
	var deepest func(f *frame) int
	deepest = func(f *frame) int {
		d := 0
		for _, c := range f.children {
			d = max(d, deepest(c))
		}
		return d + 1
	}
	rows := deepest(root)
	height := 2*margin + float64(rows)*row + 24
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="11">`+"\n", width+2*margin, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="#fff"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" font-size="13">GPU memory in use by stack: %s (%s)</text>`+"\n",
		margin, margin+12, html.EscapeString(p.SampleType[len(p.SampleType)-1].Type), mib(root.value))
	var draw func(f *frame, x, w float64, d int)
	draw = func(f *frame, x, w float64, d int) {
		y := margin + 24 + float64(d)*row
		hue := 20 + (len(f.name)*37)%40
		fmt.Fprintf(&b, `<g><title>%s: %s</title><rect x="%.1f" y="%.1f" width="%.1f" height="%.0f" fill="hsl(%d,85%%,62%%)" stroke="#fff"/>`,
			html.EscapeString(f.name), mib(f.value), x, y, w, row-1, hue)
		if label := fit(short(f.name)+" "+mib(f.value), w); label != "" {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%s</text>`, x+3, y+row-5, html.EscapeString(label))
		}
		b.WriteString("</g>\n")
		slices.SortFunc(f.children, func(a, b *frame) int { return strings.Compare(a.name, b.name) })
		for _, c := range f.children {
			cw := w * float64(c.value) / float64(f.value)
			draw(c, x, cw, d+1)
			x += cw
		}
	}
	draw(root, margin, width, 0)
	b.WriteString("</svg>\n")
	os.Stdout.WriteString(b.String())
}

// short drops a function name's package path.
func short(name string) string {
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	return name
}

// fit returns s, cut to what w pixels hold at about 6.5 a character.
func fit(s string, w float64) string {
	n := int((w - 6) / 6.5)
	switch {
	case n < 4:
		return ""
	case len(s) > n:
		return s[:n-2] + ".."
	}
	return s
}

func mib(v int64) string { return fmt.Sprintf("%.1f MiB", float64(v)/(1<<20)) }
