package models

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"gorm.io/gorm"

	"seckill/errs"
)

// ApprovedEndingAfter lists the approved activities that end after t, with their items, soonest start
// first: what the catalog keeps in memory.
func ApprovedEndingAfter(ctx context.Context, db *gorm.DB, t time.Time) ([]Activity, error) {
	var acts []Activity
	err := db.WithContext(ctx).
		Preload("Items", func(db *gorm.DB) *gorm.DB { return db.Order("id") }).
		Where("state = ? AND ends_at > ?", ActivityApproved, t).
		Order("starts_at, id").
		Find(&acts).Error
	if err != nil {
		return nil, fmt.Errorf("approved activities: %w", err)
	}
	return acts, nil
}

// ApprovedActivity returns one approved activity with its items; any other answers errs.NotFound.
func ApprovedActivity(ctx context.Context, db *gorm.DB, id int64) (*Activity, error) {
	var a Activity
	err := db.WithContext(ctx).
		Preload("Items", func(db *gorm.DB) *gorm.DB { return db.Order("id") }).
		Where("id = ? AND state = ?", id, ActivityApproved).
		Take(&a).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, errs.New(errs.NotFound, "no such activity")
	}
	if err != nil {
		return nil, fmt.Errorf("activity %d: %w", id, err)
	}
	return &a, nil
}

// ItemInAnyState returns an item and its activity, whatever the activity's state (the jobs' view);
// an item that does not exist answers errs.NotFound.
func ItemInAnyState(ctx context.Context, db *gorm.DB, itemID int64) (*Item, *Activity, error) {
	var it Item
	var act Activity
	db = db.WithContext(ctx)
	err := db.Take(&it, "id = ?", itemID).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil, errs.New(errs.NotFound, "no such item")
	}
	if err != nil {
		return nil, nil, fmt.Errorf("item %d: %w", itemID, err)
	}
	if err := db.Take(&act, "id = ?", it.ActivityID).Error; err != nil {
		return nil, nil, fmt.Errorf("activity of item %d: %w", itemID, err)
	}
	return &it, &act, nil
}

// ApprovedItem returns an item of an approved activity, with that activity (the shoppers' view); an item
// of an activity in any other state answers errs.NotFound, as one that does not exist.
func ApprovedItem(ctx context.Context, db *gorm.DB, id int64) (*Item, *Activity, error) {
	var it Item
	err := db.WithContext(ctx).Take(&it, "id = ?", id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil, errs.New(errs.NotFound, "no such item")
	}
	if err != nil {
		return nil, nil, fmt.Errorf("item %d: %w", id, err)
	}
	var a Activity
	err = db.WithContext(ctx).Where("id = ? AND state = ?", it.ActivityID, ActivityApproved).Take(&a).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil, errs.New(errs.NotFound, "no such item")
	}
	if err != nil {
		return nil, nil, fmt.Errorf("activity of item %d: %w", id, err)
	}
	return &it, &a, nil
}

// MerchantActivities lists a merchant's own activities, newest first, with their items.
func MerchantActivities(ctx context.Context, db *gorm.DB, merchantID int64) ([]Activity, error) {
	var acts []Activity
	err := db.WithContext(ctx).
		Preload("Items", func(db *gorm.DB) *gorm.DB { return db.Order("id") }).
		Where("merchant_id = ?", merchantID).
		Order("id DESC").
		Find(&acts).Error
	if err != nil {
		return nil, fmt.Errorf("activities of merchant %d: %w", merchantID, err)
	}
	return acts, nil
}

// ActivityInput is what a merchant gives for an activity.
type ActivityInput struct {
	Name        string    `json:"name"`
	Description string    `json:"description"`
	StartsAt    time.Time `json:"starts_at"`
	EndsAt      time.Time `json:"ends_at"`
	SaleMode    string    `json:"sale_mode"` // first_come when left out, so that clients written before the waiting room keep their meaning
	Rules       *Rules    `json:"rules"`     // left out: a queue sale's protect it (both on), a first-come sale's are off
}

// Rules are a sale's rules for who may take part (one person, one chance).
type Rules struct {
	// OnePerAddress: one entrant per delivery address and per phone (a queue sale's entrants give theirs
	// when joining; a first-come sale checks it when an order's address is chosen).
	OnePerAddress bool `json:"one_per_address"`
	// AccountsBeforeApproval: only accounts made before the sale was approved may join or buy.
	AccountsBeforeApproval bool `json:"accounts_before_approval"`

	unknown bool // read from a body naming something else: a misspelt rule must not turn both off unsaid
}

// UnmarshalJSON reads the rules, noting a body that names anything but them (Validate refuses it).
func (r *Rules) UnmarshalJSON(b []byte) error {
	type plain Rules
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	var p plain
	if err := d.Decode(&p); err != nil {
		*r = Rules{unknown: true}
		return nil
	}
	*r = Rules(p)
	return nil
}

// rules are the input's rules; without them, a queue sale's protect its line (both on) and a first-come
// sale's (where whoever comes first buys) are off, as before the rules.
func (in *ActivityInput) rules() Rules {
	if in.Rules != nil {
		return *in.Rules
	}
	on := in.SaleMode == SaleQueue
	return Rules{OnePerAddress: on, AccountsBeforeApproval: on}
}

