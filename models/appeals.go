package models

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"

	"seckill/errs"
)

// Appeal states: a shopper in a queue sale's line asks a person to look (open); an admin answers it
// (answered). A shadowed shopper cannot tell they are shadowed, so every entrant may appeal.
const (
	AppealOpen     = "open"
	AppealAnswered = "answered"
)

// appealMoves is the appeal's state machine: the one move there is, and from where.
var appealMoves = map[string]map[string]string{
	AppealOpen: {"answer": AppealAnswered},
}

// MaxAppealText is the most characters an appeal's message or its answer may have.
const MaxAppealText = 500

// Appeal is a shopper's request, while in an item's line, that a person look at their place; the admin's
// answer is shown on the item page. Appeals are never in the public report.
type Appeal struct {
	ID         int64   `gorm:"primaryKey"`
	UserID     int64   `gorm:"not null;index:idx_appeals_user_item,priority:1"`
	ItemID     int64   `gorm:"not null;index:idx_appeals_user_item,priority:2;index"`
	Message    string  `gorm:"type:text;not null"`
	State      string  `gorm:"size:16;not null;index;default:open"`
	Answer     *string `gorm:"type:text"`
	AnsweredBy *int64  // the admin who answered
	AnsweredAt *time.Time
	CreatedAt  time.Time `gorm:"not null;index"`
	UpdatedAt  time.Time `gorm:"not null"`
}

// AppealWithUser is an appeal with its author's name, as the admins read it.
type AppealWithUser struct {
	Appeal
	Username string
}

var (
	errAppealOpen   = errs.New(errs.AppealOpen, "you have asked already: a person will look at it and answer here")
	errNoSuchAppeal = errs.New(errs.NotFound, "no such appeal")
	errAppealState  = errs.Say(errs.Conflict, "appeal_answered")
)

// appealText trims a message or an answer and says what is wrong with it: empty, too long, or holding
// control characters (line breaks are welcome).
func appealText(field string, v *string) error {
	*v = strings.TrimSpace(*v)
	switch {
	case strings.TrimFunc(*v, invisible) == "": // nothing a person can read: spaces, zero-width characters
		return errs.Bad(errs.W(field, "empty"))
	case utf8.RuneCountInString(*v) > MaxAppealText:
		return errs.Bad(errs.W(field, "max_chars", MaxAppealText))
	case BadText(*v, true):
		return errs.Bad(errs.W(field, "control_chars"))
	}
	return nil
}

// CheckAppealMessage checks an appeal's message before anything else is asked of the request.
func CheckAppealMessage(message *string) error { return appealText("message", message) }

// CreateAppeal records userID's appeal about itemID. The user's row is locked while it looks for an open
// appeal, so that two appeals sent at once make one (a second: 409 appeal_open).
func CreateAppeal(ctx context.Context, db *gorm.DB, userID, itemID int64, message string, now time.Time) (*Appeal, error) {
	if err := CheckAppealMessage(&message); err != nil {
		return nil, err
	}
	a := Appeal{UserID: userID, ItemID: itemID, Message: message, State: AppealOpen, CreatedAt: now, UpdatedAt: now}
	err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var u User
		if err := tx.Clauses(lockForUpdate).Select("id").Where("id = ?", userID).Take(&u).Error; err != nil {
			return fmt.Errorf("appeal: the user: %w", err)
		}
		var open int64
		if err := tx.Model(&Appeal{}).Where("user_id = ? AND item_id = ? AND state = ?", userID, itemID, AppealOpen).Count(&open).Error; err != nil {
			return fmt.Errorf("appeal: open ones: %w", err)
		}
		if open > 0 {
			return errAppealOpen
		}
		return tx.Create(&a).Error
	})
	if err != nil {
		return nil, err
	}
	return &a, nil
}

