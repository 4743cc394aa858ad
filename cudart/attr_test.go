package cudart

import (
	"errors"
	"reflect"
	"testing"
)

// TestAttributeValueTypes checks cudart's typed attribute access, family by
// family: the value types the headers give (MemPoolAttr's and
// GraphMemAttributeType's comments, the data beside gen for
// MemRangeAttribute), and that a value of another size is refused before
// any call, while one of the right type reaches the library (here an error
// other than a *ValueTypeError: there may be none).
func TestAttributeValueTypes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		attr  interface{ ValueType() reflect.Type }
		want  reflect.Type
		right func() error
		wrong func() error
	}{
		{"MemPool int", MemPoolReuseAllowOpportunistic, reflect.TypeFor[int32](),
			func() error { _, err := MemPoolGetAttributeOf[int32](0, MemPoolReuseAllowOpportunistic); return err },
			func() error { _, err := MemPoolGetAttributeOf[uint64](0, MemPoolReuseAllowOpportunistic); return err }},
		{"MemPool cuuint64_t", MemPoolAttrReleaseThreshold, reflect.TypeFor[uint64](),
			func() error { return MemPoolSetAttributeOf(0, MemPoolAttrReleaseThreshold, uint64(1)) },
			func() error { return MemPoolSetAttributeOf(0, MemPoolAttrReleaseThreshold, int32(1)) }},
		{"GraphMem", GraphMemAttrUsedMemHigh, reflect.TypeFor[uint64](),
			func() error { _, err := DeviceGetGraphMemAttributeOf[uint64](0, GraphMemAttrUsedMemHigh); return err },
			func() error { return DeviceSetGraphMemAttributeOf(0, GraphMemAttrUsedMemHigh, float32(0)) }},
		{"MemRange list", MemRangeAttributeAccessedBy, reflect.TypeFor[[]int32](),
			func() error {
				_, err := MemRangeGetAttributeOf[[4]int32](MemRangeAttributeAccessedBy, nil, 0)
				return err
			},
			func() error {
				_, err := MemRangeGetAttributeOf[[4]int64](MemRangeAttributeAccessedBy, nil, 0)
				return err
			}},
		{"MemRange location type", MemRangeAttributePreferredLocationType, reflect.TypeFor[MemLocationType](),
			func() error {
				_, err := MemRangeGetAttributeOf[MemLocationType](MemRangeAttributePreferredLocationType, nil, 0)
				return err
			},
			func() error {
				_, err := MemRangeGetAttributeOf[uint8](MemRangeAttributePreferredLocationType, nil, 0)
				return err
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.attr.ValueType(); got != tc.want {
				t.Errorf("%v.ValueType() = %v, want %v", tc.attr, got, tc.want)
			}
			var vt *ValueTypeError
			if err := tc.wrong(); !errors.As(err, &vt) || vt.Want != tc.want {
				t.Errorf("a value of the wrong type: error %v, want a *ValueTypeError wanting %v", err, tc.want)
			}
			if err := tc.right(); errors.As(err, &vt) {
				t.Errorf("a value of the right type was refused: %v", err)
			}
		})
	}
}
