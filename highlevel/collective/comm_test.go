package collective

import (
	"testing"
	"unsafe"

	"github.com/gocuda/cuda/nccl"
)

// TestOptionsConfig checks NCCL's configuration for Options: blocking as
// asked, the name as a C string (NCCL keeps the pointer, so in C memory),
// the rest NCCL's defaults.
func TestOptionsConfig(t *testing.T) {
	for _, tc := range []struct {
		name     string
		opts     *Options
		blocking bool
		want     int32
	}{
		{"nil", nil, false, 0},
		{"zero", &Options{}, false, 0},
		{"blocking", &Options{Blocking: true}, true, 1},
		{"named", &Options{Name: "trainer"}, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := tc.opts.cName()
			defer freeName(name)
			cfg := config(tc.blocking, name)
			if cfg.Blocking != tc.want {
				t.Errorf("Blocking = %d, want %d", cfg.Blocking, tc.want)
			}
			if cfg.Size != uint64(unsafe.Sizeof(nccl.Config{})) || cfg.Version != nccl.VERSION_CODE || cfg.MinCTAs != nccl.CONFIG_UNDEF_INT {
				t.Errorf("config %+v: want NCCL_CONFIG_INITIALIZER's size, version and defaults", cfg)
			}
			want := ""
			if tc.opts != nil {
				want = tc.opts.Name
			}
			switch {
			case want == "" && (name != nil || cfg.CommName != nil):
				t.Errorf("CommName set, want none")
			case want != "" && (cfg.CommName != name || cString(name) != want):
				t.Errorf("CommName %q, want %q as a C string", cString(name), want)
			}
		})
	}
}

// cString reads the C string at p.
func cString(p *byte) string {
	if p == nil {
		return ""
	}
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}
