package cudart

import (
	"testing"

	"github.com/gocuda/cuda/cudart/internal/ctest"
)

// TestLayout compares every generated struct and union with C: size,
// alignment and field offsets, as the C compiler computes them from the
// headers.
func TestLayout(t *testing.T) {
	c := ctest.Sizes()
	if len(c) != len(goSizes) {
		t.Errorf("C has %d types, Go %d", len(c), len(goSizes))
	}
	for _, g := range goSizes {
		want, ok := c[g.name]
		switch {
		case !ok:
			t.Errorf("%s: C does not know it", g.name)
		case g.size != want[0]:
			t.Errorf("%s: size %d, C %d", g.name, g.size, want[0])
		case g.align != want[1] && !(want[1] > 8 && g.align == 8):
			// Go aligns nothing beyond 8 bytes; the generated doc says so.
			t.Errorf("%s: alignment %d, C %d", g.name, g.align, want[1])
		}
	}
	offsets := ctest.Offsets()
	if len(offsets) != len(goOffsets) {
		t.Errorf("C has %d field offsets, Go %d", len(offsets), len(goOffsets))
	}
	for _, g := range goOffsets {
		if want, ok := offsets[g.name]; !ok || g.offset != want {
			t.Errorf("%s: offset %d, C %d (known to C: %v)", g.name, g.offset, want, ok)
		}
	}
}

// TestValues compares every enumerator and integer constant with C.
func TestValues(t *testing.T) {
	c := ctest.Values()
	if len(c) != len(goValues) {
		t.Errorf("C has %d values, Go %d", len(c), len(goValues))
	}
	for _, g := range goValues {
		if want, ok := c[g.name]; !ok || g.value != want {
			t.Errorf("%s = %d, C %d (known to C: %v)", g.name, g.value, want, ok)
		}
	}
}
