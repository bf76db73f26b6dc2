package handlers

import (
	"context"

	"seckill/auth"
	"seckill/errs"
	"seckill/models"
	"seckill/stock"
)

// The rules of who may take part in a sale (one person, one chance), checked from memory: the session's
// role, and the activity's rules as the catalog holds them.

var errStaff = errs.Static(errs.Staff, "merchants and admins do not join lines or buy: use a shopper's account")

// mayTakePart answers why the session may not join the activity's lines or buy in it: staff never do, and
// under accounts_before_approval an account made after the sale was approved does not.
func mayTakePart(s *auth.Session, a *models.Activity) error {
	if s.Role != models.RoleShopper {
		return errStaff
	}
	if !a.Eligible(s.UserID) {
		since := "its approval"
		if a.ReviewedAt != nil {
			since = a.ReviewedAt.UTC().Format("2006-01-02 15:04 UTC")
		}
		return errs.SayWith(errs.NotEligible, "not_eligible_since", since)
	}
	return nil
}

// ruleCodes are the refusals a sale's fairness report counts: the rules of who may take part.
var ruleCodes = map[string]bool{errs.Staff: true, errs.NotEligible: true, errs.AddressLimit: true}

// counted counts err in the item's report when it is a rule's refusal (best effort), and answers it.
func counted(ctx context.Context, r *stock.Refusals, itemID int64, a *models.Activity, err error) error {
	if err == nil || r == nil {
		return err
	}
	if code := errs.Code(err); ruleCodes[code] {
		r.Count(ctx, itemID, code, a.EndsAt)
	}
	return err
}
