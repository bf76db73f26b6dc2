// Package memo is a map read under a read lock, of at most a bounded number of entries (all forgotten when
// it is full): what the crowd's polls read on every request, where an LRU's one lock and clock read per
// get were most of the cost under load.
package memo

import (
	"sync"
	"sync/atomic"
	"time"
)

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

// Clear forgets every entry.
func (m *Map[K, V]) Clear() {
	m.mu.Lock()
	m.m = nil
	m.mu.Unlock()
}

// Timed is a Map whose entries are answered for a time after they were added: an expired entry is
// not answered, and it goes when the map fills (all entries at once, as Map forgets) or its key is
// added again. It runs nothing in the background. golang-lru's expirable LRU, which it replaces where
// entries live a second, wakes a cleaner a hundred times a TTL: three caches of a second cost an idle
// server 300 wake-ups a second, and a status poll about a twelfth of its CPU under a crowd.
type Timed[K comparable, V any] struct {
	m   Map[K, stamped[V]]
	ttl time.Duration
}

type stamped[V any] struct {
	v       V
	expires int64 // the monotonic clock's nanoseconds (sinceStart)
}

// NewTimed returns a Timed of at most max entries, each answered for ttl.
func NewTimed[K comparable, V any](max int, ttl time.Duration) *Timed[K, V] {
	t := &Timed[K, V]{ttl: ttl}
	t.m.Max = max
	return t
}

// Get answers the value kept for k, unless it expired.
func (t *Timed[K, V]) Get(k K) (V, bool) {
	s, ok := t.m.Get(k)
	if !ok || sinceStart() >= s.expires {
		var zero V
		return zero, false
	}
	return s.v, true
}

// Add keeps v for k, for the Timed's ttl from now.
func (t *Timed[K, V]) Add(k K, v V) {
	t.m.Add(k, stamped[V]{v: v, expires: sinceStart() + int64(t.ttl)})
}

// Purge forgets every entry.
func (t *Timed[K, V]) Purge() { t.m.Clear() }

// start anchors sinceStart: time.Since reads the monotonic clock, which wall-clock steps do not move.
var start = time.Now()

func sinceStart() int64 { return int64(time.Since(start)) }

// Slots is a memo for the few keys that every request reads (an item's line, a sale's times), read
// without a lock: each key has a slot whose value is swapped atomically, and only a key not seen before
// copies the map of slots. A read lock's two atomic adds on one shared word make the two cores take the
// word from each other on every read; here a read writes nothing. At most Max keys (all forgotten when
// full); for many keys added often, Map.
type Slots[K comparable, V any] struct {
	mu  sync.Mutex // serialises new keys
	m   atomic.Pointer[map[K]*atomic.Pointer[V]]
	Max int
}

// Get answers the value kept for k.
func (s *Slots[K, V]) Get(k K) (V, bool) {
	if p := s.slot(k); p != nil {
		return *p.Load(), true
	}
	var zero V
	return zero, false
}

func (s *Slots[K, V]) slot(k K) *atomic.Pointer[V] {
	if m := s.m.Load(); m != nil {
		return (*m)[k]
	}
	return nil
}

// Add keeps v for k.
func (s *Slots[K, V]) Add(k K, v V) {
	if p := s.slot(k); p != nil {
		p.Store(&v)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.slot(k); p != nil {
		p.Store(&v)
		return
	}
	var next map[K]*atomic.Pointer[V]
	if old := s.m.Load(); old == nil || len(*old) >= s.Max {
		next = make(map[K]*atomic.Pointer[V])
	} else {
		next = make(map[K]*atomic.Pointer[V], len(*old)+1)
		for k, p := range *old {
			next[k] = p
		}
	}
	p := new(atomic.Pointer[V])
	p.Store(&v)
	next[k] = p
	s.m.Store(&next)
}
