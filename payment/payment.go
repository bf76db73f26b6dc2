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
	"fmt"
	"net/http"
	"time"
)

// Payment states at the provider.
const (
	StatusOpen      = "open"      // waiting for the payer
	StatusPaid      = "paid"      // the money is in
	StatusCancelled = "cancelled" // the payer pressed Cancel
	StatusClosed    = "closed"    // the shop closed it (order cancelled); it can no longer be paid
	StatusRefunded  = "refunded"  // it was paid, and the money went back to the payer
	StatusRefunding = "refunding" // a refund was asked for and the provider is making it (ask again later)
)

// ErrUnavailable means the provider cannot be reached (it is down, slow, or the breaker is open).
var ErrUnavailable = errors.New("payment provider unavailable")

// ErrPaying means the payer is paying right now (WeChat Pay's USERPAYING): the payment can be neither
// closed nor taken for unpaid yet. It is an ErrUnavailable: ask again later.
var ErrPaying = fmt.Errorf("%w: the payer is paying right now", ErrUnavailable)

// ErrNotFound means the provider knows no such payment.
var ErrNotFound = errors.New("payment not found at the provider")

// Request asks the provider for a payment.
type Request struct {
	OrderNo     string `json:"order_no"`
	AmountCents int64  `json:"amount_cents"` // in the shop's cents: fen, for the providers that take CNY
	NotifyURL   string `json:"notify_url"`   // where the provider calls back when paid ("" for none)
	// PaymentNo is the shop's own number of this payment (a provider's out_trade_no), 6 to 32 letters,
	// digits or "_" (ValidPaymentNo): asked again with the same number, a provider gives the same payment
	// back. Providers that make their own ids (the sandbox, the http protocol) ignore it.
	PaymentNo string `json:"payment_no,omitempty"`
	// Subject says what is paid for (the item's name), as the payer's app shows it: at most 120 bytes of
	// UTF-8 (the providers' limits are 127 and 256).
	Subject string `json:"subject,omitempty"`
	// ExpiresAt is when the payment must stop being payable (the order's deadline): sent to the provider,
	// which closes the payment itself then. Zero for the provider's default.
	ExpiresAt time.Time `json:"expires_at,omitzero"`
}

// RefundRequest asks the provider to give a paid payment's money back. RefundID is the shop's own id of
// the refund: the provider refunds a payment once, however often it is asked.
type RefundRequest struct {
	RefundID    string `json:"refund_id"`
	AmountCents int64  `json:"amount_cents"`
	Reason      string `json:"reason"`
	// TotalCents is the paid payment's whole amount (WeChat Pay asks for it beside the refund's).
	TotalCents int64 `json:"total_cents,omitempty"`
	// NotifyURL is where the provider calls back when the refund is done, for providers whose refunds
	// take time ("" for none).
	NotifyURL string `json:"notify_url,omitempty"`
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
	// before (a retry), or StatusRefunding while the provider is still making it (asked again with the
	// same RefundID, it answers how far it got); a payment that was not paid answers ErrNotRefundable.
	Refund(ctx context.Context, id string, r RefundRequest) (string, error)
}

// Notifier is a provider that tells the shop its news by signed HTTP callbacks
// (POST /api/payments/notify/{provider}).
type Notifier interface {
	// ReadNotify checks a callback as the provider's documentation says (its signature with the
	// provider's key, its freshness, its decryption) and reads it. Anything not genuine, not fresh or not
	// understood answers an error, and the shop changes nothing.
	ReadNotify(ctx context.Context, header http.Header, body []byte) (Notification, error)
	// Ack is the answer the provider expects to a callback: taken (ok), or to be sent again later.
	Ack(ok bool) (status int, contentType string, body []byte)
}

// Notification is the provider's callback that a payment was paid, or refunded.
type Notification struct {
	PaymentID   string `json:"payment_id"`         // the id Create answered (the shop's PaymentNo for WeChat Pay and Alipay)
	OrderNo     string `json:"order_no,omitempty"` // the shop's order, for providers that say it ("" otherwise)
	AmountCents int64  `json:"amount_cents"`       // the payment's whole amount, in cents
	Status      string `json:"status"`             // StatusPaid or StatusRefunded (others are taken and change nothing)
	// At is when the provider sent it, in unix seconds. The http protocol's callbacks older than five
	// minutes are refused as replays; WeChat Pay's SDK refuses its own past five minutes; Alipay resends a
	// notification for a day, so its are taken at any age: a replay changes nothing (news is recorded once).
	At       int64  `json:"at"`
	RefundID string `json:"refund_id,omitempty"` // the shop's RefundID, for a refund's news when the provider says it
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