// RulesOf answers the activity's rules.
func (a *Activity) RulesOf() Rules {
	return Rules{OnePerAddress: a.RuleOnePerAddress, AccountsBeforeApproval: a.RuleAccountsBeforeApproval}
}

// Eligible reports whether the account userID may take part under the activity's rules: an account made
// after the sale was approved may not when the rule says so.
func (a *Activity) Eligible(userID int64) bool {
	return !a.RuleAccountsBeforeApproval || a.EligibleThrough == nil || userID <= *a.EligibleThrough
}

// BadText reports whether s cannot be stored and shown as text: not UTF-8, or holding control characters
// (PostgreSQL refuses NUL outright); a multiline text may hold line breaks and tabs.
func BadText(s string, multiline bool) bool {
	if !utf8.ValidString(s) {
		return true
	}
	for _, r := range s {
		// Control characters (C0, DEL and C1), and bidirectional controls, which show a text reversed.
		if unicode.IsControl(r) && !(multiline && (r == '\n' || r == '\r' || r == '\t')) || unicode.Is(unicode.Bidi_Control, r) {
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

// CreateActivity makes a draft activity for a merchant.
func CreateActivity(ctx context.Context, db *gorm.DB, who Actor, in ActivityInput, now time.Time) (*Activity, error) {
	a := Activity{MerchantID: who.ID, Name: in.Name, Description: in.Description, StartsAt: in.StartsAt.UTC(), EndsAt: in.EndsAt.UTC(),
		SaleMode: in.SaleMode, RuleOnePerAddress: in.rules().OnePerAddress, RuleAccountsBeforeApproval: in.rules().AccountsBeforeApproval,
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
		a.Name, a.Description, a.StartsAt, a.EndsAt, a.SaleMode, a.UpdatedAt = in.Name, in.Description, in.StartsAt.UTC(), in.EndsAt.UTC(), in.SaleMode, now
		if in.Rules != nil { // a change that leaves the rules out keeps them
			a.RuleOnePerAddress, a.RuleAccountsBeforeApproval = in.Rules.OnePerAddress, in.Rules.AccountsBeforeApproval
		}
		err := tx.Model(&Activity{}).Where("id = ?", a.ID).
			Updates(map[string]any{"name": a.Name, "description": a.Description, "starts_at": a.StartsAt, "ends_at": a.EndsAt,
				"sale_mode": a.SaleMode, "rule_one_per_address": a.RuleOnePerAddress,
				"rule_accounts_before_approval": a.RuleAccountsBeforeApproval, "updated_at": now}).Error
		return before, auditOf(a), err
	})
}

// ActivitiesToPreheat lists the approved activities that start before horizon and have not ended at now.
func ActivitiesToPreheat(ctx context.Context, db *gorm.DB, now, horizon time.Time) ([]Activity, error) {
	var acts []Activity
	err := db.WithContext(ctx).Preload("Items").
		Where("state = ? AND starts_at <= ? AND ends_at > ?", ActivityApproved, horizon, now).
		Find(&acts).Error
	if err != nil {
		return nil, fmt.Errorf("activities to preheat: %w", err)
	}
	return acts, nil
}

// Validate checks the input against the contract's rules at now: every bad field at once.
func (in *ActivityInput) Validate(now time.Time) error {
	in.Name, in.Description = strings.TrimSpace(in.Name), strings.TrimSpace(in.Description)
	if in.SaleMode == "" {
		in.SaleMode = SaleFirstCome
	}
	var why []errs.Why
	if in.SaleMode != SaleFirstCome && in.SaleMode != SaleQueue {
		why = append(why, errs.W("sale_mode", "sale_mode"))
	}
	if in.Rules != nil && in.Rules.unknown {
		why = append(why, errs.W("rules", "rules"))
	}
	why = append(why, text("name", in.Name, true, 200, false)...)
	why = append(why, text("description", in.Description, false, 5000, true)...)
	switch {
	case in.StartsAt.IsZero():
		why = append(why, errs.W("starts_at", "time_required"))
	case badTime(in.StartsAt):
		why = append(why, errs.W("starts_at", "year_range"))
	}
	switch {
	case in.EndsAt.IsZero():
		why = append(why, errs.W("ends_at", "time_required"))
	case badTime(in.EndsAt):
		why = append(why, errs.W("ends_at", "year_range"))
	case !in.StartsAt.IsZero() && !in.EndsAt.After(in.StartsAt):
		why = append(why, errs.W("ends_at", "after_start"))
	case !in.EndsAt.After(now):
		why = append(why, errs.W("ends_at", "future"))
	}
	if len(why) > 0 {
		return errs.Bad(why...)
	}
	return nil
}

// text checks a text field: given when required, at most most bytes, and without control characters
// (line breaks and tabs allowed when multiline).
func text(field, v string, required bool, most int, multiline bool) []errs.Why {
	switch {
	case required && v == "":
		return []errs.Why{errs.W(field, "empty")}
	case len(v) > most:
		return []errs.Why{errs.W(field, "max_bytes", most)}
	case BadText(v, multiline):
		return []errs.Why{errs.W(field, "control_chars")}
	}
	return nil
}
