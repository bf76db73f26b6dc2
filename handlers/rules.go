package handlers

import (
	"seckill/auth"
	"seckill/errs"
	"seckill/models"
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
