package nvjitlink

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/gocuda/cuda/internal/ccheck"
	"github.com/gocuda/cuda/internal/testsrc"
)

func TestErrorIs(t *testing.T) {
	ccheck.StatusError(t, ERROR_PTX_COMPILE, ERROR_INTERNAL, "NVJITLINK_ERROR_PTX_COMPILE")
}

func TestNoLibrary(t *testing.T) {
	ccheck.NoLibrary(t, Load, LibraryPath, testLibrary, "Create", func() error {
		var h Handle
		return Create(&h, 0, nil)
	})
}

// TestCoverage reads nvJitLink.h, independently of the generator's C parser:
// each public function is bound under its name, and an inline wrapper calls
// the versioned symbol that its body calls.
func TestCoverage(t *testing.T) {
	h := filepath.Join(testHeaders, "nvJitLink.h")
	testsrc.Require(t, h)
	b, err := os.ReadFile(h)
	if err != nil {
		t.Fatal(err)
	}
	wrapper := regexp.MustCompile(`static inline nvJitLinkResult (nvJitLink\w+)\s*\([^)]*\)[^{]*\{\s*return (\w+)\s*\(`)
	exported := regexp.MustCompile(`extern nvJitLinkResult (nvJitLink\w+)\s*\(`)
	want := map[string]string{} // C name -> symbol
	for _, m := range wrapper.FindAllStringSubmatch(string(b), -1) {
		want[m[1]] = m[2]
	}
	for _, m := range exported.FindAllStringSubmatch(string(b), -1) {
		want[m[1]] = m[1]
	}
	if len(want) != testFuncs {
		t.Errorf("nvJitLink.h declares %d functions, want CUDA %s's %d", len(want), testCUDA, testFuncs)
	}
	for _, s := range goSymbols {
		if sym, ok := want[s.Name]; !ok {
			t.Errorf("%s is bound but not declared", s.Name)
		} else if s.Proc.Name() != sym {
			t.Errorf("%s calls %s, the header %s", s.Name, s.Proc.Name(), sym)
		}
		delete(want, s.Name)
	}
	for name := range want {
		t.Errorf("%s is declared but not bound", name)
	}
}

// TestGPULink links PTX for sm_90 into a CUBIN. The PTX is hand-written: an
// empty kernel. Linking needs no GPU, only the library.
func TestGPULink(t *testing.T) {
	if err := Load(); err != nil {
		t.Skipf("no nvJitLink: %v", err)
	}
	var major, minor uint32
	want, _, _ := strings.Cut(testCUDA, ".")
	if err := Version(&major, &minor); err != nil || fmt.Sprint(major) != want {
		t.Fatalf("Version = %d.%d, %v; want %s.x, the headers' major", major, minor, err, want)
	}
	ptx := []byte(".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry empty()\n{\n\tret;\n}\n")
	h := create(t, "-arch=sm_90")
	if err := AddData(h, INPUT_PTX, unsafe.Pointer(&ptx[0]), uint64(len(ptx)), "empty.ptx"); err != nil {
		t.Fatalf("AddData: %v (%s)", err, errorLog(h))
	}
	if err := Complete(h); err != nil {
		t.Fatalf("Complete: %v (%s)", err, errorLog(h))
	}
	var size uint64
	if err := GetLinkedCubinSize(h, &size); err != nil || size == 0 {
		t.Fatalf("GetLinkedCubinSize = %d, %v", size, err)
	}
	cubin := make([]byte, size)
	if err := GetLinkedCubin(h, unsafe.Pointer(&cubin[0])); err != nil {
		t.Fatal(err)
	}
	if string(cubin[:4]) != "\x7fELF" {
		t.Errorf("CUBIN starts with %q, want an ELF header", cubin[:4])
	}

	bad := []byte(".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry bad()\n{\n\tnot_an_instruction;\n}\n")
	h = create(t, "-arch=sm_90")
	err := AddData(h, INPUT_PTX, unsafe.Pointer(&bad[0]), uint64(len(bad)), "bad.ptx")
	if err == nil {
		err = Complete(h)
	}
	// nvJitLink refuses it as PTX (ERROR_INCORRECT_INPUT_TYPE, in CUDA 12.6 a
	// macro for ERROR_INVALID_INPUT and so an untyped constant) or ptxas
	// does (ERROR_PTX_COMPILE), and says why in the log.
	if !errors.Is(err, ERROR_PTX_COMPILE) && !errors.Is(err, Result(ERROR_INCORRECT_INPUT_TYPE)) || !strings.Contains(errorLog(h), "bad.ptx") {
		t.Errorf("bad PTX gave %v, log %q", err, errorLog(h))
	}
}

// create makes a linker, destroyed at cleanup.
func create(t *testing.T, options ...string) Handle {
	t.Helper()
	opts := cStrings(t, options)
	var h Handle
	if err := Create(&h, uint32(len(opts)), &opts[0]); err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() { Destroy(&h) })
	return h
}

func errorLog(h Handle) string {
	var n uint64
	if GetErrorLogSize(h, &n) != nil || n == 0 {
		return ""
	}
	b := make([]byte, n)
	if GetErrorLog(h, &b[0]) != nil {
		return ""
	}
	return strings.TrimRight(string(b), "\x00")
}

// cStrings returns options as C strings, pinned until the test ends, since
// C receives an array of pointers to them.
func cStrings(t *testing.T, options []string) []*byte {
	var pin runtime.Pinner
	t.Cleanup(pin.Unpin)
	opts := make([]*byte, len(options))
	for i, o := range options {
		opts[i] = &append([]byte(o), 0)[0]
		pin.Pin(opts[i])
	}
	return opts
}
