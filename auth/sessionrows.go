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
// ended lately. The set holds an id until the session would have expired. A user has at most maxLive
// live sessions: a login past that ends the oldest, as a logout would.
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
// When u has as many live sessions as it may, the oldest end first (each on every instance, as a
// logout), so that one account's logins cannot pile up sessions.
func (s *Sessions) Start(ctx context.Context, u *models.User, c Client) (Session, string, error) {
	now := s.now()
	old, err := models.EndOldestSessions(ctx, s.db, u.ID, s.maxLive-1, now)
	if err != nil {
		return Session{}, "", err
	}
	for _, e := range old {
		id, ok := sessionID(e.ID)
		if !ok {
			continue
		}
		bumped, err := s.ended1(ctx, u.ID, id, e.ExpiresAt, e.Version)
		if err != nil {
			return Session{}, "", err
		}
		if bumped != nil {
			// Every session of u ended by its version: the new one carries the new version.
			fresh := *u
			fresh.SessionVersion, fresh.Role = bumped.SessionVersion, bumped.Role
			u = &fresh
			break
		}
	}
	sess, value, err := s.Issue(u)
	if err != nil {
		return Session{}, "", err
	}
	browser, system := s.agents.Name(c.UserAgent)
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
	row, _, err := models.EndSession(ctx, s.db, sess.UserID, sess.PublicID(), s.now())
	if errs.Is(err, errs.NotFound) {
		return s.endUnrecorded(ctx, sess)
	}
	if err != nil {
		return err
	}
	_, err = s.ended1(ctx, sess.UserID, sess.ID, row.ExpiresAt, sess.Version)
	return err
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
	_, err := s.ended1(ctx, sess.UserID, sess.ID, sess.Expires, sess.Version)
	return err
}

// EndPublic ends the user's live session whose public id is publicID; errs.NotFound when the user has
// none such. It answers whether the caller's own session (current) ended with it.
func (s *Sessions) EndPublic(ctx context.Context, current Session, publicID string) (wasCurrent bool, err error) {
	row, version, err := models.EndSession(ctx, s.db, current.UserID, publicID, s.now())
	if err != nil {
		return false, err
	}
	id, ok := sessionID(row.ID)
	if !ok {
		return false, errs.New(errs.Internal, "a session row with a bad id")
	}
	// Past the user's bound, every session of the user ended, the caller's too.
	bumped, err := s.ended1(ctx, current.UserID, id, row.ExpiresAt, version)
	return id == current.ID || bumped != nil, err
}

// ended1 makes every instance refuse the user's session id (of at most version) until it expires. Past
// the user's own bound in the set (an account that ended far more sessions one at a time than people
// do), every session of that user ends instead, by the session version, and the user's ids are dropped;
// it then answers the user as now. Nobody else's sessions are touched either way.
func (s *Sessions) ended1(ctx context.Context, userID int64, id [16]byte, expires time.Time, version int64) (*models.User, error) {
	if s.ended.count(userID) >= s.maxEndedPerUser() {
		s.log.WarnContext(ctx, "a user ended many sessions lately: ending all of that user's", "user_id", userID)
		return s.endAll(ctx, userID)
	}
	s.ended.add(userID, id, expires, version)
	msg := endedPrefix + strconv.FormatInt(userID, 10) + ":" + hex.EncodeToString(id[:]) + ":" +
		strconv.FormatInt(expires.Unix(), 10) + ":" + strconv.FormatInt(version, 10)
	if err := follow.Publish(ctx, s.rdb, authChannel, msg); err != nil {
		// The other instances still learn it from the database within refreshPeriod.
		s.log.WarnContext(ctx, "session end not published", "user_id", userID, "err", err)
	}
	return nil, nil
}

// applyEnded takes a message "<user id>:<id>:<expiry>:<version>" of a session ended on another instance.
// (The format before it, "<id>:<expiry>", named no user: an instance of the previous build still
// learns of such an end from the database within refreshPeriod.)
func (s *Sessions) applyEnded(payload string) {
	parts := strings.Split(payload, ":")
	if len(parts) != 4 {
		return
	}
	userID, err1 := strconv.ParseInt(parts[0], 10, 64)
	id, idOK := sessionID(parts[1])
	at, err2 := strconv.ParseInt(parts[2], 10, 64)
	version, err3 := strconv.ParseInt(parts[3], 10, 64)
	if err1 != nil || !idOK || err2 != nil || err3 != nil {
		return
	}
	s.ended.add(userID, id, time.Unix(at, 0), version)
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
