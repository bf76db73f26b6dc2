package auth

import (
	"sync"
	"sync/atomic"
	"time"
)

// endedSet is the sessions ended one at a time (a logout, a device logged out from the account page)
// within a session's lifetime, by session id, with when each would have expired: after that the cookie
// is refused anyway and the id is forgotten. Spread over read locks of their own, as the changed users
// are, since every authenticated request reads one.
type endedSet struct {
	shards [endedShards]endedShard
	size   atomic.Int64
}

const endedShards = 64

type endedShard struct {
	mu sync.RWMutex
	m  map[[16]byte]int64 // session id → its expiry, Unix seconds
	_  [32]byte
}

// maxEnded bounds the ids kept (each some 50 bytes): an account logged in and out this many times
// within a session's lifetime is more than people do. Past it, a logout ends every session of its user
// instead (Sessions.End), which needs no entry.
const maxEnded = 1 << 18

func (e *endedSet) shard(id [16]byte) *endedShard { return &e.shards[id[0]%endedShards] }

// has reports whether the session id has ended.
func (e *endedSet) has(id [16]byte) bool {
	if e.size.Load() == 0 {
		return false
	}
	sh := e.shard(id)
	sh.mu.RLock()
	_, ok := sh.m[id]
	sh.mu.RUnlock()
	return ok
}

// add records that id ended; it lasts until expires.
func (e *endedSet) add(id [16]byte, expires time.Time) {
	sh := e.shard(id)
	sh.mu.Lock()
	if sh.m == nil {
		sh.m = make(map[[16]byte]int64)
	}
	if _, ok := sh.m[id]; !ok {
		e.size.Add(1)
	}
	sh.m[id] = expires.Unix()
	sh.mu.Unlock()
}

// full reports whether another id would pass the bound.
func (e *endedSet) full() bool { return e.size.Load() >= maxEnded }

// forget drops the ids whose sessions have expired by now.
func (e *endedSet) forget(now time.Time) {
	t := now.Unix()
	for i := range e.shards {
		sh := &e.shards[i]
		sh.mu.Lock()
		for id, exp := range sh.m {
			if exp < t {
				delete(sh.m, id)
				e.size.Add(-1)
			}
		}
		sh.mu.Unlock()
	}
}

// seenNotes remembers which sessions made a request lately, so that "last seen" is written at most once
// every seenEvery a session and never on a request's path: a request only looks its session up (a read
// lock of a shard) and, once in seenEvery, notes it; a worker writes the notes in batches (Sessions.Run).
type seenNotes struct {
	shards [endedShards]seenShard
	size   atomic.Int64
}

type seenShard struct {
	mu sync.RWMutex
	m  map[[16]byte]seenNote
	_  [32]byte
}

type seenNote struct {
	at      int64 // Unix seconds, when noted
	written bool
}

// seenEvery is how often at most a session's last_seen_at is written; maxSeen bounds the sessions noted
// at once (those active within seenEvery): past it, sessions are not noted until the next flush, and their
// "last seen" lags.
const (
	seenEvery = 5 * time.Minute
	seenFlush = 30 * time.Second
	maxSeen   = 1 << 18
)

func (n *seenNotes) shard(id [16]byte) *seenShard { return &n.shards[id[0]%endedShards] }

// due reports whether the session has not been noted within seenEvery.
func (n *seenNotes) due(id [16]byte) bool {
	sh := n.shard(id)
	sh.mu.RLock()
	_, ok := sh.m[id]
	sh.mu.RUnlock()
	return !ok && n.size.Load() < maxSeen
}

// note records that the session was seen at now.
func (n *seenNotes) note(id [16]byte, now time.Time) {
	sh := n.shard(id)
	sh.mu.Lock()
	if sh.m == nil {
		sh.m = make(map[[16]byte]seenNote)
	}
	if _, ok := sh.m[id]; !ok {
		sh.m[id] = seenNote{at: now.Unix()}
		n.size.Add(1)
	}
	sh.mu.Unlock()
}

// take answers the notes not yet written, by the minute they were noted in (one statement a minute),
// marks them written, and forgets the written ones older than seenEvery (the session is due again).
func (n *seenNotes) take(now time.Time) map[int64][][16]byte {
	out := map[int64][][16]byte{}
	old := now.Add(-seenEvery).Unix()
	for i := range n.shards {
		sh := &n.shards[i]
		sh.mu.Lock()
		for id, note := range sh.m {
			switch {
			case !note.written:
				minute := note.at - note.at%60
				out[minute] = append(out[minute], id)
				note.written = true
				sh.m[id] = note
			case note.at <= old:
				delete(sh.m, id)
				n.size.Add(-1)
			}
		}
		sh.mu.Unlock()
	}
	return out
}
