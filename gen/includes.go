package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// includeLine matches an #include line of C code or of a cgo preamble (a
// line comment or a block comment's line), and captures the header.
var includeLine = regexp.MustCompile(`^\s*(?://\s*)?#\s*include\s*[<"]([^>"]+)[>"]`)

// checkIncludes reports, for the hand-written package in dest, each header
// that its C (its .c and .h files and the cgo preambles of its .go files,
// generated and test files left out) includes and that neither the
// package, the headers' directory hdrDir (which m's data file names) nor
// the C compiler's include paths hold: the package would not compile
// against m's headers. The error names each such include by file and line,
// and where gen looked.
func checkIncludes(dest, hdrDir string, m *major) error {
	host, err := hostConfig()
	if err != nil {
		return fmt.Errorf("configuring the C front end: %w", err)
	}
	dirs := []string{dest, hdrDir}
	for _, d := range append(host.IncludePaths, host.SysIncludePaths...) {
		if filepath.IsAbs(d) {
			dirs = append(dirs, d)
		}
	}
	entries, err := os.ReadDir(dest)
	if err != nil {
		return err
	}
	var missing []string
	for _, e := range entries {
		name := e.Name()
		switch {
		case e.IsDir() || strings.HasSuffix(name, "_test.go") || strings.HasPrefix(name, "z"):
			continue
		case strings.HasSuffix(name, ".go") || strings.HasSuffix(name, ".c") || strings.HasSuffix(name, ".h"):
		default:
			continue
		}
		b, err := os.ReadFile(filepath.Join(dest, name))
		if err != nil {
			return err
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, len(b)+1)
		for line := 1; sc.Scan(); line++ {
			inc := includeLine.FindStringSubmatch(sc.Text())
			if inc == nil || found(inc[1], dirs) {
				continue
			}
			missing = append(missing, fmt.Sprintf("%s:%d: %s", filepath.Join(dest, name), line, inc[1]))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	where := hdrDir
	if m != nil {
		where += " (" + m.file + " names it)"
	}
	return fmt.Errorf("%s includes headers found nowhere:\n\t%s\ngen looked in the package's directory, the headers' directory %s and the C compiler's include paths: put the missing header there, from the toolkit or the library that has it",
		dest, strings.Join(missing, "\n\t"), where)
}

// found reports whether the header is in one of dirs.
func found(header string, dirs []string) bool {
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, header)); err == nil {
			return true
		}
	}
	return false
}
