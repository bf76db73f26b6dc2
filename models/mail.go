package models

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// Mail is one e-mail in the queue (migration 00005): rendered when it was queued, so that every attempt
// sends the same message with the same Message-ID, and a resend is recognisable as one.
type Mail struct {
	ID        int64  `gorm:"primaryKey"`
	MessageID string `gorm:"size:200;not null;uniqueIndex"` // without the angle brackets
	Kind      string `gorm:"size:32;not null"`              // verify_email, password_reset, ... (mail.Kind*)
	UserID    *int64 `gorm:"index"`                         // the account it is about, when there is one
	ToAddr    string `gorm:"size:254;not null"`
	Lang      string `gorm:"size:8;not null"`
	Subject   string `gorm:"size:300;not null"`
	TextBody  string `gorm:"type:text;not null"`
	HTMLBody  string `gorm:"type:text;not null"`
	// State is MailQueued until the relay takes it (MailSent) or the attempts run out (MailFailed).
	State    string    `gorm:"size:16;not null;index:idx_mails_due,priority:1"`
	NextAt   time.Time `gorm:"not null;index:idx_mails_due,priority:2"` // the next attempt, not before
	Attempts int       `gorm:"not null;default:0"`
	// ClaimedUntil is the lease of the worker sending it: past it, a worker that died is presumed dead
	// and another sends the mail again.
	ClaimedUntil *time.Time
	LastError    string `gorm:"type:text;not null;default:''"`
	SentAt       *time.Time
	CreatedAt    time.Time `gorm:"not null;index"`
	UpdatedAt    time.Time `gorm:"not null"`

	// ListUnsubscribe is the link that stops such mails (a reminder's), sent as the List-Unsubscribe
	// header with one-click (RFC 8058); "" for none. Migration 00007.
	ListUnsubscribe string `gorm:"size:500;not null;default:''"`
}

// A mail's states.
const (
	MailQueued = "queued"
	MailSent   = "sent"
	MailFailed = "failed"
)

// EnqueueMails inserts mails, queued and due at once, in db (a transaction's, so that a mail is queued
// with what causes it, or not at all).
func EnqueueMails(ctx context.Context, db *gorm.DB, mails []Mail) error {
	if len(mails) == 0 {
		return nil
	}
	for i := range mails {
		if mails[i].State == "" {
			mails[i].State = MailQueued
		}
	}
	if err := db.WithContext(ctx).CreateInBatches(mails, 500).Error; err != nil {
		return fmt.Errorf("queue %d mails: %w", len(mails), err)
	}
	return nil
}

// ClaimMails takes up to n queued mails that are due and held by no live lease, leasing them until
// now+lease and counting the attempt, in one statement: two workers never claim the same mail (on
// PostgreSQL the rows another worker is claiming are skipped, not waited for).
func ClaimMails(ctx context.Context, db *gorm.DB, now time.Time, lease time.Duration, n int) ([]Mail, error) {
	lock := ""
	if db.Dialector.Name() == "postgres" {
		lock = " FOR UPDATE SKIP LOCKED"
	}
	var out []Mail
	err := db.WithContext(ctx).Raw(`UPDATE mails SET claimed_until = ?, attempts = attempts + 1, updated_at = ?
		WHERE id IN (SELECT id FROM mails WHERE state = ? AND next_at <= ? AND (claimed_until IS NULL OR claimed_until <= ?)
		             ORDER BY next_at, id LIMIT ?`+lock+`)
		RETURNING *`, now.Add(lease), now, MailQueued, now, now, n).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("claim mails: %w", err)
	}
	return out, nil
}

// MarkMailSent records that the relay took mail id.
func MarkMailSent(ctx context.Context, db *gorm.DB, id int64, now time.Time) error {
	err := db.WithContext(ctx).Exec(`UPDATE mails SET state = ?, sent_at = ?, claimed_until = NULL, last_error = '', updated_at = ? WHERE id = ?`,
		MailSent, now, now, id).Error
	if err != nil {
		return fmt.Errorf("mark mail %d sent: %w", id, err)
	}
	return nil
}

// MarkMailRetry puts mail id back in the queue, due at next, with why the attempt failed; give up marks
// it failed instead (no more attempts).
func MarkMailRetry(ctx context.Context, db *gorm.DB, id int64, next time.Time, why string, giveUp bool, now time.Time) error {
	state := MailQueued
	if giveUp {
		state = MailFailed
	}
	if len(why) > 1000 {
		why = why[:1000]
	}
	err := db.WithContext(ctx).Exec(`UPDATE mails SET state = ?, next_at = ?, claimed_until = NULL, last_error = ?, updated_at = ? WHERE id = ?`,
		state, next, why, now, id).Error
	if err != nil {
		return fmt.Errorf("put mail %d back: %w", id, err)
	}
	return nil
}

// RecentMails lists the newest mails, newest first (the demo's outbox).
func RecentMails(ctx context.Context, db *gorm.DB, n int) ([]Mail, error) {
	var out []Mail
	if err := db.WithContext(ctx).Order("id DESC").Limit(n).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("recent mails: %w", err)
	}
	return out, nil
}

// QueuedMails counts the mails waiting to be sent, and the oldest one's creation (zero for none).
func QueuedMails(ctx context.Context, db *gorm.DB) (int64, time.Time, error) {
	var row struct {
		N      int64
		Oldest *time.Time
	}
	err := db.WithContext(ctx).Raw(`SELECT count(*) AS n, min(created_at) AS oldest FROM mails WHERE state = ?`, MailQueued).Scan(&row).Error
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("count queued mails: %w", err)
	}
	if row.Oldest == nil {
		return row.N, time.Time{}, nil
	}
	return row.N, *row.Oldest, nil
}

// ForgetMails deletes the mails queued before before and sent or given up since (by created_at, indexed), and the tokens that expired before it,
// at most limit of each (the worker calls it again while there are more); it answers how many went.
func ForgetMails(ctx context.Context, db *gorm.DB, before time.Time, limit int) (int64, error) {
	res := db.WithContext(ctx).Exec(`DELETE FROM mails WHERE id IN (SELECT id FROM mails WHERE created_at < ? AND state <> ? ORDER BY id LIMIT ?)`,
		before, MailQueued, limit)
	if res.Error != nil {
		return 0, fmt.Errorf("forget mails: %w", res.Error)
	}
	tok := db.WithContext(ctx).Exec(`DELETE FROM tokens WHERE id IN (SELECT id FROM tokens WHERE expires_at < ? ORDER BY id LIMIT ?)`, before, limit)
	if tok.Error != nil {
		return 0, fmt.Errorf("forget tokens: %w", tok.Error)
	}
	return res.RowsAffected + tok.RowsAffected, nil
}
