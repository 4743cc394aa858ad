package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTargetsDiffer parses a header whose code depends on the signedness
// of char, signed on linux/amd64 and unsigned on linux/arm64: gen must
// refuse to write one set of files for both, naming each declaration that
// differs and none that does not.
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
	_, err := parse(config{dir: dir, headers: []string{"input.h"}, pkg: "sign", prefixes: []string{"cuda", "CUDA_"}, errType: "cudaError_t"}, new(cache))
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
}
