package highlevel

import (
	"sync"
	"weak"

	"github.com/gocuda/cuda/highlevel/internal/caches"
)

// A Memo caches a function's results per device and key: PyCUDA's
// context_dependent_memoize. It is safe for use by several goroutines;
// concurrent Gets of one missing entry call the function once, and the
// others wait for its result. Errors are not cached.
//
// The zero value is not usable: make one with NewMemo; its Get returns an
// error wrapping ErrNil.
type Memo[K comparable, V any] struct {
	fn      func(Device, K) (V, error)
	release func(V) // frees a result when the Memo is cleared, or nil

	mu      sync.Mutex
	entries map[memoKey[K]]*memoEntry[V]
}

type memoKey[K comparable] struct {
	dev Device
	key K
}

type memoEntry[V any] struct {
	done chan struct{} // closed when v and err are set
	v    V
	err  error
}

// NewMemo returns a Memo of fn. ClearCaches clears it with every other.
func NewMemo[K comparable, V any](fn func(d Device, key K) (V, error)) *Memo[K, V] {
	return newMemo(fn, nil)
}

// newMemo returns a Memo of fn whose results are freed by release when it is
// cleared (library handles).
func newMemo[K comparable, V any](fn func(d Device, key K) (V, error), release func(V)) *Memo[K, V] {
	m := &Memo[K, V]{fn: fn, release: release, entries: map[memoKey[K]]*memoEntry[V]{}}
	wp := weak.Make(m) // the registry does not keep a Memo alive
	caches.Add(func() bool {
		m := wp.Value()
		if m != nil {
			m.Clear()
		}
		return m != nil
	})
	return m
}

// ClearCaches clears every Memo, the package's own included (compiled
// programs), and destroys the library handles of package highlevel/linalg
// once no call uses them and no capture is in progress (then when the
// captures end); the next call makes a new handle, so a ClearCaches fails
// no call. PyCUDA's clear_context_caches.
func ClearCaches() { caches.Clear() }

// Get returns fn(d, key), calling fn only when no result is cached. If fn
// panics, Get returns the panic as a *PanicError, to this call and to those
// waiting for it, and caches nothing. If fn calls runtime.Goexit, which
// ends the calling goroutine, the calls waiting for it return a
// *PanicError whose Goexit is set, and nothing is cached.
func (m *Memo[K, V]) Get(d Device, key K) (V, error) {
	var zero V
	switch {
	case m == nil:
		return zero, nilError("Memo")
	case m.fn == nil:
		return zero, zeroError("Memo", "NewMemo")
	}
	k := memoKey[K]{d, key}
	m.mu.Lock()
	e := m.entries[k]
	if e == nil {
		e = &memoEntry[V]{done: make(chan struct{})}
		m.entries[k] = e
		m.mu.Unlock()
		m.call(e, k)
		return e.v, e.err
	}
	m.mu.Unlock()
	<-e.done
	return e.v, e.err
}

// call sets e, the entry of k, to fn's result, or to a *PanicError if fn
// panics or calls runtime.Goexit, forgets e unless fn succeeded, and marks
// it done: also when runtime.Goexit goes on to end the goroutine.
func (m *Memo[K, V]) call(e *memoEntry[V], k memoKey[K]) {
	returned := false
	defer func() {
		if !returned {
			e.err = recovered("memoized function", recover())
		}
		if e.err != nil {
			m.mu.Lock()
			if m.entries[k] == e {
				delete(m.entries, k)
			}
			m.mu.Unlock()
		}
		close(e.done)
	}()
	e.v, e.err = m.fn(k.dev, k.key)
	returned = true
}

// Clear forgets every cached result.
func (m *Memo[K, V]) Clear() {
	if m == nil {
		return
	}
	m.mu.Lock()
	old := m.entries
	m.entries = map[memoKey[K]]*memoEntry[V]{}
	m.mu.Unlock()
	if m.release == nil {
		return
	}
	for _, e := range old {
		<-e.done
		if e.err == nil {
			m.release(e.v)
		}
	}
}
