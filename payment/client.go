package payment

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/cenkalti/backoff/v5"
	"github.com/sony/gobreaker/v2"
)

// Client is the shop's side of a provider's HTTP API (this project's own protocol, which the sandbox
// speaks): every call has a timeout, reads are retried, and a circuit breaker stops calling a provider
// that keeps failing, so that a dead provider costs the shop nothing but a quick ErrUnavailable.
type Client struct {
	base  string
	key   string // the API key, sent as a bearer token
	http  *http.Client
	guard *Guard
}

// NewClient talks to the provider at base (the sandbox's /sandbox, say) with its API key and a per-call
// timeout.
func NewClient(base, key string, timeout time.Duration) *Client {
	return &Client{base: base, key: key, http: &http.Client{Timeout: timeout}, guard: NewGuard("payment")}
}

// BreakerState is the breaker's state: closed, half-open or open.
func (c *Client) BreakerState() string { return c.guard.State() }

// Guard wraps a provider's calls, whatever speaks them (this package's Client, a provider's SDK): a call
// the provider did not answer is retried with a growing wait, and a circuit breaker stops calling a
// provider that keeps failing (five failures in a row open it for ten seconds), so that a dead provider
// costs the shop a quick ErrUnavailable.
type Guard struct {
	breaker *gobreaker.CircuitBreaker[struct{}]
}

// NewGuard makes a guard; name names its breaker in logs.
func NewGuard(name string) *Guard {
	return &Guard{breaker: gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{
		Name:        name,
		Timeout:     10 * time.Second, // open this long before letting one call through
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= 5 },
		IsSuccessful: func(err error) bool {
			// An answer, even "unknown" or "bad request", means the provider works.
			return err == nil || errors.Is(err, ErrNotFound) || errors.Is(err, errRefused) || errors.Is(err, ErrNotRefundable)
		},
		// A call we gave up on (shutdown, a caller's deadline) says nothing about the provider.
		IsExcluded: func(err error) bool {
			return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
		},
	})}
}

// State is the breaker's state: closed, half-open or open.
func (g *Guard) State() string { return g.breaker.State().String() }

// ErrRefused is a provider's answer (a 4xx) that it will not do what was asked of this payment: it works,
// and asking again the same way gets the same answer. It comes wrapped in ErrUnavailable too (the caller
// could not get what it needed), so that a caller that cannot tell them apart waits and tries again.
var ErrRefused = errors.New("provider refused the request")

// errRefused is ErrRefused, by its old name.
var errRefused = ErrRefused

// refusal is a provider's 4xx answer, with its status: errors.Is(err, errRefused).
type refusal struct {
	status int
	body   []byte
}

func (r *refusal) Error() string        { return fmt.Sprintf("%v: %d %s", errRefused, r.status, r.body) }
func (r *refusal) Is(target error) bool { return target == errRefused }

type statusBody struct {
	Status string `json:"status"`
}

