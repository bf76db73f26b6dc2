package auth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"seckill/internal/follow"
	"seckill/models"
)

// Session is what a session cookie proves: who (by id and by name), in which role, since which login,
// until when.
type Session struct {
	UserID  int64
	Version int64 // the user's session version at login; ending the user's sessions bumps it
	Role    string
	ID      [16]byte // random at every login, so a login never reuses a session id (no fixation)
	Expires time.Time
	// Username is the name at login, so that "who am I" needs no query (names do not change); "" for a
	// cookie of the format before it (see Upgrade).
	Username string
}

// IDString is the session id in hex, for logs and for binding a QR code to the phone session that scanned it.
func (s Session) IDString() string { return hex.EncodeToString(s.ID[:]) }

var roleCodes = []string{"", models.RoleShopper, models.RoleMerchant, models.RoleAdmin}

func roleCode(role string) byte {
	for i, r := range roleCodes {
		if r == role && i > 0 {
			return byte(i)
		}
	}
	return 0
}

// A cookie is base64url of: the format, the user id, the session version, the expiry (Unix seconds), the
// role's code, the session id, then (format 2) the username's length and the username, and last the MAC
// of all before it. Format 1, without the username, is still read; Upgrade spells such a session in format 2.
const (
	cookieFormat   = 2
	cookieFormatV1 = 1
	payloadLen     = 1 + 8 + 8 + 8 + 1 + 16 // format 1's payload, the start of format 2's
	maxNameLen     = 64                     // a longer name (none is: names are 3 to 32) is not carried
	macLen         = sha256.Size
	authChannel    = "auth:changed"
	refreshPeriod  = 2 * time.Second
	refreshMargin  = 10 * time.Second
)

// userState is what the sessions of a user whose account changed recently must agree with.
type userState struct {
	version int64
	role    string
	changed time.Time
}

// Sessions issues and checks session cookies. A cookie is signed, so checking it needs no lookup; what a
// signature cannot tell (the user logged out, or an admin changed the role) comes from a map in memory of
// the users whose accounts changed within a session's lifetime. Every instance keeps that map current
// from a Redis channel, and reads the database every two seconds for anything the channel missed. So
// the check on the buy path costs no round trip, and a logout takes effect everywhere within moments.
type Sessions struct {
	mac   *macPool
	ttl   time.Duration
	now   func() time.Time
	db    *gorm.DB
	rdb   redis.UniversalClient
	log   *slog.Logger
	users [userShards]userShard // by user id: every authenticated request reads one
	mu    sync.Mutex            // guards since
	since time.Time             // the last database refresh

	// verified remembers cookies whose signature was checked; expiry, the user's session version and
	// whether the session ended are still checked on every request.
	verified *verified[Session]

	ended    endedSet  // sessions ended one at a time (a logout), until they would have expired
	maxLive  int       // the live sessions a user may have (SESSION_MAX): a login past it ends the oldest
	seen     seenNotes // sessions seen lately, for last_seen_at (written by Run)
	agents   *Agents   // names the browser and system of a new session
	forgotAt time.Time // when ended ids were last forgotten (guarded by mu)
}

// NewSessions returns a session manager whose cookies live for ttl.
func NewSessions(secret string, ttl time.Duration, db *gorm.DB, rdb redis.UniversalClient, now func() time.Time, log *slog.Logger) *Sessions {
	return &Sessions{
		mac: newMacPool(derive(secret, "session")), ttl: ttl, now: now, db: db, rdb: rdb, log: log,
		verified: newVerified[Session](), agents: NewAgents(), maxLive: DefaultMaxSessions,
	}
}

// DefaultMaxSessions is how many live sessions (devices) a user may have unless told otherwise.
const DefaultMaxSessions = 20

// LimitSessions sets how many live sessions a user may have (n ≥ 1); call it before serving.
func (s *Sessions) LimitSessions(n int) { s.maxLive = max(1, n) }

// maxEndedPerUser bounds a user's ids in the ended set: twice the live sessions a user may have, so
// that ending every device one by one, twice over, within a session's lifetime fits. Past it, the
// user's next logout ends all of that user's sessions (ended1): nobody else's.
func (s *Sessions) maxEndedPerUser() int { return 2 * s.maxLive }

// userShards spreads the changed users over read locks of their own: one read lock shared by every
// request makes the two cores take its word from each other on each (about 100 ns a read on this
// machine's two cores, against a few with the readers spread; BenchmarkMapGetParallel in internal/memo).
const userShards = 64

