package collective

import (
	"testing"
	"unsafe"

	"github.com/gocuda/cuda/nccl"
)

// TestOptionsConfig checks NCCL's configuration for Options: blocking as
// asked, the name as a C string, the rest NCCL's defaults.
func TestOptionsConfig(t *testing.T) {
	for _, tc := range []struct {
		name     string
		opts     *Options
		blocking bool
		want     int32
		commName string
	}{
		{"nil", nil, false, 0, ""},
		{"zero", &Options{}, false, 0, ""},
		{"Blocking, the communicator it is split from", &Options{Blocking: true}, false, 0, ""},
		{"blocking", &Options{Blocking: true}, true, 1, ""},
		{"named", &Options{Name: "trainer"}, false, 0, "trainer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, name := tc.opts.config(tc.blocking)
			if cfg.Blocking != tc.want {
				t.Errorf("Blocking = %d, want %d", cfg.Blocking, tc.want)
			}
			if cfg.Size != uint64(unsafe.Sizeof(nccl.Config{})) || cfg.Version != nccl.VERSION_CODE || cfg.MinCTAs != nccl.CONFIG_UNDEF_INT {
				t.Errorf("config %+v: want NCCL_CONFIG_INITIALIZER's size, version and defaults", cfg)
			}
			switch {
			case tc.commName == "" && cfg.CommName != nil:
				t.Errorf("CommName set, want none")
			case tc.commName != "" && (cfg.CommName != &name[0] || string(name) != tc.commName+"\x00"):
				t.Errorf("CommName %q, want %q as a C string", name, tc.commName)
			}
		})
	}
}
