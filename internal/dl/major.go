package dl

/*
#include <stddef.h>
#include <stdint.h>

// gocuda_version_size calls fp, a function size_t (void): cublasGetCudartVersion.
static size_t gocuda_version_size(uintptr_t fp) { return ((size_t (*)(void))fp)(); }

// gocuda_version_pair calls fp, a function status (int *, int *): nvrtcVersion,
// nvJitLinkVersion (whose unsigned int * has int *'s representation).
static int gocuda_version_pair(uintptr_t fp, int *major, int *minor) { return ((int (*)(int *, int *))fp)(major, minor); }

// gocuda_version_property calls fp, a function status (libraryPropertyType,
// int *), an enum passed as an int: cusparseGetProperty.
static int gocuda_version_property(uintptr_t fp, int type, int *v) { return ((int (*)(int, int *))fp)(type, v); }
*/
import "C"

import "fmt"

// A Version is a library's own version number, such as cuSPARSE's 12.5.4.
type Version struct{ Major, Minor, Patch int }

func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

// less reports whether v is older than w.
func (v Version) less(w Version) bool {
	if v.Major != w.Major {
		return v.Major < w.Major
	}
	if v.Minor != w.Minor {
		return v.Minor < w.Minor
	}
	return v.Patch < w.Patch
}

// versions are the versions of a library numbered otherwise than CUDA that
// the releases of one CUDA major ship: from that major's first release's
// (X.0's) on, up to, not including, next, the next major's first; with no
// next (zero) where that is not known yet. They come from the versions
// lines of the major's data file (headers/cuda13.txt), as releases
// (zmajor_cuda13.go).
type versions struct{ from, next Version }

// has reports whether v is one of r.
func (r versions) has(v Version) bool {
	return !v.less(r.from) && (r.next == Version{} || v.less(r.next))
}

func (r versions) String() string {
	if (r.next == Version{}) {
		return r.from.String() + " or newer"
	}
	return fmt.Sprintf("%s or newer, older than %s", r.from, r.next)
}

// A VersionFunc says how a library's function tells the library's version
// (see CheckMajor), and what that version is.
type VersionFunc int

const (
	// CUDAVersion is a function size_t (void) that returns the CUDA version
	// the library was built with, 12060 for 12.6: cublasGetCudartVersion,
	// cublasLtGetCudartVersion. Its major must be the bindings'.
	CUDAVersion VersionFunc = iota
	// CUDAMajorMinor is a function status (int *major, int *minor) that
	// sets the CUDA version of the library, which is numbered as CUDA is:
	// nvrtcVersion, nvJitLinkVersion. The major must be the bindings'.
	CUDAMajorMinor
	// CUDAMajorMinorOrNewer is CUDAMajorMinor for a library whose later
	// majors serve the bindings too, whose major must be the bindings' or
	// a later one: NVRTC, whose functions take no structures, and whose
	// output the driver checks when it loads it.
	CUDAMajorMinorOrNewer
	// LibraryProperty is a function status (libraryPropertyType, int *)
	// that sets the library's own MAJOR_VERSION, MINOR_VERSION and
	// PATCH_LEVEL (0, 1 and 2): cusparseGetProperty. The version must be one
	// that a release of the bindings' CUDA major ships: the versions line
	// of the library's override variable in the major's data file.
	LibraryProperty
)

// CheckMajor sets the library's check (see SetCheck) to refuse a copy of
// the library of another CUDA major than the bindings are built for, with
// a *MajorError: it asks the library's version with its function symbol,
// of the kind f, which is exempt from the check, as are the functions
// exempt names (those that report versions and errors). A library that
// lacks the function, or whose function reports a failure, is not refused:
// its version is not known. It must be called before the library is
// loaded.
func (l *Library) CheckMajor(symbol string, f VersionFunc, exempt ...string) error {
	return l.SetCheck(func() error { return l.checkMajor(symbol, f) }, append([]string{symbol}, exempt...)...)
}

// checkMajor is the check CheckMajor sets.
func (l *Library) checkMajor(symbol string, f VersionFunc) error {
	fp, err := l.Lookup(symbol)
	if err != nil {
		return nil
	}
	p := C.uintptr_t(uintptr(fp))
	e := &MajorError{Name: l.name, Path: l.path, Want: cudaMajor}
	switch f {
	case CUDAVersion:
		v := int(C.gocuda_version_size(p))
		if v == 0 || v/1000 == cudaMajor {
			return nil
		}
		e.Found = fmt.Sprintf("%d.%d", v/1000, v%1000/10)
	case CUDAMajorMinor, CUDAMajorMinorOrNewer:
		var major, minor C.int
		if C.gocuda_version_pair(p, &major, &minor) != 0 || int(major) == cudaMajor ||
			f == CUDAMajorMinorOrNewer && int(major) > cudaMajor {
			return nil
		}
		e.Found = fmt.Sprintf("%d.%d", major, minor)
		if f == CUDAMajorMinorOrNewer {
			e.Versions = fmt.Sprintf("CUDA %d or newer", cudaMajor)
		}
	case LibraryProperty:
		r, ok := releases[l.env]
		if !ok {
			return fmt.Errorf("%s: no versions line for $%s in the data file of CUDA %d (headers/cuda%[3]d.txt): its copies of other majors cannot be told", l.name, l.env, cudaMajor)
		}
		var v [3]C.int
		for i := range v {
			if C.gocuda_version_property(p, C.int(i), &v[i]) != 0 {
				return nil
			}
		}
		found := Version{int(v[0]), int(v[1]), int(v[2])}
		if r.has(found) {
			return nil
		}
		e.Found, e.Versions = found.String(), r.String()
	default:
		return fmt.Errorf("%s: unknown VersionFunc %d for %s", l.name, f, symbol)
	}
	return e
}
