// Package memo is a map read under a read lock, of at most a bounded number of entries (all forgotten when
// it is full): what the crowd's polls read on every request, where an LRU's one lock and clock read per
// get were most of the cost under load.
package memo

import "sync"

// Map is a memo of at most Max entries. The zero Map keeps none until Max is set.
type Map[K comparable, V any] struct {
	mu  sync.RWMutex
	m   map[K]V
	Max int
}

// Get answers the value kept for k.
func (m *Map[K, V]) Get(k K) (V, bool) {
	m.mu.RLock()
	v, ok := m.m[k]
	m.mu.RUnlock()
	return v, ok
}

// Add keeps v for k, forgetting every other entry first when the map is full.
func (m *Map[K, V]) Add(k K, v V) {
	m.mu.Lock()
	if m.m == nil || len(m.m) >= m.Max {
		m.m = make(map[K]V)
	}
	m.m[k] = v
	m.mu.Unlock()
}

// Remove forgets k.
func (m *Map[K, V]) Remove(k K) {
	m.mu.Lock()
	delete(m.m, k)
	m.mu.Unlock()
}
