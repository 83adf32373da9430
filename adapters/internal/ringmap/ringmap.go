// Package ringmap is a bounded, concurrency-safe map that forgets its
// oldest key first: the in-memory indexes of the message-language adapters
// (which message landed in which run, thread and task) are built on it.
package ringmap

import "sync"

// Map remembers up to a fixed number of keys.
type Map[V any] struct {
	mu   sync.Mutex
	m    map[string]V
	ring []string // keys in insertion order, for eviction
	next int
}

// New returns a Map that remembers the last n keys (n ≥ 1).
func New[V any](n int) *Map[V] {
	return &Map[V]{m: make(map[string]V), ring: make([]string, max(n, 1))}
}

// Get returns the value of key.
func (x *Map[V]) Get(key string) (V, bool) {
	x.mu.Lock()
	v, ok := x.m[key]
	x.mu.Unlock()
	return v, ok
}

// Put sets the value of key; a new key evicts the oldest when full.
func (x *Map[V]) Put(key string, v V) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if _, ok := x.m[key]; ok {
		x.m[key] = v
		return
	}
	if old := x.ring[x.next]; old != "" {
		delete(x.m, old)
	}
	x.ring[x.next] = key
	x.next = (x.next + 1) % len(x.ring)
	x.m[key] = v
}
