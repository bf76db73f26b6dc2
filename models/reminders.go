package models

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// Reminder is a shopper's wish to be mailed about an approved sale (migration 00007): when its line
// opens (a queue sale) and a few minutes before it starts, in Lang, the language the shopper used when
// asking. Each moment's mail is marked sent in the transaction that queues it.
type Reminder struct {
	ID             int64  `gorm:"primaryKey"`
	UserID         int64  `gorm:"not null;uniqueIndex:idx_reminders_user_activity,priority:1"`
	ActivityID     int64  `gorm:"not null;uniqueIndex:idx_reminders_user_activity,priority:2;index"`
	Lang           string `gorm:"size:8;not null"`
	LineOpenSentAt *time.Time
	StartSentAt    *time.Time
	CreatedAt      time.Time `gorm:"not null"`
}

// The moments a reminder is mailed at, each the column that says it was.
const (
	RemindLineOpen = "line_open_sent_at" // a queue sale's waiting room opens
	RemindStart    = "start_sent_at"     // the sale starts in a few minutes
)

// AddReminder records that user wants reminding of activity, in lang; created is false when the user
// had asked already (nothing changes then, the first language stays).
func AddReminder(ctx context.Context, db *gorm.DB, userID, activityID int64, lang string, now time.Time) (created bool, err error) {
	res := db.WithContext(ctx).Exec(`INSERT INTO reminders (user_id, activity_id, lang, created_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (user_id, activity_id) DO NOTHING`, userID, activityID, lang, now)
	if res.Error != nil {
		return false, fmt.Errorf("add reminder: %w", res.Error)
	}
	return res.RowsAffected == 1, nil
}

// DeleteReminder forgets user's reminder of activity, whatever it had sent, and its mails queued and not
// yet sent (a round queues a few seconds' worth ahead); none is no error.
func DeleteReminder(ctx context.Context, db *gorm.DB, userID, activityID int64) error {
	return db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Exec(`DELETE FROM reminders WHERE user_id = ? AND activity_id = ?`, userID, activityID).Error; err != nil {
			return fmt.Errorf("delete reminder: %w", err)
		}
		// A reminder's mail carries its unsubscribe link, /unsubscribe?token={user}.{activity}.{mac}.
		err := tx.Exec(`DELETE FROM mails WHERE user_id = ? AND state = ? AND list_unsubscribe LIKE ?`,
			userID, MailQueued, fmt.Sprintf("%%token=%d.%d.%%", userID, activityID)).Error
		if err != nil {
			return fmt.Errorf("delete a reminder's queued mails: %w", err)
		}
		return nil
	})
}

// CancelEndedReminders deletes the reminder mails queued and not yet sent of sales ended early (or no
// longer approved): a stop reaches the mails a round queued ahead. It answers how many it deleted.
func CancelEndedReminders(ctx context.Context, db *gorm.DB) (int64, error) {
	res := db.WithContext(ctx).Exec(`DELETE FROM mails WHERE state = ? AND list_unsubscribe <> '' AND EXISTS (
		SELECT 1 FROM activities a WHERE (a.ended_early OR a.state <> ?) AND mails.list_unsubscribe LIKE '%token=%.' || a.id || '.%')`,
		MailQueued, ActivityApproved)
	if res.Error != nil {
		return 0, fmt.Errorf("cancel the reminders of ended sales: %w", res.Error)
	}
	return res.RowsAffected, nil
}

// ReminderOfSale is a reminder with its sale, as its shopper sees it.
type ReminderOfSale struct {
	Reminder
	Name         string
	State        string
	SaleMode     string
	StartsAt     time.Time
	EndsAt       time.Time
	QueueOpensAt *time.Time
	EndedEarly   bool
}

// maxReminders bounds the list a shopper sees: far more sales than anyone waits for at once.
const maxReminders = 200

// RemindersOf lists user's reminders of sales that have not ended, soonest first. A sale ended early (an
// admin's stop, before or after its start) is not coming: it is not listed, as its calendar is not served.
func RemindersOf(ctx context.Context, db *gorm.DB, userID int64, now time.Time) ([]ReminderOfSale, error) {
	var out []ReminderOfSale
	err := db.WithContext(ctx).Raw(`SELECT r.*, a.name, a.state, a.sale_mode, a.starts_at, a.ends_at, a.queue_opens_at, a.ended_early
		FROM reminders r JOIN activities a ON a.id = r.activity_id
		WHERE r.user_id = ? AND a.state = ? AND NOT a.ended_early AND a.ends_at > ?
		ORDER BY a.starts_at, r.id LIMIT ?`, userID, ActivityApproved, now, maxReminders).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("reminders of user %d: %w", userID, err)
	}
	return out, nil
}

