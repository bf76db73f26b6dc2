package models

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"

	"seckill/errs"
)

// AuditLog records one merchant or admin action: who, what, on what, the state before and after, when.
type AuditLog struct {
	ID        int64     `gorm:"primaryKey"`
	ActorID   int64     `gorm:"not null;index"`
	Actor     string    `gorm:"size:32;not null"`
	Action    string    `gorm:"size:40;not null"`
	Target    string    `gorm:"size:60;not null;index"`
	Before    string    `gorm:"type:text;not null;default:''"`
	After     string    `gorm:"type:text;not null;default:''"`
	CreatedAt time.Time `gorm:"not null;index"`
}

// Actor is who does an action.
type Actor struct {
	ID       int64
	Username string
}

// Audit writes an audit row in tx; before and after are stored as JSON (nil stays empty).
func Audit(tx *gorm.DB, who Actor, action, target string, before, after any, now time.Time) error {
	enc := func(v any) string {
		if v == nil {
			return ""
		}
		b, _ := json.Marshal(v)
		return string(b)
	}
	row := AuditLog{ActorID: who.ID, Actor: who.Username, Action: action, Target: target, Before: enc(before), After: enc(after), CreatedAt: now}
	if err := tx.Create(&row).Error; err != nil {
		return fmt.Errorf("audit %s: %w", action, err)
	}
	return nil
}

// AuditTrail lists the newest audit rows, at most limit.
func AuditTrail(ctx context.Context, db *gorm.DB, limit int) ([]AuditLog, error) {
	var rows []AuditLog
	if err := db.WithContext(ctx).Order("id DESC").Limit(limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("audit trail: %w", err)
	}
	return rows, nil
}

// Activity actions, and the one table of which state each may start from and where it leads.
const (
	ActEdit    = "edit"
	ActSubmit  = "submit"
	ActApprove = "approve"
	ActReject  = "reject"
)

var transitions = map[string]struct {
	from []string
	to   string // "" keeps the state
}{
	ActEdit:    {from: []string{ActivityDraft, ActivityRejected}},
	ActSubmit:  {from: []string{ActivityDraft, ActivityRejected}, to: ActivityPendingReview},
	ActApprove: {from: []string{ActivityPendingReview}, to: ActivityApproved},
	ActReject:  {from: []string{ActivityPendingReview}, to: ActivityRejected},
}

// Next answers the state an action leads an activity to from state, or errs activity_state when the
// action is not allowed there: draft → pending_review → approved | rejected, rejected → pending_review;
// only draft and rejected activities can be changed.
func Next(state, action string) (string, error) {
	t, ok := transitions[action]
	if !ok {
		return "", fmt.Errorf("unknown activity action %q", action)
	}
	for _, f := range t.from {
		if f == state {
			if t.to == "" {
				return state, nil
			}
			return t.to, nil
		}
	}
	return "", errs.Newf(errs.ActivityState, "a %s activity cannot be %s", strings.ReplaceAll(state, "_", " "), pastTense[action])
}

var pastTense = map[string]string{ActEdit: "changed", ActSubmit: "submitted", ActApprove: "approved", ActReject: "rejected"}

// ActivityInput is what a merchant gives for an activity.
type ActivityInput struct {
	Name        string    `json:"name"`
	Description string    `json:"description"`
	StartsAt    time.Time `json:"starts_at"`
	EndsAt      time.Time `json:"ends_at"`
}

// badText reports whether s cannot be stored and shown as text: not UTF-8, or holding control characters
// (PostgreSQL refuses NUL outright); a multiline text may hold line breaks and tabs.
func badText(s string, multiline bool) bool {
	if !utf8.ValidString(s) {
		return true
	}
	for _, r := range s {
		if r < 0x20 && !(multiline && (r == '\n' || r == '\r' || r == '\t')) || r == 0x7f {
			return true
		}
	}
	return false
}

// Times outside these years cannot be written as RFC 3339 (JSON) and name no sale.
var (
	earliest = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	latest   = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
)

func badTime(t time.Time) bool { return t.Before(earliest) || t.After(latest) }

