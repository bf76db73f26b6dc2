package models

import (
	"context"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"

	"seckill/errs"
)

// Session is one login: where a person is logged in (a browser on a system, from an address) and
// since when, until it expires or ends. ID is the session id the signed cookie carries, in hex; the API
// shows PublicID, a hash of it. The check of a request never reads this table: ended sessions reach
// every instance's memory (auth.Sessions).
type Session struct {
	ID         string     `gorm:"primaryKey;size:32;not null"`
	PublicID   string     `gorm:"size:32;not null;uniqueIndex:idx_sessions_public_id"`
	UserID     int64      `gorm:"not null;index:idx_sessions_user_id"`
	Browser    string     `gorm:"size:64;not null"`
	System     string     `gorm:"size:64;not null"`
	IP         string     `gorm:"column:ip;size:64;not null"`
	CreatedAt  time.Time  `gorm:"not null"`
	LastSeenAt time.Time  `gorm:"not null"`
	ExpiresAt  time.Time  `gorm:"not null"`
	EndedAt    *time.Time `gorm:"index:idx_sessions_ended_at"`
}

// maxListedSessions bounds the sessions a list shows: a person has a few; an account logged in
// thousands of times (a script) is shown its newest.
const maxListedSessions = 100

// StartSession records a new login, and forgets the user's sessions that expired (each login tidies
// its own account's rows, so that they do not pile up).
func StartSession(ctx context.Context, db *gorm.DB, s *Session) error {
	db = db.WithContext(ctx)
	if err := db.Exec("DELETE FROM sessions WHERE user_id = ? AND expires_at < ?", s.UserID, s.CreatedAt).Error; err != nil {
		return fmt.Errorf("tidy the sessions of user %d: %w", s.UserID, err)
	}
	if err := db.Create(s).Error; err != nil {
		return fmt.Errorf("record a session of user %d: %w", s.UserID, err)
	}
	return nil
}

// LiveSessionsOf answers the user's sessions that have neither ended nor expired, newest first.
func LiveSessionsOf(ctx context.Context, db *gorm.DB, userID int64, now time.Time) ([]Session, error) {
	var out []Session
	err := db.WithContext(ctx).Where("user_id = ? AND ended_at IS NULL AND expires_at > ?", userID, now).
		Order("created_at DESC, id").Limit(maxListedSessions).Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("sessions of user %d: %w", userID, err)
	}
	return out, nil
}

// errNoSuchSession says which thing was not found, in the reader's language (not the generic not_found).
var errNoSuchSession = errs.Say(errs.NotFound, "no_such_session")

