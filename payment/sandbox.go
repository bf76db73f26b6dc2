package payment

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/auth"
)

// Sandbox is the stand-in provider's own side: its payments live in Redis (so every instance serves the
// same ones), a payer confirms or cancels on its page, and it calls the shop back with a signed
// notification. The shop talks to it only over HTTP, through Client.
type Sandbox struct {
	rdb       redis.UniversalClient
	baseURL   string // where the sandbox is served, for pay_url
	secret    string // signs callbacks
	notifyURL string // the shop's callback address, fixed by the operator: never one a caller names
	http      *http.Client
	now       func() time.Time
}

// NewSandbox returns the sandbox served at baseURL (for example https://shop.example/sandbox), which signs
// its callbacks with secret and sends them to notifyURL ("" for none: the shop polls).
func NewSandbox(rdb redis.UniversalClient, baseURL, secret, notifyURL string, now func() time.Time) *Sandbox {
	return &Sandbox{rdb: rdb, baseURL: baseURL, secret: secret, notifyURL: notifyURL,
		http: &http.Client{Timeout: 5 * time.Second}, now: now}
}

// The sandbox's limits on what a payment holds: an order number as the shop makes them, and an amount
// no flash sale reaches.
const (
	maxOrderNo     = 64
	maxAmountCents = 100_000_000_000 // ¥1,000,000,000
	sandboxTTL     = 24 * time.Hour
)

// ErrBadRequest is a payment request outside the sandbox's limits.
var ErrBadRequest = errors.New("sandbox: order_no must be 1 to 64 letters, digits, '-' or '_', and amount_cents from 1 to 100000000000")

