package auth

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// endedSet is the sessions ended one at a time (a logout, a device logged out from the account page)
// within a session's lifetime, by user and session id, with when each would have expired: after that the
// cookie is refused anyway and the id is forgotten. Spread over read locks of their own, as the changed
// users are, since every authenticated request reads one.
//
// Its bound is per user, not global, so that no account can make the set overflow for another: a user
// whose ids reach Sessions' per-user bound has every session ended by the session version instead
// (Sessions.ended1), and a higher version makes that user's ids redundant, so they are dropped
// (dropBefore). The whole set is then at most the per-user bound (plus the live sessions a version change
// ended, read back by the refresh) times the accounts that logged out lately: see docs/security.md.
type endedSet struct {
	shards [endedShards]endedShard
	size   atomic.Int64
}

const endedShards = 64

type endedShard struct {
	mu sync.RWMutex
	m  map[int64][]endedEntry // user id → the user's ended sessions
	_  [32]byte
}

// endedEntry is one ended session. version is at least the session version its cookie carries (the
// cookie's own, or the user's as the database said when the session ended, which cannot be lower): once
// the user's version passes it, the version refuses the cookie and the entry is not needed.
type endedEntry struct {
	id      [16]byte
	expires int64 // Unix seconds
	version int64
}

func (e *endedSet) shard(userID int64) *endedShard { return &e.shards[uint64(userID)%endedShards] }

// has reports whether the user's session id has ended.
func (e *endedSet) has(userID int64, id [16]byte) bool {
	if e.size.Load() == 0 {
		return false
	}
	sh := e.shard(userID)
	sh.mu.RLock()
	found := false
	for _, x := range sh.m[userID] {
		if x.id == id {
			found = true
			break
		}
	}
	sh.mu.RUnlock()
	return found
}

// add records that the user's session id, of at most version, ended; it lasts until expires.
func (e *endedSet) add(userID int64, id [16]byte, expires time.Time, version int64) {
	sh := e.shard(userID)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.m == nil {
		sh.m = make(map[int64][]endedEntry)
	}
	list := sh.m[userID]
	for i := range list {
		if list[i].id == id {
			list[i].expires = expires.Unix()
			list[i].version = min(list[i].version, version)
			return
		}
	}
	sh.m[userID] = append(list, endedEntry{id: id, expires: expires.Unix(), version: version})
	e.size.Add(1)
}

// count answers how many ended sessions of the user the set holds.
func (e *endedSet) count(userID int64) int {
	sh := e.shard(userID)
	sh.mu.RLock()
	n := len(sh.m[userID])
	sh.mu.RUnlock()
	return n
}

// dropBefore forgets the user's ids of a version below version: that version refuses their cookies.
func (e *endedSet) dropBefore(userID, version int64) {
	sh := e.shard(userID)
	sh.mu.Lock()
	e.keep(sh, userID, func(x endedEntry) bool { return x.version >= version })
	sh.mu.Unlock()
}

// keep keeps the user's entries for which ok holds (the shard's lock held).
func (e *endedSet) keep(sh *endedShard, userID int64, ok func(endedEntry) bool) {
	list, found := sh.m[userID]
	if !found {
		return
	}
	n := len(list)
	list = slices.DeleteFunc(list, func(x endedEntry) bool { return !ok(x) })
	e.size.Add(int64(len(list) - n))
	if len(list) == 0 {
		delete(sh.m, userID)
	} else {
		sh.m[userID] = list
	}
}

// forget drops the ids whose sessions have expired by now.
func (e *endedSet) forget(now time.Time) {
	t := now.Unix()
	for i := range e.shards {
		sh := &e.shards[i]
		sh.mu.Lock()
		for userID := range sh.m {
			e.keep(sh, userID, func(x endedEntry) bool { return x.expires >= t })
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
