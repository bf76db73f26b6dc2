package auth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"time"

	"seckill/errs"
	"seckill/internal/follow"
	"seckill/internal/hexid"
	"seckill/models"
)

// A person's sessions, one per device: each login is a row (models.Session), and one session can end
// alone. Ending one adds its id to every instance's ended set: here at once, on the others by a message
// on the auth channel ("end:<id>:<expiry>") and, for a message lost, by the refresh's read of the rows
// ended lately. The set holds an id until the session would have expired.
const (
	endedPrefix = "end:"
	forgetEvery = 30 * time.Second // how often the ids of expired sessions are dropped from the set
)

// Client is what a new session records of the browser that starts it.
type Client struct {
	UserAgent string
	IP        string
}

// PublicID is the id the API shows for a session: a hash of its id, so that a page (or a script on it)
// never holds the id the cookie carries (the cookie is signed, so the id alone forges nothing; still,
// it stays out of sight).
func PublicID(id [16]byte) string {
	sum := sha256.Sum256(append([]byte("session public id:"), id[:]...))
	return hex.EncodeToString(sum[:16])
}

// PublicID is the session's public id.
func (s Session) PublicID() string { return PublicID(s.ID) }

func sessionID(h string) ([16]byte, bool) {
	if !hexid.Valid(h) {
		return [16]byte{}, false
	}
	return hexid.Prefix(h)
}

// Start starts a new session for u, as Issue does, and records it (its browser, system and address).
func (s *Sessions) Start(ctx context.Context, u *models.User, c Client) (Session, string, error) {
	sess, value, err := s.Issue(u)
	if err != nil {
		return Session{}, "", err
	}
	browser, system := s.agents.Name(c.UserAgent)
	now := s.now()
	row := &models.Session{ID: sess.IDString(), PublicID: sess.PublicID(), UserID: u.ID, Browser: browser, System: system,
		IP: clip(c.IP, 64), CreatedAt: now, LastSeenAt: now, ExpiresAt: sess.Expires}
	if err := models.StartSession(ctx, s.db, row); err != nil {
		return Session{}, "", err
	}
	s.seen.note(sess.ID, now) // its row says it was seen now
	return sess, value, nil
}

func clip(v string, n int) string {
	if len(v) > n {
		return v[:n]
	}
	return v
}

// End ends one session (a logout): on every instance within moments, the user's other sessions
// untouched. A session with no row (one started before sessions had rows) gets one, ended.
func (s *Sessions) End(ctx context.Context, sess Session) error {
	row, err := models.EndSession(ctx, s.db, sess.UserID, sess.PublicID(), s.now())
	if errs.Is(err, errs.NotFound) {
		return s.endUnrecorded(ctx, sess)
	}
	if err != nil {
		return err
	}
	return s.ended1(ctx, sess.UserID, sess.ID, row.ExpiresAt)
}

// endUnrecorded ends a session that has no row of its own (started before this build).
func (s *Sessions) endUnrecorded(ctx context.Context, sess Session) error {
	now := s.now()
	row := &models.Session{ID: sess.IDString(), PublicID: sess.PublicID(), UserID: sess.UserID, CreatedAt: now, LastSeenAt: now,
		ExpiresAt: sess.Expires, EndedAt: &now}
	if err := models.StartSession(ctx, s.db, row); err != nil {
		// Its row exists after all (ended meanwhile): nothing is left to end but in memory.
		s.log.WarnContext(ctx, "session ended without its row", "user_id", sess.UserID, "err", err)
	}
	return s.ended1(ctx, sess.UserID, sess.ID, sess.Expires)
}

// EndPublic ends the user's live session whose public id is publicID; errs.NotFound when the user has
// none such. It answers whether that session was session current (the caller's own).
func (s *Sessions) EndPublic(ctx context.Context, current Session, publicID string) (wasCurrent bool, err error) {
	row, err := models.EndSession(ctx, s.db, current.UserID, publicID, s.now())
	if err != nil {
		return false, err
	}
	id, ok := sessionID(row.ID)
	if !ok {
		return false, errs.New(errs.Internal, "a session row with a bad id")
	}
	return id == current.ID, s.ended1(ctx, current.UserID, id, row.ExpiresAt)
}

