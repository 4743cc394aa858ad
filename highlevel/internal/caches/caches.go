// Package caches lists what highlevel.ClearCaches clears: highlevel's
// Memos and the library handles of its subpackages (highlevel/linalg),
// each registered as it is made. highlevel and the subpackages import it
// alike, so no package needs to set up another's.
package caches

import (
	"slices"
	"sync"
)

// registry lists the functions Add registered.
var registry struct {
	sync.Mutex
	clear []*entry
}

// An entry is one registered function; a pointer, so that Clear can tell
// entries apart.
type entry struct{ clear func() bool }

// Add registers clear, which every later Clear calls until it returns
// false, saying its cache is gone.
func Add(clear func() bool) {
	registry.Lock()
	registry.clear = append(registry.clear, &entry{clear})
	registry.Unlock()
}

// Clear calls every registered function, and forgets those that return
// false. The functions run outside the lock: linalg's waits for the calls
// in progress on a handle, and such a call, or a function itself, may Add
// another.
func Clear() {
	registry.Lock()
	es := slices.Clone(registry.clear)
	registry.Unlock()
	gone := map[*entry]bool{}
	for _, e := range es {
		if !e.clear() {
			gone[e] = true
		}
	}
	if len(gone) == 0 {
		return
	}
	registry.Lock()
	registry.clear = slices.DeleteFunc(registry.clear, func(e *entry) bool { return gone[e] })
	registry.Unlock()
}
