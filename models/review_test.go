package models_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"seckill/errs"
	"seckill/i18n"
	"seckill/models"
)

// A withdraw that lost its race to the reviewer's decision says what happened, in the person's words,
// with the shop's word for a sale.
func TestAWithdrawTooLateSaysTheReviewerDecided(t *testing.T) {
	_, err := models.NextActivityState(models.ActivityApproved, models.ActWithdraw)
	var e *errs.Error
	if !errors.As(err, &e) {
		t.Fatalf("%v: not an errs.Error", err)
	}
	for lang, want := range map[string]string{"en": "a reviewer has decided on it already", "zh": "审核员已作出决定"} {
		got := e.Localize(lang, i18n.For(lang).T).Message
		if !strings.Contains(got, want) || strings.Contains(got, "activity") {
			t.Errorf("in %s: %q, want it to say %q", lang, got, want)
		}
	}
}

// The activities' transitions, as the table says: withdraw leads only from review back to the drafts.
func TestActivityTransitions(t *testing.T) {
	for _, c := range []struct{ state, action, want string }{
		{models.ActivityDraft, models.ActSubmit, models.ActivityPendingReview},
		{models.ActivityRejected, models.ActSubmit, models.ActivityPendingReview},
		{models.ActivityPendingReview, models.ActWithdraw, models.ActivityDraft},
		{models.ActivityPendingReview, models.ActApprove, models.ActivityApproved},
		{models.ActivityApproved, models.ActPause, models.ActivityApproved},
		{models.ActivityDraft, models.ActWithdraw, ""},
		{models.ActivityApproved, models.ActWithdraw, ""},
		{models.ActivityRejected, models.ActWithdraw, ""},
		{models.ActivityPendingReview, models.ActEdit, ""},
	} {
		t.Run(c.state+" "+c.action, func(t *testing.T) {
			got, err := models.NextActivityState(c.state, c.action)
			if c.want == "" {
				if !errs.Is(err, errs.ActivityState) {
					t.Errorf("answered %q, %v; want activity_state", got, err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Errorf("answered %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

// A sale's phase as a person says it.
func TestActivityPhase(t *testing.T) {
	now := time.Date(2026, 11, 11, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { t := now.Add(d); return &t }
	for _, c := range []struct {
		name string
		a    models.Activity
		want string
	}{
		{"a draft", models.Activity{State: models.ActivityDraft}, models.PhaseDraft},
		{"in review", models.Activity{State: models.ActivityPendingReview}, models.PhaseInReview},
		{"rejected", models.Activity{State: models.ActivityRejected}, models.PhaseRejected},
		{"approved, not started", models.Activity{State: models.ActivityApproved, StartsAt: now.Add(time.Hour), EndsAt: now.Add(2 * time.Hour)}, models.PhaseUpcoming},
		{"approved, running", models.Activity{State: models.ActivityApproved, StartsAt: now.Add(-time.Hour), EndsAt: now.Add(time.Hour)}, models.PhaseLive},
		{"paused", models.Activity{State: models.ActivityApproved, StartsAt: now.Add(-time.Hour), EndsAt: now.Add(time.Hour), PausedAt: at(-time.Minute)}, models.PhasePaused},
		{"paused before its start", models.Activity{State: models.ActivityApproved, StartsAt: now.Add(time.Hour), EndsAt: now.Add(2 * time.Hour), PausedAt: at(0)}, models.PhasePaused},
		{"ended while paused", models.Activity{State: models.ActivityApproved, StartsAt: now.Add(-2 * time.Hour), EndsAt: now, PausedAt: at(-time.Hour)}, models.PhaseOver},
		{"ended early", models.Activity{State: models.ActivityApproved, StartsAt: now.Add(-time.Hour), EndsAt: now.Add(-time.Minute), EndedEarly: true}, models.PhaseOver},
	} {
		if got := c.a.Phase(now); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
		if stoppable := c.a.Stoppable(now); stoppable != (c.want == models.PhaseUpcoming || c.want == models.PhaseLive || c.want == models.PhasePaused) {
			t.Errorf("%s: stoppable %v", c.name, stoppable)
		}
	}
}
