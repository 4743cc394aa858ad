package main

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestTargetsDiffer parses a header whose code depends on the signedness
// of char, signed on linux/amd64 and unsigned on linux/arm64. With
// -check-targets, gen must refuse to write one set of files for both,
// naming each declaration that differs and none that does not; without
// it, gen writes linux/amd64's code, whatever the machine it runs on.
func TestTargetsDiffer(t *testing.T) {
	if _, err := hostConfig(); err != nil {
		t.Skip("no C front end:", err)
	}
	dir := t.TempDir()
	const header = `typedef enum cudaError { cudaSuccess = 0 } cudaError_t;
enum cudaSign { cudaSignMinusOne = (char)-1 };
enum cudaSame { cudaSameOne = 1 };
struct cudaPair { char c; int i; };
#define CUDA_CHAR_255 ((char)255)
#define CUDA_SCHAR_255 ((signed char)255)
extern cudaError_t cudaSignOf(char c, struct cudaPair *p);
`
	if err := os.WriteFile(filepath.Join(dir, "input.h"), []byte(header), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := config{headerDir: dir, headers: []string{"input.h"}, pkg: "sign", prefixes: []string{"cuda", "CUDA_"}, errType: "cudaError_t"}
	t.Run("check", func(t *testing.T) {
		cfg := cfg
		cfg.check = true
		_, err := parse(cfg, new(cache))
		if err == nil {
			t.Fatal("parse wrote one set of files for code that differs between linux/amd64 and linux/arm64")
		}
		msg := err.Error()
		for _, want := range []string{"linux/amd64 and linux/arm64", "type Sign (", "const CHAR_255 (CUDA_CHAR_255)"} {
			if !strings.Contains(msg, want) {
				t.Errorf("the error does not name %q:\n%s", want, msg)
			}
		}
		for _, same := range []string{"Same", "Pair", "SCHAR", "SignOf"} {
			if strings.Contains(msg, same) {
				t.Errorf("the error names %s, whose code is the same on both:\n%s", same, msg)
			}
		}
	})
	t.Run("first target", func(t *testing.T) {
		pkg, err := parse(cfg, new(cache))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(pkg.Targets, []string{"amd64"}) {
			t.Errorf("the model is for %q, want linux/amd64 alone", pkg.Targets)
		}
		got := map[string]string{}
		for _, e := range pkg.Enums {
			for _, v := range e.Values {
				got[v.GoName] = strconv.FormatInt(v.Value, 10)
			}
		}
		for _, c := range pkg.Consts {
			got[c.GoName] = c.Value
		}
		// char is signed on linux/amd64.
		for name, want := range map[string]string{"SignMinusOne": "-1", "CHAR_255": "-1", "SCHAR_255": "-1"} {
			if got[name] != want {
				t.Errorf("%s = %q, want linux/amd64's %s", name, got[name], want)
			}
		}
	})
}
