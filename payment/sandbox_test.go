package payment

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"seckill/internal/testenv"
)

// The sandbox refunds a paid payment once, for its whole amount, and tells the shop once; a payment never
// paid, or another amount, is refused.
func TestSandboxRefundsOnce(t *testing.T) {
	var mu sync.Mutex
	var told []Notification
	shop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var n Notification
		if Verify("secret", body, r.Header.Get(SignatureHeader)) && json.Unmarshal(body, &n) == nil {
			mu.Lock()
			told = append(told, n)
			mu.Unlock()
		}
	}))
	defer shop.Close()
	sb := NewSandbox(testenv.Redis(t), "http://sandbox", "secret", shop.URL, time.Now)
	ctx := context.Background()
	p, err := sb.Create(ctx, Request{OrderNo: "SK1", AmountCents: 990})
	if err != nil {
		t.Fatal(err)
	}
	req := RefundRequest{RefundID: "RF1", AmountCents: 990, Reason: "test"}
	if _, err := sb.Refund(ctx, p.ID, req); !errors.Is(err, ErrNotRefundable) {
		t.Errorf("refunding an open payment: %v, want ErrNotRefundable", err)
	}
	if _, err := sb.Confirm(ctx, p.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := sb.Refund(ctx, p.ID, RefundRequest{RefundID: "RF1", AmountCents: 500}); !errors.Is(err, ErrNotRefundable) {
		t.Errorf("refunding part of it: %v, want ErrNotRefundable", err)
	}
	for try := 0; try < 3; try++ {
		if st, err := sb.Refund(ctx, p.ID, req); err != nil || st != StatusRefunded {
			t.Fatalf("refund, try %d: %q %v", try, st, err)
		}
	}
	if st, _ := sb.Query(ctx, p.ID); st != StatusRefunded {
		t.Errorf("after the refund the payment is %s", st)
	}
	if _, err := sb.Refund(ctx, "sbx_000000000000000000000000", req); !IsNotFound(err) {
		t.Errorf("refunding an unknown payment: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(told) != 2 || told[0].Status != StatusPaid || told[1].Status != StatusRefunded || told[1].PaymentID != p.ID {
		t.Errorf("the shop was told %+v, want paid then refunded once", told)
	}
}

// The client tells a refusal (the provider answered, and will answer the same) from a provider that
// could not be reached.
func TestClientRefundRefusedOrUnavailable(t *testing.T) {
	// Only the provider's "this payment cannot be refunded" is final; a key it does not take, or a request
	// it does not like, is the shop's to fix: the refund is asked for again.
	for status, want := range map[int]error{http.StatusConflict: ErrNotRefundable, http.StatusBadGateway: ErrUnavailable,
		http.StatusUnauthorized: ErrRefused, http.StatusBadRequest: ErrRefused, http.StatusNotFound: ErrNotFound} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(status) }))
		_, err := NewClient(srv.URL, "key", time.Second).Refund(context.Background(), "sbx_1", RefundRequest{RefundID: "RF1", AmountCents: 1})
		srv.Close()
		if !errors.Is(err, want) || (want != ErrRefused && want != ErrUnavailable && errors.Is(err, ErrUnavailable)) {
			t.Errorf("a provider answering %d: %v, want %v", status, err, want)
		}
	}
}

// A reason is cut to what the provider takes, at a character's boundary.
func TestRefundReasonIsCutForTheProvider(t *testing.T) {
	var got RefundRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewDecoder(r.Body).Decode(&got)
		w.Write([]byte(`{"status":"refunded"}`))
	}))
	defer srv.Close()
	long := strings.Repeat("退", 1000) // 3,000 bytes
	if _, err := NewClient(srv.URL, "key", time.Second).Refund(context.Background(), "sbx_1", RefundRequest{RefundID: "RF1", AmountCents: 1, Reason: long}); err != nil {
		t.Fatal(err)
	}
	if len(got.Reason) > maxRefundReasonBytes || !utf8.ValidString(got.Reason) || !strings.HasPrefix(long, got.Reason) || len(got.Reason) < maxRefundReasonBytes-3 {
		t.Errorf("the provider got a reason of %d bytes (valid UTF-8 %v)", len(got.Reason), utf8.ValidString(got.Reason))
	}
}
