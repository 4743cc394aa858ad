//go:build race

package highlevel

// The race detector allows 8128 live goroutines.
const maxWaiters = 4000