// userShard is a share of the changed users, padded to a cache line of its own.
type userShard struct {
	mu sync.RWMutex
	m  map[int64]userState
	_  [32]byte
}

func (s *Sessions) shard(userID int64) *userShard { return &s.users[uint64(userID)%userShards] }

func derive(secret, purpose string) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(purpose))
	return m.Sum(nil)
}

// Issue starts a new session for u and returns it with its cookie value.
func (s *Sessions) Issue(u *models.User) (Session, string, error) {
	sess := Session{UserID: u.ID, Version: u.SessionVersion, Role: u.Role, Expires: s.now().Add(s.ttl), Username: u.Username}
	if _, err := rand.Read(sess.ID[:]); err != nil {
		return Session{}, "", err
	}
	return s.encode(sess)
}

// Upgrade gives a session whose cookie is of the format before usernames the cookie of the current
// format, with the user's name: the same session (id, version, expiry), so nothing but its spelling
// changes.
func (s *Sessions) Upgrade(sess Session, username string) (Session, string, error) {
	sess.Username = username
	return s.encode(sess)
}

func (s *Sessions) encode(sess Session) (Session, string, error) {
	if len(sess.Username) > maxNameLen {
		sess.Username = ""
	}
	n := payloadLen + 1 + len(sess.Username)
	buf := make([]byte, n, n+macLen)
	buf[0] = cookieFormat
	binary.BigEndian.PutUint64(buf[1:], uint64(sess.UserID))
	binary.BigEndian.PutUint64(buf[9:], uint64(sess.Version))
	binary.BigEndian.PutUint64(buf[17:], uint64(sess.Expires.Unix()))
	buf[25] = roleCode(sess.Role)
	copy(buf[26:], sess.ID[:])
	buf[payloadLen] = byte(len(sess.Username))
	copy(buf[payloadLen+1:], sess.Username)
	buf = s.mac.sum(buf, buf)
	return sess, base64.RawURLEncoding.EncodeToString(buf), nil
}

// cookieLenOK reports whether a cookie value has the length of one of the formats (checked before any
// hashing).
func cookieLenOK(n int) bool {
	enc := base64.RawURLEncoding
	return n == enc.EncodedLen(payloadLen+macLen) ||
		n >= enc.EncodedLen(payloadLen+1+macLen) && n <= enc.EncodedLen(payloadLen+1+maxNameLen+macLen)
}

// Check returns the session a cookie value proves, if it is genuine, unexpired and not ended. It reads
// only memory.
func (s *Sessions) Check(value string) (Session, bool) {
	p, ok := s.Ref(value)
	if !ok {
		return Session{}, false
	}
	return *p, true
}

// Ref is Check answering a pointer to the session it remembers (when the user's role is unchanged; a
// copy otherwise), so that a request can keep it without a copy on the heap. Nobody may change it.
func (s *Sessions) Ref(value string) (*Session, bool) {
	p, _, ok := s.ref(value, s.now())
	return p, ok
}

// RefSeen is Ref for a request: it also notes the session seen (Seen), looking the note up at most once
// every seenRecheck a cookie; in between, the remembered cookie's own mark says it was noted lately. A
// status poll's profile spent 2.7% of its samples looking the note up on every request.
func (s *Sessions) RefSeen(value string) (*Session, bool) {
	now := s.now()
	p, mark, ok := s.ref(value, now)
	if !ok {
		return nil, false
	}
	// At most once in seenEvery a session takes a write lock to be noted; Run writes the notes to the
	// database in batches.
	if t := now.Unix(); mark.Load() <= t {
		if s.seen.due(p.ID) {
			s.seen.note(p.ID, now)
		}
		mark.Store(t + seenRecheck)
	}
	return p, true
}

// seenRecheck is how many seconds a remembered cookie goes without looking its session's "seen" note up.
const seenRecheck = 30

// ref is Ref at now, answering also the remembered cookie's mark.
func (s *Sessions) ref(value string, now time.Time) (*Session, *atomic.Int64, bool) {
	if !cookieLenOK(len(value)) {
		return nil, nil, false
	}
	e := s.verified.entry(value)
	if e == nil {
		sess, ok := s.verify(value)
		if !ok {
			return nil, nil, false
		}
		e = s.verified.put(value, sess)
	}
	p, ok := s.current(&e.found, now)
	return p, &e.mark, ok
}

