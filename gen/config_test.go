package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestReadData checks the lines of gen's data files: a key and its values,
// blank lines and comments skipped, and a # inside a word (a URL's
// fragment) part of the word.
func TestReadData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data.txt")
	text := "# a comment\n\nkey a b\n  spaced\tout  # a comment\nguide https://example.com/x/#y the guide#2\n#key c\n"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	var got []string
	err := readData(path, func(n int, key string, v []string) error {
		got = append(got, strings.Join(append([]string{string(rune('0' + n)), key}, v...), " "))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"3 key a b", "4 spaced out", "5 guide https://example.com/x/#y the guide#2"}
	if !slices.Equal(got, want) {
		t.Errorf("read %q, want %q", got, want)
	}
	err = readData(path, func(n int, key string, v []string) error {
		if key == "spaced" {
			return os.ErrInvalid
		}
		return nil
	})
	if want := path + ":4: invalid argument"; err == nil || err.Error() != want {
		t.Errorf("readData's error = %v, want %q", err, want)
	}
}
