package linalg

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"

	"github.com/gocuda/cuda/cublas"
	"github.com/gocuda/cuda/cublaslt"
	"github.com/gocuda/cuda/cudart"
	"github.com/gocuda/cuda/cusparse"
	"github.com/gocuda/cuda/highlevel"
	"github.com/gocuda/cuda/internal/stubtest"
)

// stubLoggingLibs stands in for cuBLAS, cuBLASLt and cuSPARSE's loggers,
// in one library: each calls the callback set with a message, where its
// logging is on, from a function of its own: cublasGetProperty(type)
// says "property type"; cublasLtGetProperty(level) says "level N" at
// level N, and cusparseGetVersion(level) too, where their masks have the
// level's bit. cublasLtGetVersion reports cuBLASLt's mask, plus 0x100
// where its log file is /dev/null (else it would print on stdout), and
// cusparseGetVersion's version cuSPARSE's, likewise.
const stubLoggingLibs = `
#include <stddef.h>
#include <stdio.h>
#include <string.h>
typedef void (*blas_logger)(const char *msg);
typedef void (*lib_logger)(int level, const char *fn, const char *msg);
static blas_logger blas_cb;
static int blas_on;
static lib_logger lt_cb, sparse_cb;
static int lt_mask, sparse_mask, lt_null, sparse_null;

int cublasLoggerConfigure(int on, int out, int err, const char *file) { blas_on = on; return 0; }
int cublasSetLoggerCallback(blas_logger cb) { blas_cb = cb; blas_on = 1; return 0; }
int cublasGetProperty(int type, int *v) {
	char m[64];
	snprintf(m, sizeof m, "property %d", type);
	if (blas_on && blas_cb) blas_cb(m);
	*v = 0;
	return 0;
}

int cublasLtLoggerSetCallback(lib_logger cb) { lt_cb = cb; return 0; }
int cublasLtLoggerOpenFile(const char *f) { lt_null = strcmp(f, "/dev/null") == 0; return 0; }
int cublasLtLoggerSetMask(int m) { lt_mask = m; return 0; }
size_t cublasLtGetVersion(void) { return lt_mask | lt_null << 8; }
int cublasLtGetProperty(int level, int *v) {
	char m[64];
	snprintf(m, sizeof m, "level %d", level);
	if (lt_cb && lt_mask & 1 << (level - 1)) lt_cb(level, "cublasLtGetProperty", m);
	*v = 0;
	return 0;
}

int cusparseLoggerSetCallback(lib_logger cb) { sparse_cb = cb; return 0; }
int cusparseLoggerOpenFile(const char *f) { sparse_null = strcmp(f, "/dev/null") == 0; return 0; }
int cusparseLoggerSetMask(int m) { sparse_mask = m; return 0; }
int cusparseGetVersion(void *h, int *v) {
	int level = (int)(size_t)h;
	char m[64];
	snprintf(m, sizeof m, "level %d", level);
	if (level > 0 && sparse_cb && sparse_mask & 1 << (level - 1)) sparse_cb(level, NULL, m);
	*v = sparse_mask | sparse_null << 8;
	return 0;
}
`

// TestSetLogger runs TestSetLoggerChild on stubLoggingLibs.
func TestSetLogger(t *testing.T) {
	lib := stubtest.Library(t, "libcublas.so", stubLoggingLibs)
	stubtest.Child(t, "TestSetLoggerChild", "GOCUDA_CUBLAS="+lib, "GOCUDA_CUBLASLT="+lib, "GOCUDA_CUSPARSE="+lib)
}

// A recorder keeps the records of level and above, as strings.
type recorder struct {
	level slog.Level
	mu    sync.Mutex
	recs  []string
}

func (h *recorder) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }
func (h *recorder) Handle(_ context.Context, r slog.Record) error {
	s := r.Level.String() + " " + r.Message
	r.Attrs(func(a slog.Attr) bool {
		s += " " + a.String()
		return true
	})
	h.mu.Lock()
	h.recs = append(h.recs, s)
	h.mu.Unlock()
	return nil
}
func (h *recorder) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recorder) WithGroup(string) slog.Handler      { return h }