// ReminderOf is user's reminder of activity with its sale; found is false when there is none.
func ReminderOf(ctx context.Context, db *gorm.DB, userID, activityID int64) (r ReminderOfSale, found bool, err error) {
	var out []ReminderOfSale
	err = db.WithContext(ctx).Raw(`SELECT r.*, a.name, a.state, a.sale_mode, a.starts_at, a.ends_at, a.queue_opens_at, a.ended_early
		FROM reminders r JOIN activities a ON a.id = r.activity_id
		WHERE r.user_id = ? AND r.activity_id = ?`, userID, activityID).Scan(&out).Error
	if err != nil || len(out) == 0 {
		if err != nil {
			err = fmt.Errorf("reminder of user %d: %w", userID, err)
		}
		return r, false, err
	}
	return out[0], true, nil
}

// RemindedSale is a sale that still has reminders to mail, and how many of each moment are left to mail
// (to verified addresses) and were mailed.
type RemindedSale struct {
	ID           int64
	Name         string
	SaleMode     string
	StartsAt     time.Time
	QueueOpensAt *time.Time
	OpenLeft     int64
	OpenSent     int64
	StartLeft    int64
	StartSent    int64
}

// RemindedSales lists the approved sales, running (not paused, not ended early) and not started by now,
// that have reminders, with their counts. A stopped sale is not among them: its reminders wait, and
// go nowhere once it has ended.
func RemindedSales(ctx context.Context, db *gorm.DB, now time.Time) ([]RemindedSale, error) {
	var out []RemindedSale
	err := db.WithContext(ctx).Raw(`SELECT a.id, a.name, a.sale_mode, a.starts_at, a.queue_opens_at,
		  SUM(CASE WHEN r.line_open_sent_at IS NULL AND u.email_verified_at IS NOT NULL THEN 1 ELSE 0 END) AS open_left,
		  SUM(CASE WHEN r.line_open_sent_at IS NOT NULL THEN 1 ELSE 0 END) AS open_sent,
		  SUM(CASE WHEN r.start_sent_at IS NULL AND u.email_verified_at IS NOT NULL THEN 1 ELSE 0 END) AS start_left,
		  SUM(CASE WHEN r.start_sent_at IS NOT NULL THEN 1 ELSE 0 END) AS start_sent
		FROM reminders r JOIN activities a ON a.id = r.activity_id JOIN users u ON u.id = r.user_id
		WHERE a.state = ? AND a.paused_at IS NULL AND NOT a.ended_early AND a.starts_at > ?
		GROUP BY a.id, a.name, a.sale_mode, a.starts_at, a.queue_opens_at
		ORDER BY a.starts_at, a.id`, ActivityApproved, now).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("reminded sales: %w", err)
	}
	return out, nil
}

// DueReminder is a reminder to mail now, with its shopper's address.
type DueReminder struct {
	ID       int64
	UserID   int64
	Lang     string
	Email    string
	Username string
}

// ClaimReminders takes up to n of activity's reminders not yet mailed for moment (RemindLineOpen or
// RemindStart) whose shopper has a verified address, locking them for tx: on PostgreSQL a reminder
// another worker holds is skipped, not waited for. Mark them in the same tx (MarkReminders) with the
// mails queued.
func ClaimReminders(ctx context.Context, tx *gorm.DB, activityID int64, moment string, n int) ([]DueReminder, error) {
	col, err := momentColumn(moment)
	if err != nil {
		return nil, err
	}
	lock := ""
	if tx.Dialector.Name() == "postgres" {
		lock = " FOR UPDATE OF r SKIP LOCKED"
	}
	var out []DueReminder
	err = tx.WithContext(ctx).Raw(`SELECT r.id, r.user_id, r.lang, u.email, u.username
		FROM reminders r JOIN users u ON u.id = r.user_id
		WHERE r.activity_id = ? AND r.`+col+` IS NULL AND u.email_verified_at IS NOT NULL AND u.email IS NOT NULL AND u.blocked_at IS NULL
		ORDER BY r.id LIMIT ?`+lock, activityID, n).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("claim reminders of activity %d: %w", activityID, err)
	}
	return out, nil
}

