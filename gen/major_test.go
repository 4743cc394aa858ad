package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	major13 = "# CUDA 13\nbuild !cuda12\nsuffix cuda13\nversion 13.0 # the headers'\ndriver 580\nheaders cuda cuda-13.0\nheaders nccl nccl-2.28.3\nlib GOCUDA_CUDART libcudart.so.13\nfuncs cudart 312\n"
	major12 = "build cuda12\nsuffix cuda12\nversion 12.6\nheaders cuda cuda-12.6\nlib GOCUDA_CUDART libcudart.so.12\n"
)

func TestReadMajors(t *testing.T) {
	for _, tt := range []struct {
		name  string
		files map[string]string
		err   string // "" for success
	}{
		{"two", map[string]string{"cuda13.txt": major13, "cuda12.txt": major12}, ""},
		{"one", map[string]string{"cuda13.txt": major13}, ""},
		{"none", map[string]string{"other.txt": major13}, "no CUDA majors' data files"},
		{"both default", map[string]string{"cuda13.txt": major13, "cuda12.txt": strings.Replace(major12, "build cuda12", "build !cuda11", 1)},
			"with no tag, the build constraints pick 2 majors, not 1: cuda12.txt, cuda13.txt"},
		{"tag picks two", map[string]string{"cuda13.txt": strings.Replace(major13, "build !cuda12", "build !cuda11", 1), "cuda12.txt": strings.Replace(major12, "build cuda12", "build cuda11 || cuda12", 1)},
			"with the tag cuda12, the build constraints pick 2 majors, not 1: cuda12.txt, cuda13.txt"},
		{"unknown key", map[string]string{"cuda13.txt": major13 + "runtime 13000\n"}, `cuda13.txt:10: unknown key "runtime"`},
		{"arity", map[string]string{"cuda13.txt": major13 + "lib GOCUDA_CUDA\n"}, "cuda13.txt:10: lib takes 2 values, not 1"},
		{"count", map[string]string{"cuda13.txt": major13 + "funcs cudadrv many\n"}, "cuda13.txt:10: funcs cudadrv"},
		{"constraint", map[string]string{"cuda13.txt": strings.Replace(major13, "build !cuda12", "build !cuda12 &&", 1)}, "cuda13.txt:2: build:"},
		{"no version", map[string]string{"cuda12.txt": strings.Replace(major12, "version 12.6\n", "", 1)}, "cuda12.txt: no version line"},
		{"versions", map[string]string{"cuda13.txt": major13 + "versions GOCUDA_CUDART 12.6\n", "cuda12.txt": major12 + "versions GOCUDA_CUDART 12.0 12.6\n"}, ""},
		{"versions arity", map[string]string{"cuda13.txt": major13 + "versions GOCUDA_CUDART\n"}, "cuda13.txt:10: versions takes 2 or 3 values"},
		{"versions number", map[string]string{"cuda13.txt": major13 + "versions GOCUDA_CUDART 12\n"}, `cuda13.txt:10: versions GOCUDA_CUDART: version "12" is not major.minor[.patch]`},
		{"versions order", map[string]string{"cuda13.txt": major13 + "versions GOCUDA_CUDART 12.6 12.6.0\n"}, "cuda13.txt:10: versions GOCUDA_CUDART: 12.6 is not older than 12.6.0"},
		{"versions lib", map[string]string{"cuda13.txt": major13 + "versions GOCUDA_CUSPARSE 12.6\n"}, "cuda13.txt: versions GOCUDA_CUSPARSE: no lib line for GOCUDA_CUSPARSE"},
		{"versions overlap", map[string]string{"cuda13.txt": major13 + "versions GOCUDA_CUDART 12.5\n", "cuda12.txt": major12 + "versions GOCUDA_CUDART 12.0 12.6\n"},
			"cuda12.txt and cuda13.txt: the versions of GOCUDA_CUDART overlap"},
		{"versions open overlap", map[string]string{"cuda13.txt": major13 + "versions GOCUDA_CUDART 12.6\n", "cuda12.txt": major12 + "versions GOCUDA_CUDART 12.0\n"},
			"cuda12.txt and cuda13.txt: the versions of GOCUDA_CUDART overlap"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, text := range tt.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			ms, err := readMajors(dir)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("readMajors = %v, want an error containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			m := ms[len(ms)-1] // cuda13.txt, last by name
			want := major{
				file: filepath.Join(dir, "cuda13.txt"), build: "!cuda12", suffix: "cuda13", version: "13.0", driver: "580",
				headers: map[string]string{"cuda": filepath.Join(dir, "cuda-13.0"), "nccl": filepath.Join(dir, "nccl-2.28.3")},
			}
			if m.file != want.file || m.build != want.build || m.suffix != want.suffix || m.version != want.version || m.driver != want.driver ||
				m.headers["cuda"] != want.headers["cuda"] || m.headers["nccl"] != want.headers["nccl"] ||
				m.libs["GOCUDA_CUDART"] != "libcudart.so.13" || m.funcs["cudart"] != 312 {
				t.Errorf("read %+v, want %+v, libcudart.so.13 and 312 functions", *m, want)
			}
			if tt.name == "versions" {
				if r := m.versions["GOCUDA_CUDART"]; r != (libVersions{from: [3]int{12, 6, 0}}) {
					t.Errorf("cuda13.txt's versions = %v, want 12.6.0 on", r)
				}
				if r := ms[0].versions["GOCUDA_CUDART"]; r != (libVersions{from: [3]int{12, 0, 0}, next: [3]int{12, 6, 0}}) {
					t.Errorf("cuda12.txt's versions = %v, want 12.0.0 to 12.6.0", r)
				}
			}
		})
	}
}

func TestMajorFiles(t *testing.T) {
	m := &major{build: "!cuda12", suffix: "cuda13"}
	for name, want := range map[string]string{
		"ztypes.go":                 "ztypes_cuda13.go",
		"zlayout_test.go":           "zlayout_cuda13_test.go",
		"internal/ctest/zlayout.go": "internal/ctest/zlayout_cuda13.go",
	} {
		if got := m.fileName(name); got != want {
			t.Errorf("fileName(%q) = %q, want %q", name, got, want)
		}
		if got := (*major)(nil).fileName(name); got != name {
			t.Errorf("without a major, fileName(%q) = %q", name, got)
		}
	}
	src := "// Code generated by gen. DO NOT EDIT.\n\n// Package x does.\npackage x\n"
	want := "// Code generated by gen. DO NOT EDIT.\n\n//go:build !cuda12\n\n// Package x does.\npackage x\n"
	if got := string(m.constrain([]byte(src))); got != want {
		t.Errorf("constrain =\n%s\nwant\n%s", got, want)
	}
}
