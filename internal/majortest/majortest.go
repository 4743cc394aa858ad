// Package majortest tests a package's check of its library's CUDA major
// (internal/dl.CheckMajor) against stand-in libraries that report the
// versions of NVIDIA's releases: the copy of another major must be refused
// with a *dl.MajorError naming both, and the build's own must load.
package majortest

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/gocuda/cuda/internal/dl"
	"github.com/gocuda/cuda/internal/stubtest"
)

// A Case is a version that a stand-in library reports, and the CUDA major
// whose releases ship it.
type Case struct {
	Version string // as the MajorError gives it: "12.6" (a CUDA version) or "12.5.4" (cuSPARSE's own)
	CUDA    int    // the CUDA major that ships it
}

// A Test is a package's test of its major check.
type Test struct {
	Env  string // the library's override variable: GOCUDA_CUSPARSE
	File string // its file name (testLibrary)
	// Source is the C source of the stand-in library; it reports the
	// version through the macros MAJOR, MINOR and PATCH, and CUDAVERSION
	// (12060 for 12.6).
	Source string
	CUDA   string // the CUDA version of the build's headers (testCUDA): 13.0
	// Versions is, for a library numbered otherwise than CUDA, by the
	// build's CUDA major, the versions the MajorError says that major ships
	// (MajorError.Versions); nil for a library numbered as CUDA is.
	Versions map[int]string
	Child    string // the name of the test that runs Check
	// Newer is set for a library whose later majors load too
	// (dl.CUDAMajorMinorOrNewer); Versions then names the majors accepted.
	Newer bool
}

// refused reports whether a copy of CUDA major c is refused in a build of
// major.
func (tt Test) refused(c, major int) bool {
	return c < major || c > major && !tt.Newer
}

const caseEnv = "GOCUDA_MAJORTEST_CASE"

// major returns the build's CUDA major.
func (tt Test) major(t *testing.T) int {
	t.Helper()
	n := Major(tt.CUDA)
	if n == 0 {
		t.Fatalf("CUDA version %q is not X.Y", tt.CUDA)
	}
	return n
}

// CUDAReleases are the versions of a library numbered as CUDA is, as
// CUDA's releases ship it: 11.8, the first and last of 12 (12.0, 12.9),
// the headers' 12.6 and 13.0.
var CUDAReleases = []Case{
	{Version: "11.8", CUDA: 11},
	{Version: "12.0", CUDA: 12},
	{Version: "12.6", CUDA: 12}, // headers/cuda-12.6
	{Version: "12.9", CUDA: 12},
	{Version: "13.0", CUDA: 13}, // headers/cuda-13.0
}

// Own returns the case of a library's own version as the build's headers
// (of CUDA version cuda) give it, which is of the build's major.
func Own(major, minor, patch int, cuda string) Case {
	return Case{Version: fmt.Sprintf("%d.%d.%d", major, minor, patch), CUDA: Major(cuda)}
}

// PropertySource is the C source of a stand-in's getProperty function (a
// library's GetProperty: cusparseGetProperty), which reports MAJOR, MINOR
// and PATCH.
func PropertySource(getProperty string) string {
	return "int " + getProperty + "(int type, int *v) { *v = type == 0 ? MAJOR : type == 1 ? MINOR : PATCH; return 0; }\n"
}

// Major returns the major of a CUDA version, 13 for "13.0", or 0 if it is
// not one.
func Major(cuda string) int {
	m, _, _ := strings.Cut(cuda, ".")
	n, _ := strconv.Atoi(m)
	return n
}

// Run builds a stand-in for each case and runs the child test against it,
// in a process of its own, with the library's override variable naming it.
func (tt Test) Run(t *testing.T, cases []Case) {
	major := tt.major(t)
	own := false
	for _, c := range cases {
		if c.CUDA == major {
			own = true
		}
		name := fmt.Sprintf("%s_of_CUDA_%d", c.Version, c.CUDA)
		t.Run(name, func(t *testing.T) {
			var v [3]int
			for i, p := range strings.SplitN(c.Version, ".", 3) {
				n, err := strconv.Atoi(p)
				if err != nil {
					t.Fatalf("version %q: %v", c.Version, err)
				}
				v[i] = n
			}
			lib := stubtest.Library(t, tt.File, tt.Source, "-DMAJOR="+strconv.Itoa(v[0]), "-DMINOR="+strconv.Itoa(v[1]),
				"-DPATCH="+strconv.Itoa(v[2]), "-DCUDAVERSION="+strconv.Itoa(v[0]*1000+v[1]*10))
			want := ""
			if tt.refused(c.CUDA, major) {
				want = c.Version
			}
			stubtest.Child(t, tt.Child, tt.Env+"="+lib, caseEnv+"="+want)
		})
	}
	if !own {
		t.Errorf("no case of CUDA %d, the build's: a copy that must load", major)
	}
}

// Check is the child test's body (it skips unless Run runs it): call is
// one of the package's functions that the check guards, which the
// stand-in answers with success; load is the package's Load; version is
// the function that asks the version, exempt from the check. A stand-in of
// another major than the build's must make call and load return the same
// *dl.MajorError, naming the file, the stand-in's path, its version and the
// build's major, while version works; one of the build's must load.
func (tt Test) Check(t *testing.T, parent string, call, load, version func() error) {
	stubtest.SkipUnlessChild(t, parent)
	found := os.Getenv(caseEnv)
	err := call()
	if found == "" {
		if err != nil || load() != nil {
			t.Errorf("with a stand-in of CUDA %s's major: the call returned %v, Load %v; want nil", tt.CUDA, err, load())
		}
		return
	}
	major := tt.major(t)
	want := dl.MajorError{Name: tt.File, Path: os.Getenv(tt.Env), Found: found, Want: major, Versions: tt.Versions[major]}
	if tt.Newer {
		want.Versions = fmt.Sprintf("CUDA %d or newer", major)
	}
	var me *dl.MajorError
	if !errors.As(err, &me) || *me != want {
		t.Fatalf("the call returned %#v, want a *MajorError %+v", err, want)
	}
	for _, s := range []string{tt.File, want.Path, " " + found + ",", fmt.Sprintf("built for CUDA %d", major), want.Versions} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("the error %q does not name %q", err, s)
		}
	}
	if err := load(); err != error(me) {
		t.Errorf("Load() = %v, want the same error", err)
	}
	if err := version(); err != nil {
		t.Errorf("the version function, exempt from the check: %v", err)
	}
}
