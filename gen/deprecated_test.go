package main

import "testing"

// TestStripComments checks that comments go, and only comments: a comment
// opener inside another comment, a lone slash and an unclosed /* stay.
func TestStripComments(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"int x; /* a\n * b */ int y;", "int x;  int y;"},
		{"int x; // a /* b\nint y;", "int x; \nint y;"},
		{"/**/a/***/b/* * / */c", "abc"},
		{"a/*/b*/c", "ac"},         // the * of /* does not close it
		{"a/b/ c", "a/b/ c"},       // a lone slash stays
		{"a /* open", "a /* open"}, // an unclosed comment stays
		{"a /* open // b\nc", "a /* open \nc"},
		{"a //", "a "},
		{"a/", "a/"},
		{"", ""},
	} {
		if got := stripComments(tt.in); got != tt.want {
			t.Errorf("stripComments(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
