package handlers

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"time"

	"seckill/auth"
	"seckill/errs"
	sendmail "seckill/mail"
	"seckill/models"
	"seckill/ratelimit"
	"seckill/stock"
)

// The rules of who may take part in a sale (one person, one chance), checked from memory: the session's
// role, and the activity's rules as the catalog holds them.

var errStaff = errs.Static(errs.Staff, "merchants and admins do not join lines or buy: use a shopper's account")

var errNotEligible = errs.Static(errs.NotEligible, "This sale is only for accounts made before it was announced.")

// mayTakePart answers why the session may not join the activity's lines or buy in it: staff never do, and
// under accounts_before_approval an account made after the sale was approved does not.
func mayTakePart(s *auth.Session, a *models.Activity) error {
	if s.Role != models.RoleShopper {
		return errStaff
	}
	if !a.Eligible(s.UserID) {
		if a.ReviewedAt == nil {
			return errNotEligible
		}
		at := *a.ReviewedAt
		// The moment as the mails say it (Beijing time, in the reader's words), not the server's UTC.
		return errs.SayWith(errs.NotEligible, "not_eligible_since", errs.ByLang(func(lang string) string { return sendmail.When(lang, at) }))
	}
	return nil
}

// counted counts the account's refusal in the item's report when err is a rule's (best effort), and
// answers err.
func counted(ctx context.Context, r *stock.Refusals, itemID int64, a *models.Activity, userID int64, err error) error {
	if err == nil || r == nil {
		return err
	}
	if code := errs.Code(err); slices.Contains(stock.RefusalCodes, code) {
		r.Count(ctx, itemID, code, userID, a.EndsAt)
	}
	return err
}

// addressProbes bounds a shopper's refusals for addresses (given by another entrant, or past the
// shopper's share), on joins and on orders' addresses alike: trying addresses one after another to learn
// which were given is slowed to a few an hour.
var addressProbes = ratelimit.Limit{Burst: 5, Rate: 5, Period: time.Hour}

func probeKey(userID int64) string { return "addrprobe:user:" + strconv.FormatInt(userID, 10) }

// probesLeft answers rate_limited once the shopper has used the hour's probes: from then on every address
// gets the same answer, so that the refusals tell nothing more.
func probesLeft(ctx context.Context, limits *ratelimit.Shared, userID int64) error {
	if limits == nil {
		return nil
	}
	return probesUsed(limits.Check(ctx, probeKey(userID), addressProbes))
}

// probesUsed says a refusal of the probe limit in words of its own (rate_limited, with its Retry-After).
func probesUsed(err error) error {
	var e *errs.Error
	if !errors.As(err, &e) || e.Code != errs.RateLimited {
		return err
	}
	out := errs.Say(errs.RateLimited, "address_probes")
	out.RetryAfter = e.RetryAfter
	return out
}

// probed counts an address refusal against the shopper's probes, and answers it (rate_limited past them).
func probed(ctx context.Context, limits *ratelimit.Shared, userID int64, err error) error {
	if limits == nil || !errs.Is(err, errs.AddressLimit) {
		return err
	}
	if lerr := limits.Allow(ctx, probeKey(userID), addressProbes); lerr != nil {
		return probesUsed(lerr)
	}
	return err
}
