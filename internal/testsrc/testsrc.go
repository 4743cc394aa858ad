// Package testsrc tells a test that reads the repository's files (sources,
// headers, C to build) whether they are there. A GPU suite's copy of a test
// binary runs without them, and such a test skips there. Where
// $GOCUDA_TEST_SOURCES is 1, as make test sets it, a missing file fails the
// test instead: a skip would hide a check that the repository must run,
// such as one whose files moved.
package testsrc

import (
	"os"
	"testing"
)

// Env is the variable that makes a missing file fail a test.
const Env = "GOCUDA_TEST_SOURCES"

// Require skips t unless every path exists, or fails it where $Env is 1.
func Require(t testing.TB, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			if os.Getenv(Env) == "1" {
				t.Fatalf("$%s=1, and a file the test reads is missing: %v", Env, err)
			}
			t.Skipf("the sources are not here (a GPU suite's copy of the test): %v", err)
		}
	}
}