// EndSession ends one live session of the user, named by its public id, and answers it (its id and
// expiry are what every instance must refuse until then) with the user's session version as the end
// found it (the session's own cannot be higher); errs.NotFound when the user has no such live session.
func EndSession(ctx context.Context, db *gorm.DB, userID int64, publicID string, now time.Time) (*Session, int64, error) {
	var s Session
	var version int64
	err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		err := tx.Where("public_id = ? AND user_id = ? AND ended_at IS NULL AND expires_at > ?", publicID, userID, now).Take(&s).Error
		if err == gorm.ErrRecordNotFound {
			return errNoSuchSession
		}
		if err != nil {
			return fmt.Errorf("session of user %d: %w", userID, err)
		}
		res := tx.Exec("UPDATE sessions SET ended_at = ? WHERE id = ? AND ended_at IS NULL", now, s.ID)
		if res.Error != nil {
			return fmt.Errorf("end session of user %d: %w", userID, res.Error)
		}
		if res.RowsAffected == 0 {
			return errNoSuchSession // ended meanwhile
		}
		if err := tx.Raw("SELECT session_version FROM users WHERE id = ?", userID).Scan(&version).Error; err != nil {
			return fmt.Errorf("session version of user %d: %w", userID, err)
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	s.EndedAt = &now
	return &s, version, nil
}

// EndOldestSessions ends the user's live sessions but the newest keep, and answers those it ended (the
// oldest first) with the user's session version as it found it: a login makes room for itself so that
// an account has a bounded number of live sessions.
func EndOldestSessions(ctx context.Context, db *gorm.DB, userID int64, keep int, now time.Time) ([]EndedSession, error) {
	var out []EndedSession
	err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		// The user's live sessions are few (this bound keeps them so): read them, newest first.
		var live []EndedSession
		err := tx.Raw(`SELECT id, user_id, expires_at, created_at FROM sessions
			WHERE user_id = ? AND ended_at IS NULL AND expires_at > ? ORDER BY created_at DESC, id DESC`, userID, now).Scan(&live).Error
		if err != nil {
			return fmt.Errorf("live sessions of user %d: %w", userID, err)
		}
		if len(live) <= keep {
			return nil
		}
		out = live[keep:]
		ids := make([]string, len(out))
		for i, e := range out {
			ids[i] = e.ID
		}
		if err := tx.Exec("UPDATE sessions SET ended_at = ? WHERE id IN ? AND ended_at IS NULL", now, ids).Error; err != nil {
			return fmt.Errorf("end the oldest sessions of user %d: %w", userID, err)
		}
		var version int64
		if err := tx.Raw("SELECT session_version FROM users WHERE id = ?", userID).Scan(&version).Error; err != nil {
			return fmt.Errorf("session version of user %d: %w", userID, err)
		}
		for i := range out {
			out[i].Version = version
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b EndedSession) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, nil
}

// EndSessionsOf marks every live session of the user ended but keep's (its id; "" keeps none): what a
// change of the session version (auth's EndAll, a block, a password change) has ended already, written
// down so that the list agrees.
func EndSessionsOf(ctx context.Context, db *gorm.DB, userID int64, keep string, now time.Time) error {
	err := db.WithContext(ctx).Exec("UPDATE sessions SET ended_at = ? WHERE user_id = ? AND ended_at IS NULL AND id <> ?",
		now, userID, keep).Error
	if err != nil {
		return fmt.Errorf("end the sessions of user %d: %w", userID, err)
	}
	return nil
}

// EndOtherSessions ends every session of the user but keep's, in one transaction: the session version
// goes up (which ends every cookie of the user, those from before sessions had rows too; the caller
// gives keep's browser a cookie of the new version), and the rows say so. It answers the user as now.
func EndOtherSessions(ctx context.Context, db *gorm.DB, userID int64, keep string, now time.Time) (*User, error) {
	return changeSessions(ctx, db, userID, keep, "", now)
}

// ChangePassword sets the user's password hash and ends every other session (as EndOtherSessions), in
// one transaction.
func ChangePassword(ctx context.Context, db *gorm.DB, userID int64, hash, keep string, now time.Time) (*User, error) {
	if hash == "" {
		return nil, fmt.Errorf("change password of user %d: no hash", userID)
	}
	return changeSessions(ctx, db, userID, keep, hash, now)
}

func changeSessions(ctx context.Context, db *gorm.DB, userID int64, keep, hash string, now time.Time) (*User, error) {
	var u *User
	err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		// A blocked account's session that an instance still takes (it has not heard of the block yet)
		// must not get a cookie of the new version, which every instance would then take.
		var blocked int64
		if err := tx.Raw("SELECT count(*) FROM users WHERE id = ? AND blocked_at IS NOT NULL", userID).Scan(&blocked).Error; err != nil {
			return fmt.Errorf("end the other sessions of user %d: %w", userID, err)
		}
		if blocked > 0 {
			return errs.New(errs.Unauthenticated, "log in first")
		}
		change := map[string]any{"session_version": gorm.Expr("session_version + 1"), "auth_changed_at": now, "updated_at": now}
		if hash != "" {
			change["password_hash"] = hash
		}
		res := tx.Model(&User{}).Where("id = ?", userID).Updates(change)
		if res.Error != nil {
			return fmt.Errorf("end the other sessions of user %d: %w", userID, res.Error)
		}
		if res.RowsAffected == 0 {
			return errs.New(errs.NotFound, "no such user")
		}
		if err := EndSessionsOf(ctx, tx, userID, keep, now); err != nil {
			return err
		}
		var err error
		u, err = UserByID(ctx, tx, userID)
		return err
	})
	return u, err
}

// EndedSession is a session ended one at a time, whose, until when it would have lasted, and the user's
// session version when it was read (the session's own cannot be higher).
type EndedSession struct {
	ID        string
	UserID    int64
	ExpiresAt time.Time
	CreatedAt time.Time
	Version   int64
}

// SessionsEndedSince answers the sessions ended at or after since that have not expired by now.
func SessionsEndedSince(ctx context.Context, db *gorm.DB, since, now time.Time) ([]EndedSession, error) {
	var out []EndedSession
	err := db.WithContext(ctx).Raw(`SELECT s.id, s.user_id, s.expires_at, s.created_at, u.session_version AS version
		FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.ended_at >= ? AND s.expires_at > ?`, since, now).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("sessions ended since %s: %w", since.Format(time.RFC3339), err)
	}
	return out, nil
}

// maxTouchedAtOnce bounds the ids of one statement of SessionsSeen.
const maxTouchedAtOnce = 500

// SessionsSeen writes that the sessions ids were seen at: one statement per few hundred.
func SessionsSeen(ctx context.Context, db *gorm.DB, at time.Time, ids []string) error {
	for len(ids) > 0 {
		n := min(len(ids), maxTouchedAtOnce)
		err := db.WithContext(ctx).Exec("UPDATE sessions SET last_seen_at = ? WHERE id IN ? AND last_seen_at < ?", at, ids[:n], at).Error
		if err != nil {
			return fmt.Errorf("sessions seen: %w", err)
		}
		ids = ids[n:]
	}
	return nil
}