// Validate checks the input against the contract's rules at now.
func (in *ActivityInput) Validate(now time.Time) error {
	in.Name, in.Description = strings.TrimSpace(in.Name), strings.TrimSpace(in.Description)
	switch {
	case in.Name == "":
		return errs.Invalid("name", "must not be empty")
	case len(in.Name) > 200:
		return errs.Invalid("name", "must be at most 200 bytes")
	case badText(in.Name, false):
		return errs.Invalid("name", "must be text without control characters")
	case len(in.Description) > 5000:
		return errs.Invalid("description", "must be at most 5000 bytes")
	case badText(in.Description, true):
		return errs.Invalid("description", "must be text without control characters")
	case in.StartsAt.IsZero():
		return errs.Invalid("starts_at", "is required (RFC 3339, for example 2026-11-11T10:00:00Z)")
	case in.EndsAt.IsZero():
		return errs.Invalid("ends_at", "is required (RFC 3339, for example 2026-11-11T12:00:00Z)")
	case badTime(in.StartsAt):
		return errs.Invalid("starts_at", "must be between the years 2000 and 9999")
	case badTime(in.EndsAt):
		return errs.Invalid("ends_at", "must be between the years 2000 and 9999")
	case !in.EndsAt.After(in.StartsAt):
		return errs.Invalid("ends_at", "must be after starts_at")
	case !in.EndsAt.After(now):
		return errs.Invalid("ends_at", "must be in the future")
	}
	return nil
}

// ItemInput is what a merchant gives for an item.
type ItemInput struct {
	Name               string `json:"name"`
	Title              string `json:"title"`
	Description        string `json:"description"`
	ImageURL           string `json:"image_url"`
	OriginalPriceCents int64  `json:"original_price_cents"`
	SeckillPriceCents  int64  `json:"seckill_price_cents"`
	Stock              int64  `json:"stock"`
	StockShards        int    `json:"stock_shards"` // optional: 1 (the default) to MaxStockShards
}

// MaxStockShards is the most stock shards an item can be split over.
const MaxStockShards = 64

// Validate checks the input against the contract's rules (an item's rules do not depend on the time).
func (in *ItemInput) Validate(time.Time) error {
	in.Name, in.Title, in.ImageURL = strings.TrimSpace(in.Name), strings.TrimSpace(in.Title), strings.TrimSpace(in.ImageURL)
	switch {
	case in.Name == "":
		return errs.Invalid("name", "must not be empty")
	case len(in.Name) > 200:
		return errs.Invalid("name", "must be at most 200 bytes")
	case badText(in.Name, false):
		return errs.Invalid("name", "must be text without control characters")
	case len(in.Title) > 200:
		return errs.Invalid("title", "must be at most 200 bytes")
	case badText(in.Title, false):
		return errs.Invalid("title", "must be text without control characters")
	case len(in.Description) > 5000:
		return errs.Invalid("description", "must be at most 5000 bytes")
	case badText(in.Description, true):
		return errs.Invalid("description", "must be text without control characters")
	case badText(in.ImageURL, false):
		return errs.Invalid("image_url", "must be an http(s) URL or a path on this site")
	case len(in.ImageURL) > 500 || in.ImageURL != "" && !strings.HasPrefix(in.ImageURL, "https://") && !strings.HasPrefix(in.ImageURL, "http://") && !strings.HasPrefix(in.ImageURL, "/"):
		return errs.Invalid("image_url", "must be an http(s) URL or a path on this site")
	case in.OriginalPriceCents <= 0:
		return errs.Invalid("original_price_cents", "must be positive")
	case in.SeckillPriceCents <= 0:
		return errs.Invalid("seckill_price_cents", "must be positive")
	case in.SeckillPriceCents > in.OriginalPriceCents:
		return errs.Invalid("seckill_price_cents", "must not be above original_price_cents")
	case in.Stock < 1 || in.Stock > 1_000_000:
		return errs.Invalid("stock", "must be between 1 and 1,000,000")
	case in.StockShards < 0 || in.StockShards > MaxStockShards:
		return errs.Invalid("stock_shards", fmt.Sprintf("must be between 1 and %d", MaxStockShards))
	case int64(in.StockShards) > in.Stock:
		return errs.Invalid("stock_shards", "must not be above stock")
	}
	if in.StockShards == 0 {
		in.StockShards = 1
	}
	return nil
}

