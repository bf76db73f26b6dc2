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

// Activity actions, and the one table of which state each may start from and where it leads.
const (
	ActEdit    = "edit"
	ActSubmit  = "submit"
	ActApprove = "approve"
	ActReject  = "reject"
	// A merchant takes a sale in review back to its drafts (to fix a typo before a reviewer sees it).
	ActWithdraw = "withdraw"
	// The emergency stop: an admin, or the sale's merchant, pauses an approved sale, resumes it, or ends
	// it early (a merchant resumes only its own pause).
	ActPause  = "pause"
	ActResume = "resume"
	ActEnd    = "end"
)

var transitions = map[string]struct {
	from []string
	to   string // "" keeps the state
}{
	ActEdit:     {from: []string{ActivityDraft, ActivityRejected}},
	ActSubmit:   {from: []string{ActivityDraft, ActivityRejected}, to: ActivityPendingReview},
	ActApprove:  {from: []string{ActivityPendingReview}, to: ActivityApproved},
	ActReject:   {from: []string{ActivityPendingReview}, to: ActivityRejected},
	ActWithdraw: {from: []string{ActivityPendingReview}, to: ActivityDraft},
	ActPause:    {from: []string{ActivityApproved}},
	ActResume:   {from: []string{ActivityApproved}},
	ActEnd:      {from: []string{ActivityApproved}},
}