// ended1 makes every instance refuse session id until it expires. Past the set's bound (an account
// logged in and out far more than people do), every session of the user ends instead.
func (s *Sessions) ended1(ctx context.Context, userID int64, id [16]byte, expires time.Time) error {
	if s.ended.full() {
		s.log.WarnContext(ctx, "too many sessions ended lately: ending all of a user's", "user_id", userID)
		return s.EndAll(ctx, userID)
	}
	s.ended.add(id, expires)
	msg := endedPrefix + hex.EncodeToString(id[:]) + ":" + strconv.FormatInt(expires.Unix(), 10)
	if err := follow.Publish(ctx, s.rdb, authChannel, msg); err != nil {
		// The other instances still learn it from the database within refreshPeriod.
		s.log.WarnContext(ctx, "session end not published", "user_id", userID, "err", err)
	}
	return nil
}

// applyEnded takes a message "<id>:<expiry>" of a session ended on another instance.
func (s *Sessions) applyEnded(payload string) {
	h, exp, ok := strings.Cut(payload, ":")
	id, idOK := sessionID(h)
	at, err := strconv.ParseInt(exp, 10, 64)
	if !ok || !idOK || err != nil {
		return
	}
	s.ended.add(id, time.Unix(at, 0))
}

// EndOthers ends every session of the user but sess, and answers sess as it goes on, with its new cookie
// value: the user's session version goes up (which ends every other cookie, those with no row too), and
// sess is given the new version, the same id and expiry.
func (s *Sessions) EndOthers(ctx context.Context, sess Session) (Session, string, error) {
	u, err := models.EndOtherSessions(ctx, s.db, sess.UserID, sess.IDString(), s.now())
	if err != nil {
		return Session{}, "", err
	}
	return s.keep(ctx, sess, u)
}

// ChangePassword sets the user's password hash and ends every other session, as EndOthers.
func (s *Sessions) ChangePassword(ctx context.Context, sess Session, hash string) (Session, string, error) {
	u, err := models.ChangePassword(ctx, s.db, sess.UserID, hash, sess.IDString(), s.now())
	if err != nil {
		return Session{}, "", err
	}
	return s.keep(ctx, sess, u)
}

// keep spells sess with the user's new session version (and current role and name), after announcing
// the change.
func (s *Sessions) keep(ctx context.Context, sess Session, u *models.User) (Session, string, error) {
	if err := s.announce(ctx, u); err != nil {
		return Session{}, "", err
	}
	sess.Version, sess.Role, sess.Username = u.SessionVersion, u.Role, u.Username
	return s.encode(sess)
}

// Seen notes that a request came with sess: at most once in seenEvery it takes a write lock, and Run
// writes the notes to the database in batches. It costs a request a read lock and a map look-up.
func (s *Sessions) Seen(sess *Session) {
	if s.seen.due(sess.ID) {
		s.seen.note(sess.ID, s.now())
	}
}

// writeSeen writes the sessions seen every seenFlush until ctx ends, and once more then.
func (s *Sessions) writeSeen(ctx context.Context) {
	t := time.NewTicker(seenFlush)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			last, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			s.flushSeen(last)
			cancel()
			return
		case <-t.C:
			s.flushSeen(ctx)
		}
	}
}

// flushSeen writes the notes taken since the last flush: one statement a minute they were noted in.
func (s *Sessions) flushSeen(ctx context.Context) {
	for minute, ids := range s.seen.take(s.now()) {
		hexes := make([]string, len(ids))
		for i, id := range ids {
			hexes[i] = hex.EncodeToString(id[:])
		}
		if err := models.SessionsSeen(ctx, s.db, time.Unix(minute, 0), hexes); err != nil && ctx.Err() == nil {
			s.log.WarnContext(ctx, "last seen not written", "sessions", len(ids), "err", err)
		}
	}
}

// FlushSeen writes the sessions seen now rather than at the next round (for tests and a graceful stop).
func (s *Sessions) FlushSeen(ctx context.Context) { s.flushSeen(ctx) }
