//go:build !race

package highlevel

const maxWaiters = 10000