// MerchantActivity loads one of the merchant's activities with its items; another's answers not found.
func MerchantActivity(ctx context.Context, db *gorm.DB, merchantID, id int64) (*Activity, error) {
	var a Activity
	err := db.WithContext(ctx).Preload("Items", func(db *gorm.DB) *gorm.DB { return db.Order("id") }).
		Where("id = ? AND merchant_id = ?", id, merchantID).Take(&a).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, errs.New(errs.NotFound, "no such activity")
	}
	if err != nil {
		return nil, fmt.Errorf("activity %d: %w", id, err)
	}
	return &a, nil
}

// ActivityByID loads any activity with its items.
func ActivityByID(ctx context.Context, db *gorm.DB, id int64) (*Activity, error) {
	var a Activity
	err := db.WithContext(ctx).Preload("Items", func(db *gorm.DB) *gorm.DB { return db.Order("id") }).Take(&a, "id = ?", id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, errs.New(errs.NotFound, "no such activity")
	}
	if err != nil {
		return nil, fmt.Errorf("activity %d: %w", id, err)
	}
	return &a, nil
}

// changeActivity runs fn on a merchant's or any (merchantID 0) activity inside a transaction, with the
// row locked, after checking that action is allowed from its state; fn returns what to audit.
func changeActivity(ctx context.Context, db *gorm.DB, who Actor, merchantID, id int64, action string, now time.Time,
	fn func(tx *gorm.DB, a *Activity, next string) (before, after any, err error)) (*Activity, error) {
	var out *Activity
	err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		q := tx.Preload("Items", func(db *gorm.DB) *gorm.DB { return db.Order("id") })
		if tx.Dialector.Name() == "postgres" {
			q = q.Clauses(lockForUpdate)
		}
		if merchantID != 0 {
			q = q.Where("merchant_id = ?", merchantID)
		}
		var a Activity
		if err := q.Take(&a, "id = ?", id).Error; errors.Is(err, gorm.ErrRecordNotFound) {
			return errs.New(errs.NotFound, "no such activity")
		} else if err != nil {
			return err
		}
		next, err := Next(a.State, action)
		if err != nil {
			return err
		}
		before, after, err := fn(tx, &a, next)
		if err != nil {
			return err
		}
		if err := Audit(tx, who, "activity."+action, fmt.Sprintf("activity:%d", a.ID), before, after, now); err != nil {
			return err
		}
		out = &a
		return nil
	})
	return out, err
}

type activityAudit struct {
	Name        string    `json:"name"`
	Description string    `json:"description"`
	StartsAt    time.Time `json:"starts_at"`
	EndsAt      time.Time `json:"ends_at"`
	State       string    `json:"state"`
	Reason      string    `json:"reason,omitempty"`
}

func auditOf(a *Activity) activityAudit {
	return activityAudit{a.Name, a.Description, a.StartsAt.UTC(), a.EndsAt.UTC(), a.State, a.ReviewReason}
}

// CreateActivity makes a draft activity for a merchant.
func CreateActivity(ctx context.Context, db *gorm.DB, who Actor, in ActivityInput, now time.Time) (*Activity, error) {
	a := Activity{MerchantID: who.ID, Name: in.Name, Description: in.Description, StartsAt: in.StartsAt.UTC(), EndsAt: in.EndsAt.UTC(),
		State: ActivityDraft, CreatedAt: now, UpdatedAt: now, Items: []Item{}}
	err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Omit("Items").Create(&a).Error; err != nil {
			return err
		}
		return Audit(tx, who, "activity.create", fmt.Sprintf("activity:%d", a.ID), nil, auditOf(&a), now)
	})
	if err != nil {
		return nil, fmt.Errorf("create activity: %w", err)
	}
	return &a, nil
}