// verify decodes a cookie value and checks its signature.
func (s *Sessions) verify(value string) (Session, bool) {
	var buf [payloadLen + 1 + maxNameLen + macLen]byte
	if base64.RawURLEncoding.DecodedLen(len(value)) > len(buf) {
		return Session{}, false
	}
	// One spelling per cookie: Strict refuses spare bits in the last character, and the length (the
	// format's own, below) refuses the line breaks a decoder skips.
	n, err := base64.RawURLEncoding.Strict().Decode(buf[:], []byte(value))
	if err != nil || n != base64.RawURLEncoding.DecodedLen(len(value)) || n < payloadLen+macLen {
		return Session{}, false
	}
	raw := buf[:n]
	var name []byte
	switch {
	case raw[0] == cookieFormatV1 && n == payloadLen+macLen:
	case raw[0] == cookieFormat && n > payloadLen+macLen && n == payloadLen+1+int(raw[payloadLen])+macLen:
		name = raw[payloadLen+1 : n-macLen]
	default:
		return Session{}, false
	}
	var mac [macLen]byte
	if !hmac.Equal(s.mac.sum(mac[:0], raw[:n-macLen]), raw[n-macLen:]) {
		return Session{}, false
	}
	role := int(raw[25])
	if role == 0 || role >= len(roleCodes) {
		return Session{}, false
	}
	sess := Session{
		UserID:   int64(binary.BigEndian.Uint64(raw[1:])),
		Version:  int64(binary.BigEndian.Uint64(raw[9:])),
		Expires:  time.Unix(int64(binary.BigEndian.Uint64(raw[17:])), 0),
		Role:     roleCodes[role],
		Username: string(name),
	}
	copy(sess.ID[:], raw[26:])
	return sess, true
}

// current answers a genuine session if it is unexpired and not ended, in its user's current role.
func (s *Sessions) current(sess *Session, now time.Time) (*Session, bool) {
	if !now.Before(sess.Expires) || s.ended.has(sess.UserID, sess.ID) {
		return nil, false
	}
	sh := s.shard(sess.UserID)
	sh.mu.RLock()
	st, changed := sh.m[sess.UserID]
	sh.mu.RUnlock()
	// A cookie of a later version than this instance knows was issued after a change this instance has
	// not heard of yet (another session of the user ended them all, and this one was given the new
	// version): it is signed, so it is good, in the role it carries.
	if changed && sess.Version <= st.version {
		if sess.Version < st.version {
			return nil, false
		}
		if sess.Role != st.role {
			now := *sess
			now.Role = st.role
			return &now, true
		}
	}
	return sess, true
}

// EndAll ends every session of the user (a password reset): it bumps the session version, here at once
// and on every other instance through Redis, and marks the user's sessions ended.
func (s *Sessions) EndAll(ctx context.Context, userID int64) error {
	_, err := s.endAll(ctx, userID)
	return err
}

// endAll is EndAll answering the user as now (its new session version).
func (s *Sessions) endAll(ctx context.Context, userID int64) (*models.User, error) {
	now := s.now()
	u, err := models.BumpSessionVersion(ctx, s.db, userID, now)
	if err != nil {
		return nil, err
	}
	if err := s.announce(ctx, u); err != nil {
		return nil, err
	}
	s.markEnded(ctx, userID, now)
	return u, nil
}

// markEnded writes down that every session of the user ended (the version did it): a failure only
// leaves the list showing sessions that no instance takes any more.
func (s *Sessions) markEnded(ctx context.Context, userID int64, now time.Time) {
	if err := models.EndSessionsOf(ctx, s.db, userID, "", now); err != nil {
		s.log.WarnContext(ctx, "sessions not marked ended", "user_id", userID, "err", err)
	}
}

// SetRole changes a user's role (who's action, audited); the user's sessions carry the new role from
// the next request on.
func (s *Sessions) SetRole(ctx context.Context, who models.Actor, userID int64, role string) (*models.User, error) {
	u, err := models.SetRole(ctx, s.db, who, userID, role, s.now())
	if err != nil {
		return nil, err
	}
	return u, s.announce(ctx, u)
}

// SetBlocked blocks (every session of the user ends, here and on every instance at once) or unblocks an
// account, as who's audited action with a reason.
func (s *Sessions) SetBlocked(ctx context.Context, who models.Actor, userID int64, blocked bool, reason string) (*models.User, error) {
	now := s.now()
	u, err := models.SetBlocked(ctx, s.db, who, userID, blocked, reason, now)
	if err != nil {
		return nil, err
	}
	if err := s.announce(ctx, u); err != nil {
		return nil, err
	}
	if blocked {
		s.markEnded(ctx, userID, now) // the version ended them already; the list says so too
	}
	return u, nil
}

