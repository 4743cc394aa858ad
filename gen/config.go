package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)

// readData reads one of gen's data files, such as a CUDA major's: lines of
// a key and its values, separated by spaces, and
// comments from a # that starts a word to the end of the line. It calls set
// with each line's number, key and values, and adds the file's name and
// the line's number to set's error.
func readData(path string, set func(line int, key string, values []string) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		fields := strings.Fields(sc.Text())
		for i, w := range fields {
			if strings.HasPrefix(w, "#") {
				fields = fields[:i]
				break
			}
		}
		if len(fields) == 0 {
			continue
		}
		if err := set(n, fields[0], fields[1:]); err != nil {
			return fmt.Errorf("%s:%d: %w", path, n, err)
		}
	}
	return sc.Err()
}