// UpdateActivity changes a draft or rejected activity of the merchant.
func UpdateActivity(ctx context.Context, db *gorm.DB, who Actor, id int64, in ActivityInput, now time.Time) (*Activity, error) {
	return changeActivity(ctx, db, who, who.ID, id, ActEdit, now, func(tx *gorm.DB, a *Activity, _ string) (any, any, error) {
		before := auditOf(a)
		a.Name, a.Description, a.StartsAt, a.EndsAt, a.UpdatedAt = in.Name, in.Description, in.StartsAt.UTC(), in.EndsAt.UTC(), now
		err := tx.Model(&Activity{}).Where("id = ?", a.ID).
			Updates(map[string]any{"name": a.Name, "description": a.Description, "starts_at": a.StartsAt, "ends_at": a.EndsAt, "updated_at": now}).Error
		return before, auditOf(a), err
	})
}

type itemAudit struct {
	Name               string `json:"name"`
	Title              string `json:"title"`
	OriginalPriceCents int64  `json:"original_price_cents"`
	SeckillPriceCents  int64  `json:"seckill_price_cents"`
	Stock              int64  `json:"stock"`
	StockShards        int    `json:"stock_shards"`
}

func itemAuditOf(it *Item) itemAudit {
	return itemAudit{it.Name, it.Title, it.OriginalPriceCents, it.SeckillPriceCents, it.StockTotal, it.StockShards}
}

// AddItem adds an item to a draft or rejected activity of the merchant.
func AddItem(ctx context.Context, db *gorm.DB, who Actor, activityID int64, in ItemInput, now time.Time) (*Item, error) {
	var it Item
	_, err := changeActivity(ctx, db, who, who.ID, activityID, ActEdit, now, func(tx *gorm.DB, a *Activity, _ string) (any, any, error) {
		it = Item{ActivityID: a.ID, Name: in.Name, Title: in.Title, Description: in.Description, ImageURL: in.ImageURL,
			OriginalPriceCents: in.OriginalPriceCents, SeckillPriceCents: in.SeckillPriceCents, StockTotal: in.Stock, StockShards: in.StockShards, CreatedAt: now, UpdatedAt: now}
		err := tx.Create(&it).Error
		return nil, itemAuditOf(&it), err
	})
	if err != nil {
		return nil, err
	}
	return &it, nil
}

// UpdateItem changes an item of a draft or rejected activity of the merchant.
func UpdateItem(ctx context.Context, db *gorm.DB, who Actor, activityID, itemID int64, in ItemInput, now time.Time) (*Item, error) {
	var it Item
	_, err := changeActivity(ctx, db, who, who.ID, activityID, ActEdit, now, func(tx *gorm.DB, a *Activity, _ string) (any, any, error) {
		if err := tx.Take(&it, "id = ? AND activity_id = ?", itemID, a.ID).Error; errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, nil, errs.New(errs.NotFound, "no such item")
		} else if err != nil {
			return nil, nil, err
		}
		before := itemAuditOf(&it)
		it.Name, it.Title, it.Description, it.ImageURL = in.Name, in.Title, in.Description, in.ImageURL
		it.OriginalPriceCents, it.SeckillPriceCents, it.StockTotal, it.UpdatedAt = in.OriginalPriceCents, in.SeckillPriceCents, in.Stock, now
		it.StockShards = in.StockShards
		err := tx.Save(&it).Error
		return before, itemAuditOf(&it), err
	})
	if err != nil {
		return nil, err
	}
	return &it, nil
}

// DeleteItem removes an item from a draft or rejected activity of the merchant.
func DeleteItem(ctx context.Context, db *gorm.DB, who Actor, activityID, itemID int64, now time.Time) error {
	_, err := changeActivity(ctx, db, who, who.ID, activityID, ActEdit, now, func(tx *gorm.DB, a *Activity, _ string) (any, any, error) {
		var it Item
		if err := tx.Take(&it, "id = ? AND activity_id = ?", itemID, a.ID).Error; errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, nil, errs.New(errs.NotFound, "no such item")
		} else if err != nil {
			return nil, nil, err
		}
		return itemAuditOf(&it), nil, tx.Delete(&it).Error
	})
	return err
}