// NextActivityState answers the state an action leads an activity to from state, or errs activity_state when the
// action is not allowed there: draft → pending_review → approved | rejected, rejected → pending_review,
// pending_review → draft (withdrawn); only draft and rejected activities can be changed.
func NextActivityState(state, action string) (string, error) {
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
	// What can be done instead, in the person's words (i18n/words_salestate.go): a page that lost a race
	// (a withdraw after the reviewer decided) is told what happened and to reload.
	return "", errs.Say(errs.ActivityState, "sale_state."+action)
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
		next, err := NextActivityState(a.State, action)
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

// SubmitActivity sends a draft or rejected activity of the merchant for review; it needs an item.
func SubmitActivity(ctx context.Context, db *gorm.DB, who Actor, id int64, now time.Time) (*Activity, error) {
	return changeActivity(ctx, db, who, who.ID, id, ActSubmit, now, func(tx *gorm.DB, a *Activity, next string) (any, any, error) {
		var why []errs.Why
		if len(a.Items) == 0 {
			why = append(why, errs.W("items", "need_item"))
		}
		if !a.EndsAt.After(now) {
			why = append(why, errs.W("ends_at", "future"))
		}
		if len(why) > 0 {
			return nil, nil, errs.Bad(why...)
		}
		before := auditOf(a)
		// A decision the merchant had not looked at is moot once the sale is sent again: no badge for it.
		a.State, a.UpdatedAt, a.DecisionUnseen = next, now, false
		err := tx.Model(&Activity{}).Where("id = ?", a.ID).Updates(map[string]any{"state": next, "updated_at": now,
			"decision_unseen": false}).Error
		return before, auditOf(a), err
	})
}

// WithdrawActivity takes one of the merchant's activities in review back to its drafts, where it can be
// changed and submitted again.
func WithdrawActivity(ctx context.Context, db *gorm.DB, who Actor, id int64, now time.Time) (*Activity, error) {
	return changeActivity(ctx, db, who, who.ID, id, ActWithdraw, now, func(tx *gorm.DB, a *Activity, next string) (any, any, error) {
		before := auditOf(a)
		a.State, a.UpdatedAt = next, now
		err := tx.Model(&Activity{}).Where("id = ?", a.ID).Updates(map[string]any{"state": next, "updated_at": now}).Error
		return before, auditOf(a), err
	})
}

// Review approves or rejects (with a reason) an activity pending review.
//
// A queue sale's waiting room opens queueOpens before its start, and never before its approval. The
// decision is unseen by its merchant until the console is opened; decided, when not nil, is called in the
// same transaction once it is written (the merchant's mail is queued there: both happen or neither).
func Review(ctx context.Context, db *gorm.DB, who Actor, id int64, approve bool, reason string, queueOpens time.Duration, now time.Time,
	decided func(tx *gorm.DB, a *Activity) error) (*Activity, error) {
	action := ActReject
	if approve {
		action = ActApprove
	}
	reason, err := checkReason(reason, !approve)
	if err != nil {
		return nil, err
	}
	return changeActivity(ctx, db, who, 0, id, action, now, func(tx *gorm.DB, a *Activity, next string) (any, any, error) {
		before := auditOf(a)
		a.State, a.ReviewerID, a.ReviewReason, a.ReviewedAt, a.UpdatedAt, a.DecisionUnseen = next, &who.ID, reason, &now, now, true
		change := map[string]any{"state": next, "reviewer_id": who.ID, "review_reason": reason, "reviewed_at": now, "updated_at": now,
			"decision_unseen": true}
		if next == ActivityApproved && a.SaleMode == SaleQueue {
			opens := a.StartsAt.Add(-queueOpens)
			if opens.Before(now) {
				opens = now
			}
			a.QueueOpensAt = &opens
			change["queue_opens_at"] = opens
		}
		if next == ActivityApproved && a.RuleAccountsBeforeApproval {
			// The accounts made so far: ids are given in the order accounts are made.
			var newest int64
			if err := tx.Model(&User{}).Select("COALESCE(MAX(id), 0)").Scan(&newest).Error; err != nil {
				return nil, nil, err
			}
			a.EligibleThrough = &newest
			change["eligible_through"] = newest
		}
		if err := tx.Model(&Activity{}).Where("id = ?", a.ID).Updates(change).Error; err != nil {
			return nil, nil, err
		}
		if decided != nil {
			if err := decided(tx, a); err != nil {
				return nil, nil, err
			}
		}
		return before, auditOf(a), nil
	})
}

// UnseenDecisions counts the merchant's sales whose review decision it has not seen yet.
func UnseenDecisions(ctx context.Context, db *gorm.DB, merchantID int64) (int64, error) {
	var n int64
	err := db.WithContext(ctx).Model(&Activity{}).Where("merchant_id = ? AND decision_unseen", merchantID).Count(&n).Error
	if err != nil {
		return 0, fmt.Errorf("unseen decisions of merchant %d: %w", merchantID, err)
	}
	return n, nil
}

// SeeDecisions marks every decision on the merchant's sales seen (the console's list, which shows them,
// was opened).
// With ids, only those sales' (one sale's page was opened).
func SeeDecisions(ctx context.Context, db *gorm.DB, merchantID int64, ids ...int64) error {
	q := db.WithContext(ctx).Model(&Activity{}).Where("merchant_id = ? AND decision_unseen", merchantID)
	if len(ids) > 0 {
		q = q.Where("id IN ?", ids)
	}
	err := q.Update("decision_unseen", false).Error
	if err != nil {
		return fmt.Errorf("see decisions of merchant %d: %w", merchantID, err)
	}
	return nil
}

// RecentlyReviewed lists the activities approved or rejected most recently, at most limit, with items.
func RecentlyReviewed(ctx context.Context, db *gorm.DB, limit int) ([]Activity, error) {
	var acts []Activity
	err := db.WithContext(ctx).Where("state IN ? AND reviewed_at IS NOT NULL", []string{ActivityApproved, ActivityRejected}).
		Order("reviewed_at DESC, id DESC").Limit(limit).Find(&acts).Error
	if err != nil {
		return nil, fmt.Errorf("recent reviews: %w", err)
	}
	return acts, nil
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

// checkReason checks a person's reason for an action (others see it): at most 2,000 characters of text
// (as the pages' fields count them: 2,000 Chinese characters are 6,000 bytes), and not empty when
// required. It answers it trimmed.
func checkReason(reason string, required bool) (string, error) {
	reason = strings.TrimSpace(reason)
	switch {
	case required && strings.TrimFunc(reason, invisible) == "":
		return "", errs.Bad(errs.W("reason", "reason_required"))
	case utf8.RuneCountInString(reason) > 2000:
		return "", errs.Bad(errs.W("reason", "max_chars", 2000))
	case BadText(reason, true):
		return "", errs.Bad(errs.W("reason", "control_chars"))
	}
	return reason, nil
}

// Stop is an admin's emergency stop of an approved sale that has not ended: pause (buying, purchase
// paths and the waiting room's turns stop; the line keeps its order), resume, or end now. Each is audited
// with its reason, which the merchant sees (a pause's and an end's reason is required; a resume needs
// none). Pausing a paused sale, or resuming a running one, answers
// activity_state; so does any of them on a sale that has ended. resumed, when not nil, is called on a
// resume once everything else was checked, before it is written, with the sale and when its pause
// began: what it does before the sale goes on (the waiting room's turns given their time back); its
// error leaves the sale paused.
func Stop(ctx context.Context, db *gorm.DB, who Actor, id int64, action, reason string, now time.Time,
	resumed func(a *Activity, paused time.Time) error) (*Activity, error) {
	return stopSale(ctx, db, who, 0, id, action, reason, now, resumed)
}

// MerchantStop is the same emergency stop in the hands of the sale's merchant (who): only its own sales
// (another's answers not found), and a resume only of a pause it made itself (an admin's pause stays
// until an admin resumes it: forbidden).
func MerchantStop(ctx context.Context, db *gorm.DB, who Actor, id int64, action, reason string, now time.Time,
	resumed func(a *Activity, paused time.Time) error) (*Activity, error) {
	return stopSale(ctx, db, who, who.ID, id, action, reason, now, resumed)
}

func stopSale(ctx context.Context, db *gorm.DB, who Actor, merchantID, id int64, action, reason string, now time.Time,
	resumed func(a *Activity, paused time.Time) error) (*Activity, error) {
	reason, err := checkReason(reason, action != ActResume)
	if err != nil {
		return nil, err
	}
	by := StopByAdmin
	if merchantID != 0 {
		by = StopByMerchant
	}
	return changeActivity(ctx, db, who, merchantID, id, action, now, func(tx *gorm.DB, a *Activity, _ string) (any, any, error) {
		if a.Over(now) {
			return nil, nil, errs.New(errs.ActivityState, "this sale has ended")
		}
		before := stopAuditOf(a)
		change := map[string]any{"updated_at": now, "stop_reason": reason}
		switch action {
		case ActPause:
			switch {
			case a.PausedAt == nil:
				a.PausedAt, a.StoppedBy = &now, by
				change["paused_at"], change["stopped_by"] = now, by
			case by == StopByAdmin && a.PausedByMerchant():
				// An admin takes a merchant's pause over: the sale stays paused from when it was, and
				// now only an admin resumes it.
				a.StoppedBy = by
				change["stopped_by"] = by
			default:
				return nil, nil, errs.New(errs.ActivityState, "this sale is paused already")
			}
		case ActResume:
			if a.PausedAt == nil {
				return nil, nil, errs.New(errs.ActivityState, "this sale is not paused")
			}
			if merchantID != 0 && !a.PausedByMerchant() {
				return nil, nil, errs.New(errs.Forbidden, "only an admin can resume a sale an admin paused")
			}
			if resumed != nil {
				if err := resumed(a, *a.PausedAt); err != nil {
					return nil, nil, err
				}
			}
			a.PausedAt, a.StoppedBy = nil, ""
			change["paused_at"], change["stopped_by"] = nil, ""
		case ActEnd:
			ends := now
			if ends.Before(a.StartsAt) {
				ends = a.StartsAt // a sale ended before its start never opens (and never ends before it starts)
			}
			a.EndsAt, a.PausedAt, a.StoppedBy, a.EndedEarly = ends, nil, by, true
			change["ends_at"], change["paused_at"], change["stopped_by"], change["ended_early"] = ends, nil, by, true
		}
		a.StopReason, a.UpdatedAt = reason, now
		err := tx.Model(&Activity{}).Where("id = ?", a.ID).Updates(change).Error
		return before, stopAuditOf(a), err
	})
}

// PausedByMerchant reports whether the sale is paused by its own merchant (not by an admin).
func (a Activity) PausedByMerchant() bool { return a.PausedAt != nil && a.StoppedByMerchant() }

// StoppedByMerchant reports whether the sale's last pause or early end was its merchant's own.
func (a Activity) StoppedByMerchant() bool { return a.StoppedBy == StopByMerchant }

// Who made a sale's last pause or early end (Activity.StoppedBy).
const (
	StopByMerchant = "merchant"
	StopByAdmin    = "admin"
)

// (Value receivers: the pages' templates call them on the activities they range over.)

// Phases of a sale as a person names them (Phase).
const (
	PhaseDraft    = "draft"
	PhaseInReview = "in_review"
	PhaseRejected = "rejected"
	PhaseUpcoming = "upcoming"
	PhaseLive     = "live"
	PhasePaused   = "paused"
	PhaseOver     = "over"
)

// Phase says where the sale is at now as a person says it: a draft, in review or rejected; once
// approved, upcoming, live, paused (before or during its window) or over (ended, early or on time).
func (a Activity) Phase(now time.Time) string {
	switch a.State {
	case ActivityDraft:
		return PhaseDraft
	case ActivityPendingReview:
		return PhaseInReview
	case ActivityRejected:
		return PhaseRejected
	}
	switch {
	case a.Over(now):
		return PhaseOver
	case a.PausedAt != nil:
		return PhasePaused
	case now.Before(a.StartsAt):
		return PhaseUpcoming
	}
	return PhaseLive
}

// Over reports whether the sale is over at now: ended early (an end before its start leaves its window,
// start to start, still in the future), or its end has come. The one test of "ended" that the stop, the
// phases and the pages share.
func (a Activity) Over(now time.Time) bool { return a.EndedEarly || !now.Before(a.EndsAt) }

// Stoppable reports whether the emergency stop can still act on the sale at now: approved and not over.
func (a Activity) Stoppable(now time.Time) bool {
	return a.State == ActivityApproved && !a.Over(now)
}

type stopAudit struct {
	State      string     `json:"state"`
	PausedAt   *time.Time `json:"paused_at"`
	EndsAt     time.Time  `json:"ends_at"`
	StopReason string     `json:"reason,omitempty"`
}

func stopAuditOf(a *Activity) stopAudit {
	return stopAudit{a.State, a.PausedAt, a.EndsAt.UTC(), a.StopReason}
}
