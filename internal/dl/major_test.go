package dl

import (
	"strings"
	"testing"
)

func TestVersions(t *testing.T) {
	bounded := versions{from: Version{12, 0, 0}, next: Version{12, 6, 0}}
	open := versions{from: Version{12, 6, 0}}
	for _, tc := range []struct {
		r    versions
		v    Version
		want bool
	}{
		{bounded, Version{11, 7, 5}, false},
		{bounded, Version{12, 0, 0}, true},
		{bounded, Version{12, 5, 10}, true},
		{bounded, Version{12, 6, 0}, false},
		{open, Version{12, 5, 99}, false},
		{open, Version{12, 6, 0}, true},
		{open, Version{13, 0, 0}, true},
	} {
		if got := tc.r.has(tc.v); got != tc.want {
			t.Errorf("%v has %v = %v, want %v", tc.r, tc.v, got, tc.want)
		}
	}
	if s := bounded.String(); s != "12.0.0 or newer, older than 12.6.0" {
		t.Errorf("String = %q", s)
	}
	if s := open.String(); s != "12.6.0 or newer" {
		t.Errorf("String = %q", s)
	}
}

func TestMajorErrorText(t *testing.T) {
	for _, tc := range []struct {
		e    MajorError
		want string
	}{
		{MajorError{Name: "libcudart.so.12", Path: "/x/libcudart.so.12", Found: "12.6", Want: 13},
			"libcudart.so.12 at /x/libcudart.so.12 is CUDA 12.6, and these bindings are built for CUDA 13: load a CUDA 13 copy"},
		{MajorError{Name: "libcusparse.so.12", Path: "/x/libcusparse.so.12", Found: "12.5.4", Want: 13, Versions: "12.6.0 or newer"},
			"libcusparse.so.12 at /x/libcusparse.so.12 is version 12.5.4, and these bindings are built for CUDA 13, whose libcusparse.so.12 is 12.6.0 or newer: load a CUDA 13 copy"},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("Error() =\n%s\nwant\n%s", got, tc.want)
		}
	}
}

// TestReleases checks that every library numbered otherwise than CUDA has
// its versions for the build's major, and a library without any refuses
// to be checked by its own version rather than pass every copy.
func TestReleases(t *testing.T) {
	for _, env := range []string{"GOCUDA_CUSPARSE", "GOCUDA_CUSOLVER", "GOCUDA_CURAND", "GOCUDA_CUFFT"} {
		if _, ok := releases[env]; !ok {
			t.Errorf("no versions line for %s in CUDA %d's data file", env, cudaMajor)
		}
	}
	lib, err := standIn(t.TempDir(), "libgocudatest.so.1")
	if err != nil {
		t.Skip(err)
	}
	t.Setenv(testEnv, lib)
	l := New(testEnv, "libgocudatest.so.1")
	if err := l.CheckMajor("gocuda_standin", LibraryProperty); err != nil {
		t.Fatal(err)
	}
	if err := l.Load(); err == nil || !strings.Contains(err.Error(), "no versions line for $"+testEnv) {
		t.Errorf("Load = %v, want an error: no versions line", err)
	}
}