// SubmitActivity sends a draft or rejected activity of the merchant for review; it needs an item.
func SubmitActivity(ctx context.Context, db *gorm.DB, who Actor, id int64, now time.Time) (*Activity, error) {
	return changeActivity(ctx, db, who, who.ID, id, ActSubmit, now, func(tx *gorm.DB, a *Activity, next string) (any, any, error) {
		if len(a.Items) == 0 {
			return nil, nil, errs.Invalid("items", "an activity needs at least one item before review")
		}
		if !a.EndsAt.After(now) {
			return nil, nil, errs.Invalid("ends_at", "must be in the future")
		}
		before := auditOf(a)
		a.State, a.UpdatedAt = next, now
		err := tx.Model(&Activity{}).Where("id = ?", a.ID).Updates(map[string]any{"state": next, "updated_at": now}).Error
		return before, auditOf(a), err
	})
}

// Review approves or rejects (with a reason) an activity pending review.
func Review(ctx context.Context, db *gorm.DB, who Actor, id int64, approve bool, reason string, now time.Time) (*Activity, error) {
	action := ActReject
	if approve {
		action = ActApprove
	}
	reason = strings.TrimSpace(reason)
	switch {
	case !approve && reason == "":
		return nil, errs.Invalid("reason", "must say why the activity is rejected")
	case len(reason) > 2000:
		return nil, errs.Invalid("reason", "must be at most 2000 bytes")
	case badText(reason, true):
		return nil, errs.Invalid("reason", "must be text without control characters")
	}
	return changeActivity(ctx, db, who, 0, id, action, now, func(tx *gorm.DB, a *Activity, next string) (any, any, error) {
		before := auditOf(a)
		a.State, a.ReviewerID, a.ReviewReason, a.ReviewedAt, a.UpdatedAt = next, &who.ID, reason, &now, now
		err := tx.Model(&Activity{}).Where("id = ?", a.ID).Updates(map[string]any{
			"state": next, "reviewer_id": who.ID, "review_reason": reason, "reviewed_at": now, "updated_at": now}).Error
		return before, auditOf(a), err
	})
}

// PendingReviews lists the activities waiting for review, oldest first, with items.
func PendingReviews(ctx context.Context, db *gorm.DB) ([]Activity, error) {
	var acts []Activity
	err := db.WithContext(ctx).Preload("Items", func(db *gorm.DB) *gorm.DB { return db.Order("id") }).
		Where("state = ?", ActivityPendingReview).Order("updated_at, id").Find(&acts).Error
	if err != nil {
		return nil, fmt.Errorf("pending reviews: %w", err)
	}
	return acts, nil
}

// Usernames maps user ids to names.
func Usernames(ctx context.Context, db *gorm.DB, ids []int64) (map[int64]string, error) {
	out := map[int64]string{}
	if len(ids) == 0 {
		return out, nil
	}
	var users []User
	if err := db.WithContext(ctx).Select("id", "username").Where("id IN ?", ids).Find(&users).Error; err != nil {
		return nil, fmt.Errorf("usernames: %w", err)
	}
	for _, u := range users {
		out[u.ID] = u.Username
	}
	return out, nil
}

// ListUsers lists users by id, at most limit.
func ListUsers(ctx context.Context, db *gorm.DB, limit int) ([]User, error) {
	var users []User
	if err := db.WithContext(ctx).Order("id").Limit(limit).Find(&users).Error; err != nil {
		return nil, fmt.Errorf("users: %w", err)
	}
	return users, nil
}

// OrderCounts counts an activity's orders per item and status.
func OrderCounts(ctx context.Context, db *gorm.DB, activityID int64) (map[int64]map[string]int64, error) {
	var rows []struct {
		ItemID int64
		Status string
		N      int64
	}
	err := db.WithContext(ctx).Raw("SELECT item_id, status, count(*) AS n FROM orders WHERE activity_id = ? GROUP BY item_id, status", activityID).
		Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("order counts: %w", err)
	}
	out := map[int64]map[string]int64{}
	for _, r := range rows {
		if out[r.ItemID] == nil {
			out[r.ItemID] = map[string]int64{}
		}
		out[r.ItemID][r.Status] = r.N
	}
	return out, nil
}