// LatestAppeal answers userID's newest appeal about itemID (not_found when there is none).
func LatestAppeal(ctx context.Context, db *gorm.DB, userID, itemID int64) (*Appeal, error) {
	var a Appeal
	err := db.WithContext(ctx).Where("user_id = ? AND item_id = ?", userID, itemID).Order("id DESC").Take(&a).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, errNoSuchAppeal
	}
	if err != nil {
		return nil, fmt.Errorf("latest appeal: %w", err)
	}
	return &a, nil
}

// Appeals answers a page of the appeals in state, newest first, with their authors' names, and how many
// there are in that state.
func Appeals(ctx context.Context, db *gorm.DB, state string, limit, offset int) ([]AppealWithUser, int64, error) {
	db = db.WithContext(ctx)
	var total int64
	if err := db.Model(&Appeal{}).Where("state = ?", state).Count(&total).Error; err != nil {
		return nil, 0, fmt.Errorf("appeals: %w", err)
	}
	var rows []AppealWithUser
	err := db.Table("appeals").Select("appeals.*, users.username").Joins("JOIN users ON users.id = appeals.user_id").
		Where("appeals.state = ?", state).Order("appeals.id DESC").Limit(limit).Offset(offset).Scan(&rows).Error
	if err != nil {
		return nil, 0, fmt.Errorf("appeals: %w", err)
	}
	return rows, total, nil
}

// OpenAppealsOfItem answers the open appeals about itemID, newest first, with their authors' names: the
// admin's page of an item's flagged clusters shows which come from a cluster's accounts.
func OpenAppealsOfItem(ctx context.Context, db *gorm.DB, itemID int64) ([]AppealWithUser, error) {
	var rows []AppealWithUser
	err := db.WithContext(ctx).Table("appeals").Select("appeals.*, users.username").Joins("JOIN users ON users.id = appeals.user_id").
		Where("appeals.item_id = ? AND appeals.state = ?", itemID, AppealOpen).Order("appeals.id DESC").Limit(1000).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("open appeals of item %d: %w", itemID, err)
	}
	return rows, nil
}

type appealAudit struct {
	ItemID int64  `json:"item_id"`
	State  string `json:"state"`
	Answer string `json:"answer,omitempty"`
}

// AnswerAppeal answers an open appeal as who, audited (appeal.answer); the author reads it on the item page.
func AnswerAppeal(ctx context.Context, db *gorm.DB, who Actor, id int64, answer string, now time.Time) (*AppealWithUser, error) {
	if err := appealText("answer", &answer); err != nil {
		return nil, err
	}
	var out AppealWithUser
	err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var a Appeal
		err := tx.Clauses(lockForUpdate).Where("id = ?", id).Take(&a).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return errNoSuchAppeal
		}
		if err != nil {
			return fmt.Errorf("answer appeal: %w", err)
		}
		next, ok := appealMoves[a.State]["answer"]
		if !ok {
			return errAppealState
		}
		before := appealAudit{a.ItemID, a.State, ""}
		a.State, a.Answer, a.AnsweredBy, a.AnsweredAt, a.UpdatedAt = next, &answer, &who.ID, &now, now
		if err := tx.Model(&Appeal{}).Where("id = ?", a.ID).Updates(map[string]any{"state": a.State, "answer": answer,
			"answered_by": who.ID, "answered_at": now, "updated_at": now}).Error; err != nil {
			return fmt.Errorf("answer appeal: %w", err)
		}
		var u User
		if err := tx.Select("username").Where("id = ?", a.UserID).Take(&u).Error; err != nil {
			return fmt.Errorf("answer appeal: its author: %w", err)
		}
		out = AppealWithUser{Appeal: a, Username: u.Username}
		return Audit(tx, who, "appeal.answer", fmt.Sprintf("appeal:%d", a.ID), before, appealAudit{a.ItemID, a.State, answer}, now)
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// CountAppeals answers how many appeals are in state.
func CountAppeals(ctx context.Context, db *gorm.DB, state string) (int64, error) {
	var n int64
	if err := db.WithContext(ctx).Model(&Appeal{}).Where("state = ?", state).Count(&n).Error; err != nil {
		return 0, fmt.Errorf("count appeals: %w", err)
	}
	return n, nil
}