// take returns the records kept since the last take, once delivered.
func (h *recorder) take() []string {
	highlevel.FlushLogs()
	h.mu.Lock()
	defer h.mu.Unlock()
	recs := h.recs
	h.recs = nil
	return recs
}

// emitAll makes each stand-in library log at each of its levels.
func emitAll(t *testing.T) {
	t.Helper()
	var v int32
	if err := cublas.GetProperty(cudart.LibraryPropertyType(7), &v); err != nil {
		t.Fatal(err)
	}
	for level := range 5 {
		if err := cublaslt.GetProperty(cudart.LibraryPropertyType(level+1), &v); err != nil {
			t.Fatal(err)
		}
	}
	for level := range 5 {
		if err := cusparse.GetVersion(cusparse.Handle(level+1), &v); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSetLoggerChild checks SetLogger on stand-ins of the libraries: each
// library logs, into the callback and /dev/null, the levels the logger
// enables, and they reach it at slog's levels, with the library and its
// function; nil turns them off.
func TestSetLoggerChild(t *testing.T) {
	stubtest.SkipUnlessChild(t, "TestSetLogger")
	trace := slog.LevelDebug - 4
	for _, tc := range []struct {
		level  slog.Level
		ltMask int
		spMask int
		want   []string
	}{
		{trace, 31, 31, []string{
			"DEBUG-4 property 7 lib=cuBLAS",
			"ERROR level 1 lib=cuBLASLt func=cublasLtGetProperty",
			"DEBUG level 2 lib=cuBLASLt func=cublasLtGetProperty",
			"INFO level 3 lib=cuBLASLt func=cublasLtGetProperty",
			"DEBUG level 4 lib=cuBLASLt func=cublasLtGetProperty",
			"DEBUG-4 level 5 lib=cuBLASLt func=cublasLtGetProperty",
			"ERROR level 1 lib=cuSPARSE",
			"DEBUG level 2 lib=cuSPARSE",
			"INFO level 3 lib=cuSPARSE",
			"INFO level 4 lib=cuSPARSE",
			"DEBUG-4 level 5 lib=cuSPARSE",
		}},
		{slog.LevelInfo, 1 | 4, 1 | 4 | 8, []string{
			"ERROR level 1 lib=cuBLASLt func=cublasLtGetProperty",
			"INFO level 3 lib=cuBLASLt func=cublasLtGetProperty",
			"ERROR level 1 lib=cuSPARSE",
			"INFO level 3 lib=cuSPARSE",
			"INFO level 4 lib=cuSPARSE",
		}},
	} {
		t.Run(tc.level.String(), func(t *testing.T) {
			h := &recorder{level: tc.level}
			if err := SetLogger(slog.New(h)); err != nil {
				t.Fatal(err)
			}
			emitAll(t)
			if got := h.take(); !slices.Equal(got, tc.want) {
				t.Errorf("records:\n%q\nwant\n%q", got, tc.want)
			}
			lt, _ := cublaslt.GetVersion()
			var sp int32
			cusparse.GetVersion(0, &sp)
			if want := fmt.Sprintf("%#x %#x", tc.ltMask|0x100, tc.spMask|0x100); fmt.Sprintf("%#x %#x", lt, sp) != want {
				t.Errorf("cuBLASLt's and cuSPARSE's masks and files: %#x %#x, want %s (0x100: /dev/null)", lt, sp, want)
			}
		})
	}
	h := &recorder{level: trace}
	if err := SetLogger(slog.New(h)); err != nil {
		t.Fatal(err)
	}
	if err := SetLogger(nil); err != nil {
		t.Fatal(err)
	}
	emitAll(t)
	lt, _ := cublaslt.GetVersion()
	var sp int32
	cusparse.GetVersion(0, &sp)
	if got := h.take(); len(got) != 0 || lt&0xff != 0 || sp&0xff != 0 {
		t.Errorf("after SetLogger(nil): records %q, masks %#x, %#x", got, lt, sp)
	}
}
