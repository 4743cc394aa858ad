package main

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

// repoPackages returns the configurations of the repository's packages,
// gen/packages.txt, by name.
func repoPackages(t *testing.T) map[string]*config {
	t.Helper()
	cfgs, err := readPackages("packages.txt")
	if err != nil {
		t.Fatal(err)
	}
	r := map[string]*config{}
	for _, c := range cfgs {
		r[c.pkg] = c
	}
	return r
}

func TestCallsBack(t *testing.T) {
	pkgs := repoPackages(t)
	for _, tt := range []struct {
		pkg  string
		want []string
	}{
		{"cudadrv", []string{every}},
		{"cudart", []string{every}},   // through the driver
		{"curand", []string{every}},   // through cudart and the driver
		{"cusolver", []string{every}}, // its own logger
		{"nvrtc", []string{"nvrtcCompileProgram"}},
		{"nvjitlink", nil},
		{"highlevel", nil}, // no facts
	} {
		if got := slices.Sorted(maps.Keys(pkgs[tt.pkg].facts.back)); !slices.Equal(got, tt.want) {
			t.Errorf("%s: the calls that may call back are %q, want %q", tt.pkg, got, tt.want)
		}
	}
}

func TestAnnotate(t *testing.T) {
	pkgs := repoPackages(t)
	i32 := &Type{Kind: Scalar, Go: "int32", C: "int"}
	out := Param{GoName: "v", Type: &Type{Kind: Pointer, Elem: i32}}
	fnptr := Param{GoName: "fn", Type: &Type{Kind: FuncPtr}}
	funcs := func(names ...string) []*Func {
		var r []*Func
		for _, n := range names {
			f := &Func{CName: n, Params: []Param{out}}
			switch n {
			case "nvrtcSetFlowCallback":
				f.Params = append(f.Params, fnptr)
			case "nvrtcSetPCHHeapSize":
				f.Params = []Param{{GoName: "size", Type: i32}}
			}
			r = append(r, f)
		}
		return r
	}
	for _, tt := range []struct {
		pkg      string
		funcs    []*Func
		marked   []string
		unfacted []string
	}{
		{"nvrtc", funcs("nvrtcVersion", "nvrtcCompileProgram", "nvrtcSetFlowCallback", "nvrtcSetPCHHeapSize"), []string{"nvrtcVersion"}, nil},
		{"nvjitlink", funcs("nvJitLinkCreate", "nvJitLinkAddData", "nvJitLinkGetLinkedCubin"), []string{"nvJitLinkGetLinkedCubin"}, nil},
		{"cublas", funcs("cublasSetLoggerCallback", "cublasSgemm_v2"), nil, nil},
		{"golden", funcs("cudaGetDevice"), nil, nil},
		// Older headers lack the function that registers the callback
		// (CUDA 12.6's NVRTC and driver): the library loaded may have it,
		// so its facts still hold.
		{"nvrtc", funcs("nvrtcVersion", "nvrtcCompileProgram", "nvrtcGetPTX"), []string{"nvrtcVersion", "nvrtcGetPTX"}, []string{"nvrtcSetFlowCallback"}},
		{"cudadrv", funcs("cuInit", "cuCtxGetDevice"), nil, []string{"cuLogsRegisterCallback"}},
	} {
		var cfg config // golden's: no facts
		if c := pkgs[tt.pkg]; c != nil {
			cfg = *c
		}
		p := &parser{cfg: cfg, pkg: &Package{Name: tt.pkg, Funcs: tt.funcs}}
		p.annotate()
		var marked []string
		for _, f := range tt.funcs {
			if f.NoEscape {
				marked = append(marked, f.CName)
			}
		}
		if !slices.Equal(marked, tt.marked) {
			t.Errorf("%s: marked %q, want %q", tt.pkg, marked, tt.marked)
		}
		if !slices.Equal(p.pkg.Unfacted, tt.unfacted) {
			t.Errorf("%s: Unfacted = %q, want %q", tt.pkg, p.pkg.Unfacted, tt.unfacted)
		}
	}
}

// TestCheckFacts checks that a function the facts name is an error only
// when the headers of every major lack it.
func TestCheckFacts(t *testing.T) {
	pkg := func(unfacted ...string) *Package { return &Package{Name: "nvrtc", Unfacted: unfacted} }
	for _, tt := range []struct {
		pkgs []*Package
		err  string
	}{
		{[]*Package{pkg()}, ""},
		{[]*Package{pkg(), pkg("nvrtcSetFlowCallback")}, ""},
		{[]*Package{pkg("nvrtcSetFlowCallback"), pkg()}, ""},
		{[]*Package{pkg("nvrtcCompileProgram")}, "the facts of package nvrtc (its callback and keeps lines) name nvrtcCompileProgram, which it does not declare"},
		{[]*Package{pkg("nvrtcCompileProgram", "nvrtcSetFlowCallback"), pkg("nvrtcCompileProgram")}, "name nvrtcCompileProgram, which"},
	} {
		err := checkFacts(tt.pkgs)
		if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("checkFacts(%v) = %v, want %q", tt.pkgs, err, tt.err)
		}
	}
}