// Do runs one call of the provider's API through the breaker; tries > 1 retries it when the provider did
// not answer. fn answers nil, an error wrapping ErrNotFound or ErrNotRefundable (the provider's word:
// no retry, returned as it is), one wrapping ErrRefused (the provider refuses this request: no retry,
// returned wrapped in ErrUnavailable too), or any other error (the provider did not answer: retried).
// Whatever else fails comes back wrapped in ErrUnavailable, or as the context's error.
func (g *Guard) Do(ctx context.Context, tries int, fn func(ctx context.Context) error) error {
	// Retried with waits of about 200 ms, 400 ms, ... between tries.
	wait := &backoff.ExponentialBackOff{InitialInterval: 200 * time.Millisecond, RandomizationFactor: 0.2, Multiplier: 2, MaxInterval: 2 * time.Second}
	_, err := backoff.Retry(ctx, func() (struct{}, error) {
		_, err := g.breaker.Execute(func() (struct{}, error) { return struct{}{}, fn(ctx) })
		switch {
		case err == nil, errors.Is(err, ErrNotFound), errors.Is(err, ErrNotRefundable):
			return struct{}{}, backoff.Permanent(err)
		case errors.Is(err, errRefused), ctx.Err() != nil:
			// No retry: the same request gets the same answer.
			return struct{}{}, backoff.Permanent(fmt.Errorf("%w: %w", ErrUnavailable, err))
		case errors.Is(err, gobreaker.ErrOpenState), errors.Is(err, gobreaker.ErrTooManyRequests):
			return struct{}{}, backoff.Permanent(fmt.Errorf("%w: circuit open", ErrUnavailable))
		}
		return struct{}{}, err
	}, backoff.WithBackOff(wait), backoff.WithMaxTries(uint(max(tries, 1))))
	// Retry hands back a permanent error still wrapped when it came on the last try.
	if pe := (*backoff.PermanentError)(nil); errors.As(err, &pe) {
		err = pe.Err
	}
	switch {
	case err == nil, errors.Is(err, ErrNotFound), errors.Is(err, ErrNotRefundable), errors.Is(err, ErrUnavailable):
		return err
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}

// call sends one request through the guard; tries > 1 retries it when the provider did not answer.
func (c *Client) call(ctx context.Context, method, path string, body any, tries int) ([]byte, error) {
	var payload []byte
	if body != nil {
		payload, _ = json.Marshal(body)
	}
	var out []byte
	err := c.guard.Do(ctx, tries, func(ctx context.Context) (err error) {
		out, err = c.once(ctx, method, path, payload)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c *Client) once(ctx context.Context, method, path string, payload []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(payload))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.key)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, ErrNotFound
	case resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusRequestTimeout && resp.StatusCode != http.StatusTooManyRequests:
		return nil, &refusal{resp.StatusCode, b}
	case resp.StatusCode >= 300:
		return nil, fmt.Errorf("provider answered %d", resp.StatusCode)
	}
	return b, nil
}

// Create asks for a payment. It is retried: the provider gives an order's open payment back, so a retry
// makes no second one.
func (c *Client) Create(ctx context.Context, r Request) (Created, error) {
	b, err := c.call(ctx, http.MethodPost, "/api/payments", r, 2)
	if err != nil {
		return Created{}, err
	}
	var out Created
	if err := json.Unmarshal(b, &out); err != nil || out.ID == "" {
		return Created{}, fmt.Errorf("%w: bad answer to create", ErrUnavailable)
	}
	return out, nil
}

// Query answers a payment's status.
func (c *Client) Query(ctx context.Context, id string) (string, error) {
	b, err := c.call(ctx, http.MethodGet, "/api/payments/"+id, nil, 3)
	if err != nil {
		return "", err
	}
	var out statusBody
	if err := json.Unmarshal(b, &out); err != nil || out.Status == "" {
		return "", fmt.Errorf("%w: bad answer to query", ErrUnavailable)
	}
	return out.Status, nil
}

// Close closes a payment and answers its final status.
func (c *Client) Close(ctx context.Context, id string) (string, error) {
	b, err := c.call(ctx, http.MethodPost, "/api/payments/"+id+"/close", nil, 3)
	if err != nil {
		return "", err
	}
	var out statusBody
	if err := json.Unmarshal(b, &out); err != nil || out.Status == "" {
		return "", fmt.Errorf("%w: bad answer to close", ErrUnavailable)
	}
	return out.Status, nil
}

// Refund asks for a paid payment's money back. It is retried: the provider refunds a payment once. Only
// the provider's word that the payment cannot be refunded (409) answers ErrNotRefundable; any other
// refusal (a key it does not take, a request it does not like) is the shop's to fix and answers
// ErrUnavailable, so that the refund stays pending and is asked for again.
func (c *Client) Refund(ctx context.Context, id string, r RefundRequest) (string, error) {
	r.Reason = TruncateUTF8(r.Reason, maxRefundReasonBytes)
	b, err := c.call(ctx, http.MethodPost, "/api/payments/"+id+"/refund", r, 3)
	var ref *refusal
	if errors.As(err, &ref) && ref.status == http.StatusConflict {
		return "", fmt.Errorf("%w: %v", ErrNotRefundable, err)
	}
	if err != nil {
		return "", err
	}
	var out statusBody
	if err := json.Unmarshal(b, &out); err != nil || out.Status == "" {
		return "", fmt.Errorf("%w: bad answer to refund", ErrUnavailable)
	}
	return out.Status, nil
}

// TruncateUTF8 cuts s to at most n bytes, at a character's boundary.
func TruncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

var _ Provider = (*Client)(nil)
