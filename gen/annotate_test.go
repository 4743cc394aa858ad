package main

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

func TestCallsBack(t *testing.T) {
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
		{"unknown", nil},
	} {
		if got := slices.Sorted(maps.Keys(callsBack(tt.pkg))); !slices.Equal(got, tt.want) {
			t.Errorf("callsBack(%q) = %q, want %q", tt.pkg, got, tt.want)
		}
	}
}

// TestFactsPackages checks that every library a library calls into has
// facts of its own: a missing one would hide its callbacks.
func TestFactsPackages(t *testing.T) {
	for pkg, f := range facts {
		for _, u := range f.calls {
			if _, ok := facts[u]; !ok {
				t.Errorf("%s calls into %s, which has no facts", pkg, u)
			}
		}
	}
}

func TestAnnotate(t *testing.T) {
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
		p := &parser{pkg: &Package{Name: tt.pkg, Funcs: tt.funcs}}
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
		{[]*Package{pkg("nvrtcCompileProgram")}, "gen's facts (facts.go) name nvrtcCompileProgram, which package nvrtc does not declare"},
		{[]*Package{pkg("nvrtcCompileProgram", "nvrtcSetFlowCallback"), pkg("nvrtcCompileProgram")}, "name nvrtcCompileProgram,"},
	} {
		err := checkFacts(tt.pkgs)
		if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("checkFacts(%v) = %v, want %q", tt.pkgs, err, tt.err)
		}
	}
}