func (s *Sessions) announce(ctx context.Context, u *models.User) error {
	changed := s.now()
	if u.AuthChangedAt != nil {
		changed = *u.AuthChangedAt
	}
	s.apply(u.ID, u.SessionVersion, u.Role, changed)
	msg := fmt.Sprintf("%d:%d:%s:%d", u.ID, u.SessionVersion, u.Role, changed.UnixNano())
	if err := follow.Publish(ctx, s.rdb, authChannel, msg); err != nil {
		// The other instances still learn it from the database within refreshPeriod.
		s.log.WarnContext(ctx, "auth change not published", "user_id", u.ID, "err", err)
	}
	return nil
}

// apply records a user's state; an older change (a lower session version, or the same version changed
// earlier) never replaces a newer one, whichever way it arrived first. The user's ended ids of a lower
// version are dropped: the version refuses their cookies now.
func (s *Sessions) apply(userID, version int64, role string, changed time.Time) {
	sh := s.shard(userID)
	sh.mu.Lock()
	if cur, ok := sh.m[userID]; ok && (cur.version > version || cur.version == version && cur.changed.After(changed)) {
		sh.mu.Unlock()
		return
	}
	if sh.m == nil {
		sh.m = make(map[int64]userState)
	}
	sh.m[userID] = userState{version: version, role: role, changed: changed}
	sh.mu.Unlock()
	s.ended.dropBefore(userID, version)
}

// Load reads the users whose accounts changed within a session's lifetime. Call it before serving.
func (s *Sessions) Load(ctx context.Context) error {
	return s.refresh(ctx, s.now().Add(-s.ttl))
}

func (s *Sessions) refresh(ctx context.Context, since time.Time) error {
	started := s.now()
	users, err := models.UsersAuthChangedSince(ctx, s.db, since)
	if err != nil {
		return err
	}
	for _, u := range users {
		s.apply(u.ID, u.SessionVersion, u.Role, *u.AuthChangedAt)
	}
	ended, err := models.SessionsEndedSince(ctx, s.db, since, started)
	if err != nil {
		return err
	}
	for _, e := range ended {
		if id, ok := sessionID(e.ID); ok {
			s.ended.add(e.UserID, id, e.ExpiresAt, e.Version)
		}
	}
	s.mu.Lock()
	s.since = started
	forget := started.Sub(s.forgotAt) >= forgetEvery
	if forget {
		s.forgotAt = started
	}
	s.mu.Unlock()
	if forget {
		s.ended.forget(started)
	}
	// Cookies older than a session's lifetime are expired anyway: their users need no entry.
	for i := range s.users {
		sh := &s.users[i]
		sh.mu.Lock()
		for id, st := range sh.m {
			if started.Sub(st.changed) > s.ttl+refreshMargin {
				delete(sh.m, id)
			}
		}
		sh.mu.Unlock()
	}
	return nil
}

// Run keeps the map current until ctx ends: changes published by other instances at once, and a read of
// the database every two seconds for any message lost while Redis was away.
func (s *Sessions) Run(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.writeSeen(ctx)
	}()
	defer func() { <-done }()
	return follow.Channel(ctx, s.rdb, authChannel, refreshPeriod, s.applyMessage, func(ctx context.Context) {
		s.mu.Lock()
		since := s.since.Add(-refreshMargin)
		s.mu.Unlock()
		if err := s.refresh(ctx, since); err != nil && ctx.Err() == nil {
			s.log.WarnContext(ctx, "session refresh failed", "err", err)
		}
	})
}

func (s *Sessions) applyMessage(payload string) {
	if rest, ok := strings.CutPrefix(payload, endedPrefix); ok {
		s.applyEnded(rest)
		return
	}
	parts := strings.Split(payload, ":")
	if len(parts) != 4 {
		return
	}
	id, err1 := strconv.ParseInt(parts[0], 10, 64)
	ver, err2 := strconv.ParseInt(parts[1], 10, 64)
	at, err3 := strconv.ParseInt(parts[3], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || !models.ValidRole(parts[2]) {
		return
	}
	s.apply(id, ver, parts[2], time.Unix(0, at))
}
