//go:build race

package collective

// raceEnabled: the test runs under the race detector.
const raceEnabled = true
