// Package golden checks the generator's output: golden files for small
// headers that cover each C construct, and a byte-for-byte regeneration of
// the committed bindings.
package golden

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gocuda/cuda/internal/genline"
	"github.com/gocuda/cuda/internal/stubtest"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// gen is the generator binary, built once by TestMain.
var gen string

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "golden")
	if err != nil {
		panic(err)
	}
	gen = filepath.Join(dir, "gen")
	// gen runs here, on the host, also where the test is cross-built for
	// another platform and runs under an emulator.
	cmd := exec.Command("go", "build", "-o", gen, "../gen")
	cmd.Env = append(os.Environ(), "GOOS=", "GOARCH=")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		os.Stderr.WriteString("building gen: " + err.Error() + "\n")
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// run runs the generator in dir and returns its output files by relative path.
func run(t *testing.T, dir string, args ...string) map[string][]byte {
	t.Helper()
	out := t.TempDir()
	var stderr bytes.Buffer
	err := stubtest.Run(func() *exec.Cmd {
		cmd := exec.Command(gen, append(args, "-out", out)...)
		cmd.Dir = dir
		stderr.Reset()
		cmd.Stderr = &stderr
		return cmd
	})
	if err != nil {
		t.Fatalf("gen %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	files := read(t, out)
	files["report.txt"] = stderr.Bytes()
	return files
}

// regenerate runs the generator as make generate does, over the repository,
// with the further flags args, writing the packages under out, and returns
// its report.
func regenerate(tb testing.TB, out string, args ...string) string {
	tb.Helper()
	var stderr bytes.Buffer
	err := stubtest.Run(func() *exec.Cmd {
		cmd := exec.Command(gen, append([]string{"-all", "..", "-out", out}, args...)...)
		stderr.Reset()
		cmd.Stderr = &stderr
		return cmd
	})
	if err != nil {
		tb.Fatalf("gen -all %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return stderr.String()
}

// read returns the files under dir by relative path.
func read(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// cases returns the directories of the golden cases that hold file: those
// of testdata, and those a level deeper, where a directory of testdata
// holds the variants of one case (memlocation/cuda13.0).
func cases(t *testing.T, file string) []string {
	t.Helper()
	var dirs []string
	for _, pattern := range []string{"testdata/*/", "testdata/*/*/"} {
		m, err := filepath.Glob(pattern + file)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range m {
			dirs = append(dirs, filepath.Dir(f))
		}
	}
	if len(dirs) == 0 {
		t.Fatalf("no cases with %s", file)
	}
	return dirs
}

// casePackage returns the name of a case's package: the one that its
// directory's packages.txt puts in the directory (dir .).
func casePackage(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "packages.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var name string
	for line := range strings.Lines(string(b)) {
		switch f := strings.Fields(line); {
		case len(f) == 2 && f[0] == "package":
			name = f[1]
		case len(f) == 2 && f[0] == "dir" && f[1] == ".":
			return name
		}
	}
	t.Fatalf("%s/packages.txt has no package in its directory (dir .)", dir)
	return ""
}

func TestGolden(t *testing.T) {
	// A case is a directory whose packages.txt configures its package,
	// from the headers there or in the directories of its majors' data
	// files (cuda*.txt).
	for _, dir := range cases(t, "packages.txt") {
		name, _ := filepath.Rel("testdata", dir)
		t.Run(filepath.ToSlash(name), func(t *testing.T) {
			args := []string{"-config", "packages.txt", "-pkg", casePackage(t, dir)}
			// Each case is checked for every platform, as the bindings are.
			got := run(t, dir, append(args, "-check-targets")...)
			want := filepath.Join(dir, "want")
			if *update {
				os.RemoveAll(want)
				for name, b := range got {
					p := filepath.Join(want, name+".golden")
					if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(p, b, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				return
			}
			compare(t, got, want, ".golden")
			for name := range read(t, want) {
				if _, ok := got[strings.TrimSuffix(name, ".golden")]; !ok {
					t.Errorf("%s: gen no longer writes it (go test ./golden -update removes it)", filepath.Join(want, name))
				}
			}
		})
	}
}

// TestGoldenBuilds type-checks each case's golden Go files, cgo and layout
// tests included, in the case's directory, where their imports and
// #include lines point, under each major's build constraint: -update must
// not accept Go that does not build.
// The import case's base package is generated beside them first.
func TestGoldenBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("runs cgo and vet on every case")
	}
	var pkgs []string
	for _, dir := range cases(t, "want") {
		place(t, dir, goldenGo(t, dir))
		pkgs = append(pkgs, "./"+filepath.ToSlash(dir)+"/...")
	}
	files := run(t, filepath.Join("testdata", "import"), "-config", "packages.txt", "-pkg", "base")
	delete(files, "report.txt")
	place(t, filepath.Join("testdata", "import", "base"), files)
	out, err := exec.Command("go", append([]string{"vet"}, pkgs...)...).CombinedOutput()
	if err != nil {
		t.Errorf("go vet of the golden files: %v\n%s", err, out)
	}
	// The majors case's second set of files builds under its tag.
	out, err = exec.Command("go", "vet", "-tags", "golden2", "./testdata/majors/...").CombinedOutput()
	if err != nil {
		t.Errorf("go vet -tags golden2 of the majors case: %v\n%s", err, out)
	}
}

// goldenGo returns the Go files of a case's golden output, by path relative
// to the case's directory.
func goldenGo(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	for name, b := range read(t, filepath.Join(dir, "want")) {
		if strings.HasSuffix(name, ".go.golden") {
			files[strings.TrimSuffix(name, ".golden")] = b
		}
	}
	return files
}

// TestSourceCompatible builds and tests one Go program (memlocation's
// _program) against the golden bindings of each variant of CUDA's
// CUmemLocation: id is a plain field in CUDA 13.0, the only member of an
// anonymous union in 13.2, and the first of two in 13.4. The program sets
// and reads loc.Id, in a composite literal and by assignment, and checks it
// against C's loc.id; the variants' layout tests run too, comparing each
// binding with C.
func TestSourceCompatible(t *testing.T) {
	if testing.Short() {
		t.Skip("runs cgo on every variant")
	}
	const dir = "testdata/memlocation"
	program := read(t, filepath.Join(dir, "_program"))
	variants := []string{"cuda13.0", "cuda13.2", "cuda13.4"}
	for _, v := range variants {
		files := goldenGo(t, filepath.Join(dir, v))
		maps.Copy(files, program)
		place(t, filepath.Join(dir, v), files)
	}
	args := []string{"test"}
	if x := os.Getenv(stubtest.ExecEnv); x != "" {
		args = append(args, "-exec", x) // cross-built, as this test is
	}
	out, err := exec.Command("go", append(args, "./"+dir+"/...")...).CombinedOutput()
	if err != nil {
		t.Fatalf("go test of the program against each variant: %v\n%s", err, out)
	}
	for _, v := range variants {
		if !bytes.Contains(out, []byte("ok  \tgithub.com/gocuda/cuda/golden/"+dir+"/"+v+"\t")) {
			t.Errorf("no test passed for %s:\n%s", v, out)
		}
	}
}

// place writes files, by path relative to dir, for the rest of the test.
func place(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	for name, b := range files {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err == nil {
			t.Fatalf("%s exists already", p)
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(p) })
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { os.RemoveAll(filepath.Join(dir, "internal")) })
}

// compare checks that the files in got are exactly those under dir (with
// suffix added to their names).
func compare(t *testing.T, got map[string][]byte, dir, suffix string) {
	t.Helper()
	for name, b := range got {
		w, err := os.ReadFile(filepath.Join(dir, name+suffix))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !bytes.Equal(b, w) {
			t.Errorf("%s differs from %s (go test ./golden -update rewrites it)\n%s", name, filepath.Join(dir, name+suffix), firstDiff(w, b))
		}
	}
}

// firstDiff shows the first line where want and got differ.
func firstDiff(want, got []byte) string {
	w, g := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			return "line " + strconv.Itoa(i+1) + ":\n\twant: " + a + "\n\tgot:  " + b
		}
	}
	return ""
}

// generated are the packages that gen generates, by the //go:generate line
// in the file named after each, with that line's arguments.
func generated(t *testing.T) map[string][]string {
	t.Helper()
	files, err := filepath.Glob("../*/*.go")
	if err != nil {
		t.Fatal(err)
	}
	pkgs := map[string][]string{}
	for _, f := range files {
		dir := filepath.Dir(f)
		if filepath.Base(f) != filepath.Base(dir)+".go" {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if args := genline.Args(src); args != nil {
			pkgs[filepath.Base(dir)] = args
		}
	}
	return pkgs
}

// TestRegenerate checks that the generator, run as make generate runs it
// but with -check-targets, reproduces every committed generated file byte
// for byte, for every CUDA major (../headers/cuda*.txt), having found the
// same code for linux/amd64 and linux/arm64 in every package (make
// generate parses for amd64 alone); that each package's //go:generate line
// only names it, its configuration being in gen/packages.txt; and that the
// line of a package that uses two others, one of which uses the other,
// run alone as go generate runs it, reproduces its files too.
func TestRegenerate(t *testing.T) {
	pkgs := generated(t)
	majors, err := filepath.Glob("../headers/cuda*.txt")
	if err != nil || len(majors) == 0 {
		t.Fatalf("no CUDA majors' data files: %v", err)
	}
	out := t.TempDir()
	report := regenerate(t, out, "-check-targets")
	got := read(t, out)
	compare(t, got, "..", "")
	for _, want := range []string{"cudart", "cudadrv", "nvrtc", "nvjitlink", "cublas", "cublaslt", "cusolver", "cusparse", "curand", "cufft", "nccl"} {
		if line := []string{"-pkg", want}; !slices.Equal(pkgs[want], line) {
			t.Errorf("%s.go's //go:generate line runs gen with %q, want %q: the package's configuration is in gen/packages.txt", want, pkgs[want], line)
		}
		if funcs, _ := filepath.Glob(filepath.Join(out, want, "zfuncs_*.go")); len(funcs) != len(majors) {
			t.Errorf("gen wrote %d %s/zfuncs_*.go, want one for each of %d majors", len(funcs), want, len(majors))
		}
		same := 0
		for line := range strings.Lines(report) {
			if strings.HasPrefix(line, "gen "+want+" (") && strings.HasSuffix(line, "): the same code for linux/amd64 and linux/arm64\n") {
				same++
			}
		}
		if same != len(majors) {
			t.Errorf("gen found the same code for linux/amd64 and linux/arm64 in %d majors' %s, want all %d", same, want, len(majors))
		}
	}
	// And nothing generated is left over from an older generator.
	filepath.WalkDir("..", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != ".." && (n == "testdata" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err == nil && bytes.HasPrefix(b, []byte("// Code generated by gen")) {
			rel, _ := filepath.Rel("..", p)
			if _, ok := got[filepath.ToSlash(rel)]; !ok {
				t.Errorf("%s is generated but gen no longer writes it", p)
			}
		}
		return err
	})
	t.Run("go generate cusolver", func(t *testing.T) {
		dir := filepath.Join("..", "cusolver")
		compare(t, goGenerate(t, dir, pkgs["cusolver"]), dir, "")
	})
}

// goGenerate runs gen in dir with the arguments of a //go:generate line, as
// go generate runs it there, and returns the files it writes.
func goGenerate(t *testing.T, dir string, line []string) map[string][]byte {
	t.Helper()
	got := run(t, dir, line...)
	delete(got, "report.txt")
	return got
}

// BenchmarkRegenerate measures make generate: the generator regenerating
// every package in one process, here into a temporary directory.
func BenchmarkRegenerate(b *testing.B) {
	if _, err := os.Stat("../headers"); err != nil {
		b.Skip("no headers to generate from:", err)
	}
	out := b.TempDir()
	for b.Loop() {
		regenerate(b, out)
	}
}

// TestFailedRunWritesNothing runs gen on the majors case with the second
// major's header broken: gen fails, writes none of the first major's files
// either, and says where the fault is. (The first major's files were
// written, and the errors named no file, or no directory looked in.)
func TestFailedRunWritesNothing(t *testing.T) {
	for _, tt := range []struct {
		name  string
		spoil func(header string) error
		want  func(header string) string // in gen's error
	}{
		{"cut off", func(h string) error {
			f, err := os.OpenFile(h, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			_, err = f.WriteString("libStatus_t libCutOff(int a,\n")
			return errors.Join(err, f.Close())
		}, func(h string) string {
			b, _ := os.ReadFile(h)
			return fmt.Sprintf("%s:%d", h, strings.Count(string(b), "\n"))
		}},
		{"missing", os.Remove, func(h string) string {
			return "gen looked in the headers' directories " + filepath.Dir(h)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module example.com/golden\n\ngo 1.26\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(root, "majors")
			for name, b := range read(t, "testdata/majors") {
				if strings.HasPrefix(name, "want/") {
					continue
				}
				p := filepath.Join(dir, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			header := filepath.Join(dir, "v2", "lib.h")
			if err := tt.spoil(header); err != nil {
				t.Fatal(err)
			}
			out := t.TempDir()
			cmd := exec.Command(gen, "-config", "packages.txt", "-pkg", "golden", "-out", out)
			cmd.Dir = dir
			stderr, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("gen with the header %s succeeded:\n%s", tt.name, stderr)
			}
			if files := read(t, out); len(files) > 0 {
				t.Errorf("gen failed, but wrote %d files, such as the first major's", len(files))
			}
			if want := tt.want(header); !strings.Contains(string(stderr), want) {
				t.Errorf("gen's error does not say %q:\n%s", want, stderr)
			}
		})
	}
}

// TestHandwrittenIncludes runs gen for a hand-written package whose
// section says handwritten cflags, over the majors case's data files, with a
// package whose C includes a header of the CUDA headers: where a major's
// directory lacks it, gen fails, writes nothing, and names the include by
// file and line and where it looked. (gen wrote zcflags_cuda12.go for
// headers that highlevel's shim.c could not compile against.)
func TestHandwrittenIncludes(t *testing.T) {
	for _, tt := range []struct {
		name  string
		in    []string // the majors' directories that hold extra.h
		files []string // what gen writes, or nil where it fails
	}{
		{"in every major", []string{"v1", "v2"}, []string{"zcflags_golden1.go", "zcflags_golden2.go"}},
		{"missing in one", []string{"v1"}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			files := map[string][]byte{
				"go.mod":       []byte("module example.com/golden\n\ngo 1.26\n"),
				"hw/shim.c":    []byte("#include <stdlib.h>\n#include \"shim.h\"\n#include <extra.h>\n"),
				"hw/shim.h":    []byte("#include <lib.h>\n"),
				"hw/hw.go":     []byte("package hw\n\n// #include \"shim.h\"\nimport \"C\"\n"),
				"packages.txt": []byte("majors majors\n\npackage hw\ndir hw\nhandwritten cflags\n"),
			}
			for name, b := range read(t, "testdata/majors") {
				if !strings.HasPrefix(name, "want/") {
					files["majors/"+name] = b
				}
			}
			for _, d := range tt.in {
				files["majors/"+d+"/extra.h"] = []byte("int extra;\n")
			}
			place(t, root, files)
			out := t.TempDir()
			cmd := exec.Command(gen, "-config", "../packages.txt", "-pkg", "hw", "-out", out)
			cmd.Dir = filepath.Join(root, "hw")
			stderr, err := cmd.CombinedOutput()
			got := slices.Sorted(maps.Keys(read(t, out)))
			if tt.files != nil {
				if err != nil || !slices.Equal(got, tt.files) {
					t.Errorf("gen: %v, wrote %q, want %q\n%s", err, got, tt.files, stderr)
				}
				return
			}
			if err == nil {
				t.Fatalf("gen succeeded:\n%s", stderr)
			}
			if len(got) > 0 {
				t.Errorf("gen failed, but wrote %q", got)
			}
			for _, want := range []string{
				filepath.Join(root, "hw", "shim.c") + ":3: extra.h",
				"the headers' directory " + filepath.Join(root, "majors", "v2") + " (" + filepath.Join(root, "majors", "cuda2.txt") + " names it)",
			} {
				if !strings.Contains(string(stderr), want) {
					t.Errorf("gen's error does not say %q:\n%s", want, stderr)
				}
			}
		})
	}
}