// MarkReminders records that the reminders ids were mailed for moment at now; it answers how many it
// marked (a reminder marked already is not marked again).
func MarkReminders(ctx context.Context, tx *gorm.DB, moment string, ids []int64, now time.Time) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	var res *gorm.DB
	switch moment {
	case RemindLineOpen:
		res = tx.WithContext(ctx).Exec(`UPDATE reminders SET line_open_sent_at = ? WHERE id IN ? AND line_open_sent_at IS NULL`, now, ids)
	case RemindStart:
		res = tx.WithContext(ctx).Exec(`UPDATE reminders SET start_sent_at = ? WHERE id IN ? AND start_sent_at IS NULL`, now, ids)
	default:
		return 0, fmt.Errorf("no reminder moment %q", moment)
	}
	if res.Error != nil {
		return 0, fmt.Errorf("mark reminders: %w", res.Error)
	}
	return res.RowsAffected, nil
}

// SendReminders claims up to n of activity's reminders due for moment (ClaimReminders), hands them to
// queue, which queues their mails in tx, and marks them sent at now, in one transaction: a reminder's
// mail is queued and marked together or neither. It answers how many it sent (0: none is left that
// another worker does not hold).
func SendReminders(ctx context.Context, db *gorm.DB, activityID int64, moment string, n int, now time.Time,
	queue func(tx *gorm.DB, due []DueReminder) error) (int, error) {
	sent := 0
	err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		due, err := ClaimReminders(ctx, tx, activityID, moment, n)
		if err != nil || len(due) == 0 {
			return err
		}
		if err := queue(tx, due); err != nil {
			return err
		}
		ids := make([]int64, len(due))
		for i, d := range due {
			ids[i] = d.ID
		}
		if _, err := MarkReminders(ctx, tx, moment, ids, now); err != nil {
			return err
		}
		sent = len(due)
		return nil
	})
	return sent, err
}

func momentColumn(moment string) (string, error) {
	if moment != RemindLineOpen && moment != RemindStart {
		return "", fmt.Errorf("no reminder moment %q", moment)
	}
	return moment, nil
}

// FirstItemOf is the id of activity's first item (0 when it has none): where a reminder's link leads.
func FirstItemOf(ctx context.Context, db *gorm.DB, activityID int64) (int64, error) {
	var ids []int64
	if err := db.WithContext(ctx).Raw(`SELECT id FROM items WHERE activity_id = ? ORDER BY id LIMIT 1`, activityID).Scan(&ids).Error; err != nil {
		return 0, fmt.Errorf("first item of activity %d: %w", activityID, err)
	}
	if len(ids) == 0 {
		return 0, nil
	}
	return ids[0], nil
}

// LastMailLang is the language of the newest mail queued for user ("" for none): a mail that no request
// causes (a receipt) speaks the language the person's last mail did.
func LastMailLang(ctx context.Context, db *gorm.DB, userID int64) (string, error) {
	var langs []string
	if err := db.WithContext(ctx).Raw(`SELECT lang FROM mails WHERE user_id = ? ORDER BY id DESC LIMIT 1`, userID).Scan(&langs).Error; err != nil {
		return "", fmt.Errorf("last mail language of user %d: %w", userID, err)
	}
	if len(langs) == 0 {
		return "", nil
	}
	return langs[0], nil
}

// ReceiptOf is what a paid order's receipt says, with its buyer's address (Email "" when the buyer has
// no verified one).
type ReceiptOf struct {
	UserID     int64
	Username   string
	Email      string
	OrderNo    string
	ItemName   string
	PriceCents int64
	PaidAt     *time.Time
}

// Receipt reads order id's receipt in db (the transaction that marks it paid).
func Receipt(ctx context.Context, db *gorm.DB, orderID int64) (*ReceiptOf, error) {
	var out []ReceiptOf
	err := db.WithContext(ctx).Raw(`SELECT o.user_id, u.username, CASE WHEN u.email_verified_at IS NULL THEN '' ELSE COALESCE(u.email, '') END AS email,
		  o.order_no, i.name AS item_name, o.price_cents, o.paid_at
		FROM orders o JOIN users u ON u.id = o.user_id JOIN items i ON i.id = o.item_id WHERE o.id = ?`, orderID).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("receipt of order %d: %w", orderID, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("receipt of order %d: no such order", orderID)
	}
	return &out[0], nil
}