// ValidRequest reports whether r is within the sandbox's limits.
func ValidRequest(r Request) bool {
	if len(r.OrderNo) == 0 || len(r.OrderNo) > maxOrderNo || r.AmountCents <= 0 || r.AmountCents > maxAmountCents {
		return false
	}
	for _, c := range r.OrderNo {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// validID reports whether id can be a sandbox payment's id ("sbx_" and 24 hex digits), so that junk
// never reaches Redis.
func validID(id string) bool {
	if len(id) != 28 || id[:4] != "sbx_" {
		return false
	}
	for _, c := range id[4:] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// SandboxPayment is one payment in the sandbox.
type SandboxPayment struct {
	ID          string
	OrderNo     string
	AmountCents int64
	Status      string
	CreatedAt   time.Time
}

func sandboxKey(id string) string { return "sandbox:pay:{" + id + "}" }

// swapScript points an order at a new payment only if it still points at the one the caller saw.
var swapScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[3])
  return 1
end
return 0`)

// Create makes a payment; the same order asking again, even at the same moment, gets its open payment
// back. An order points at its current payment; a new one replaces it only once it is no longer open.
func (s *Sandbox) Create(ctx context.Context, r Request) (Created, error) {
	if !ValidRequest(r) {
		return Created{}, ErrBadRequest
	}
	const ttl = sandboxTTL
	byOrder := "sandbox:order:{" + r.OrderNo + "}"
	for try := 0; try < 50; try++ {
		tok, err := auth.RandomToken(12)
		if err != nil {
			return Created{}, err
		}
		id := "sbx_" + tok
		// The payment first, then the pointer: a pointer never names a payment that does not exist.
		err = s.rdb.HSet(ctx, sandboxKey(id), map[string]any{
			"order_no": r.OrderNo, "amount": r.AmountCents, "status": StatusOpen, "created": s.now().Unix(),
		}).Err()
		if err != nil {
			return Created{}, err
		}
		if err := s.rdb.Expire(ctx, sandboxKey(id), ttl).Err(); err != nil {
			return Created{}, err
		}
		ok, err := s.rdb.SetNX(ctx, byOrder, id, ttl).Result()
		if err != nil {
			return Created{}, err
		}
		if ok {
			return Created{ID: id, PayURL: s.payURL(id)}, nil
		}
		// The order has a payment already: ours is not needed unless that one can no longer be paid.
		cur, err := s.rdb.Get(ctx, byOrder).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return Created{}, err
		}
		if p, err := s.Get(ctx, cur); err == nil && p.Status == StatusOpen && p.AmountCents == r.AmountCents {
			s.rdb.Del(ctx, sandboxKey(id))
			return Created{ID: cur, PayURL: s.payURL(cur)}, nil
		}
		swapped, err := swapScript.Run(ctx, s.rdb, []string{byOrder}, cur, id, int(ttl.Seconds())).Int()
		if err != nil {
			return Created{}, err
		}
		if swapped == 1 {
			return Created{ID: id, PayURL: s.payURL(id)}, nil
		}
		s.rdb.Del(ctx, sandboxKey(id)) // someone else replaced it first: look again
	}
	return Created{}, fmt.Errorf("sandbox: order %s keeps changing", r.OrderNo)
}

func (s *Sandbox) payURL(id string) string { return s.baseURL + "/pay/" + id }

// Get reads a payment.
func (s *Sandbox) Get(ctx context.Context, id string) (*SandboxPayment, error) {
	if !validID(id) {
		return nil, ErrNotFound
	}
	f, err := s.rdb.HGetAll(ctx, sandboxKey(id)).Result()
	if err != nil {
		return nil, err
	}
	if len(f) == 0 {
		return nil, ErrNotFound
	}
	amount, _ := strconv.ParseInt(f["amount"], 10, 64)
	created, _ := strconv.ParseInt(f["created"], 10, 64)
	return &SandboxPayment{ID: id, OrderNo: f["order_no"], AmountCents: amount, Status: f["status"], CreatedAt: time.Unix(created, 0)}, nil
}

// transitions a payment from open to status, atomically; it answers the status it ends in.
var moveScript = redis.NewScript(`
local st = redis.call('HGET', KEYS[1], 'status')
if not st then return '' end
if st == 'open' then
  redis.call('HSET', KEYS[1], 'status', ARGV[1])
  return ARGV[1]
end
return st`)

func (s *Sandbox) move(ctx context.Context, id, to string) (string, error) {
	if !validID(id) {
		return "", ErrNotFound
	}
	st, err := moveScript.Run(ctx, s.rdb, []string{sandboxKey(id)}, to).Text()
	if err != nil {
		return "", err
	}
	if st == "" {
		return "", ErrNotFound
	}
	return st, nil
}

// Query answers a payment's status.
func (s *Sandbox) Query(ctx context.Context, id string) (string, error) {
	p, err := s.Get(ctx, id)
	if err != nil {
		return "", err
	}
	return p.Status, nil
}

// Close closes an open payment; one paid already stays paid.
func (s *Sandbox) Close(ctx context.Context, id string) (string, error) {
	return s.move(ctx, id, StatusClosed)
}

// Cancel is the payer pressing Cancel.
func (s *Sandbox) Cancel(ctx context.Context, id string) (string, error) {
	return s.move(ctx, id, StatusCancelled)
}

// Confirm is the payer pressing Pay: the money comes in, and the shop is called back (a failed callback
// is no loss: the shop also polls).
func (s *Sandbox) Confirm(ctx context.Context, id string) (string, error) {
	st, err := s.move(ctx, id, StatusPaid)
	if err != nil || st != StatusPaid {
		return st, err
	}
	p, err := s.Get(ctx, id)
	if err == nil && s.notifyURL != "" {
		s.notify(ctx, p, StatusPaid)
	}
	return st, nil
}

// refundScript refunds a paid payment once: it answers "refunded!" the first time (the shop is to be
// told), "refunded" after, "amount" for another amount, or the status of a payment never paid.
var refundScript = redis.NewScript(`
local st = redis.call('HGET', KEYS[1], 'status')
if not st then return '' end
if st ~= 'paid' then return st end
if redis.call('HGET', KEYS[1], 'amount') ~= ARGV[2] then return 'amount' end
redis.call('HSET', KEYS[1], 'status', 'refunded', 'refund_id', ARGV[1], 'refunded', ARGV[3])
return 'refunded!'`)

// maxRefundReasonBytes is the longest reason a refund request carries (the client cuts a longer one).
const maxRefundReasonBytes = 2000

// ValidRefund reports whether r is within the sandbox's limits: a refund id of 1 to 64 printable ASCII
// characters, an amount from 1 cent, a reason of MaxRefundReasonBytes at most.
func ValidRefund(r RefundRequest) bool {
	return ValidProviderID(r.RefundID) && r.AmountCents > 0 && r.AmountCents <= maxAmountCents && len(r.Reason) <= maxRefundReasonBytes
}

// Refund gives a paid payment's money back, once (asked again, it answers refunded and does nothing),
// and calls the shop back. The whole amount only: a payment not paid, or another amount, is refused.
func (s *Sandbox) Refund(ctx context.Context, id string, r RefundRequest) (string, error) {
	if !validID(id) {
		return "", ErrNotFound
	}
	if !ValidRefund(r) {
		return "", fmt.Errorf("%w: a bad refund request", ErrNotRefundable)
	}
	st, err := refundScript.Run(ctx, s.rdb, []string{sandboxKey(id)}, r.RefundID, strconv.FormatInt(r.AmountCents, 10), s.now().Unix()).Text()
	switch {
	case err != nil:
		return "", err
	case st == "":
		return "", ErrNotFound
	case st == StatusRefunded:
		return StatusRefunded, nil
	case st != StatusRefunded+"!":
		return "", fmt.Errorf("%w: the payment is %s", ErrNotRefundable, st)
	}
	if p, err := s.Get(ctx, id); err == nil && s.notifyURL != "" {
		s.notify(ctx, p, StatusRefunded)
	}
	return StatusRefunded, nil
}

func (s *Sandbox) notify(ctx context.Context, p *SandboxPayment, status string) {
	body, _ := json.Marshal(Notification{PaymentID: p.ID, OrderNo: p.OrderNo, AmountCents: p.AmountCents, Status: status, At: s.now().Unix()})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.notifyURL, bytes.NewReader(body))
	if err != nil {
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(SignatureHeader, Sign(s.secret, body))
	if resp, err := s.http.Do(req); err == nil {
		resp.Body.Close()
	}
}

var _ Provider = (*Sandbox)(nil)

// IsNotFound reports whether err means the payment is unknown.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }
