// Package payment is the payment provider seen from the shop: an interface (create, query, close), an
// HTTP client for it with timeouts, retries and a circuit breaker, and a sandbox provider that stands in
// for WeChat Pay, Alipay or Stripe behind the same interface, over HTTP.
package payment

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"time"
)

// Payment states at the provider.
const (
	StatusOpen      = "open"      // waiting for the payer
	StatusPaid      = "paid"      // the money is in
	StatusCancelled = "cancelled" // the payer pressed Cancel
	StatusClosed    = "closed"    // the shop closed it (order cancelled); it can no longer be paid
	StatusRefunded  = "refunded"  // it was paid, and the money went back to the payer
)

// ErrUnavailable means the provider cannot be reached (it is down, slow, or the breaker is open).
var ErrUnavailable = errors.New("payment provider unavailable")

// ErrNotFound means the provider knows no such payment.
var ErrNotFound = errors.New("payment not found at the provider")

// Request asks the provider for a payment.
type Request struct {
	OrderNo     string `json:"order_no"`
	AmountCents int64  `json:"amount_cents"`
	NotifyURL   string `json:"notify_url"` // where the provider calls back when paid ("" for none)
}

// RefundRequest asks the provider to give a paid payment's money back. RefundID is the shop's own id of
// the refund: the provider refunds a payment once, however often it is asked.
type RefundRequest struct {
	RefundID    string `json:"refund_id"`
	AmountCents int64  `json:"amount_cents"`
	Reason      string `json:"reason"`
}

// ErrNotRefundable means the provider will not refund the payment: it was never paid (open, closed or
// cancelled), or it was refunded for another amount. Asking again will not help; a person must look.
var ErrNotRefundable = errors.New("the provider will not refund this payment")

// Created is a payment the provider made.
type Created struct {
	ID     string `json:"payment_id"`
	PayURL string `json:"pay_url"` // what the payer opens (the QR code's content)
}

// Provider is a payment provider.
type Provider interface {
	Create(ctx context.Context, r Request) (Created, error)
	// Query answers a payment's status.
	Query(ctx context.Context, id string) (string, error)
	// Close stops a payment from being paid and answers its final status: closed, or paid if the money
	// came in first.
	Close(ctx context.Context, id string) (string, error)
	// Refund gives a paid payment's money back and answers StatusRefunded, also when it was refunded
	// before (a retry); a payment that was not paid answers ErrNotRefundable.
	Refund(ctx context.Context, id string, r RefundRequest) (string, error)
}

// Notification is the provider's callback that a payment was paid, or refunded.
type Notification struct {
	PaymentID   string `json:"payment_id"`
	OrderNo     string `json:"order_no"`
	AmountCents int64  `json:"amount_cents"`
	Status      string `json:"status"`
	At          int64  `json:"at"` // unix seconds: a callback older than five minutes is refused as a replay
}

// SignatureHeader carries the HMAC-SHA256 of a callback's body, in hex.
const SignatureHeader = "X-Pay-Signature"

// Sign returns the signature of a callback body.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// ValidProviderID reports whether id can be a provider's payment id as the shop keeps it: 1 to 64
// printable ASCII characters.
func ValidProviderID(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return false
		}
	}
	return true
}

// APIKey is the key the shop sends to the provider's API (Authorization: Bearer …), derived from the
// secret both share: a provider's API serves its merchants only, never anyone who finds its address.
func APIKey(secret string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("provider api key"))
	return hex.EncodeToString(m.Sum(nil))
}

// Verify reports whether sig is the signature of body.
func Verify(secret string, body []byte, sig string) bool {
	want, err := hex.DecodeString(sig)
	if err != nil {
		return false
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return hmac.Equal(m.Sum(nil), want)
}

// Fresh reports whether a notification is recent enough to act on at now.
func (n Notification) Fresh(now time.Time) bool {
	at := time.Unix(n.At, 0)
	return now.Sub(at) < 5*time.Minute && at.Sub(now) < time.Minute
}
