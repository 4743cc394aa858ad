package cudart

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestErrorIs(t *testing.T) {
	var err error = ErrorMemoryAllocation
	wrapped := fmt.Errorf("allocating 1 PiB: %w", err)
	if !errors.Is(wrapped, ErrorMemoryAllocation) {
		t.Errorf("errors.Is(%v, ErrorMemoryAllocation) = false", wrapped)
	}
	if errors.Is(wrapped, ErrorInvalidValue) {
		t.Errorf("errors.Is(%v, ErrorInvalidValue) = true", wrapped)
	}
	var e Error
	if !errors.As(wrapped, &e) || e != ErrorMemoryAllocation {
		t.Errorf("errors.As gave %v", e)
	}
}

func TestErrorText(t *testing.T) {
	for _, tt := range []struct {
		err  Error
		want string
	}{
		{ErrorMemoryAllocation, "cudaErrorMemoryAllocation: the API call failed because it was unable to allocate enough memory or other resources to perform the requested operation"},
		{ErrorInvalidValue, "cudaErrorInvalidValue: this indicates that one or more of the parameters passed to the API call is not within an acceptable range of values"},
		{Error(123456), "Error(123456)"},
	} {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("%d.Error() = %q, want %q", int(tt.err), got, tt.want)
		}
	}
}

func TestEnumString(t *testing.T) {
	for _, tt := range []struct {
		v    fmt.Stringer
		want string
	}{
		{MemcpyHostToDevice, "cudaMemcpyHostToDevice"},
		{DevAttrMaxThreadsPerBlock, "cudaDevAttrMaxThreadsPerBlock"},
		{Success, "cudaSuccess"},
		{MemcpyKind(-7), "MemcpyKind(-7)"},
	} {
		if got := tt.v.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

// TestNoLibrary checks what a machine without CUDA sees: every call returns
// an error naming where libcudart was looked for.
func TestNoLibrary(t *testing.T) {
	var le *LibraryError
	if !errors.As(Load(), &le) {
		t.Skip("libcudart is installed here: " + LibraryPath())
	}
	var n int32
	err := GetDeviceCount(&n)
	if !errors.As(err, &le) {
		t.Fatalf("GetDeviceCount error = %v, want *LibraryError", err)
	}
	if !strings.Contains(err.Error(), "cannot load "+testLibrary) || !strings.Contains(err.Error(), "/lib64/"+testLibrary) {
		t.Errorf("error %q does not list the paths tried", err)
	}
	if _, err := GetErrorString(ErrorInvalidValue); !errors.As(err, &le) {
		t.Errorf("GetErrorString error = %v, want *LibraryError", err)
	}
}
