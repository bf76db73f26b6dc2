package jobs

import (
	"context"
	"testing"
	"time"

	"seckill/models"
	"seckill/payment"
)

// The poll asks WeChat Pay and Alipay about a payment less often as it ages, and the sandbox's every
// round: thousands of open payments after a sale stay within the providers' query limits.
func TestThePollAsksAboutOldPaymentsLessOften(t *testing.T) {
	now := time.Date(2026, 11, 26, 20, 0, 0, 0, time.UTC)
	p := &PaymentPoll{Now: func() time.Time { return now }}
	for _, tt := range []struct {
		provider      string
		age, lastSeen time.Duration
		due           bool
	}{
		{payment.NameWeChat, 30 * time.Second, 2 * time.Second, true}, // its first minute: every round
		{payment.NameWeChat, 5 * time.Minute, 10 * time.Second, false},
		{payment.NameAlipay, 5 * time.Minute, 15 * time.Second, true},
		{payment.NameAlipay, 12 * time.Minute, 30 * time.Second, false}, // past ten minutes: every minute
		{payment.NameWeChat, 12 * time.Minute, time.Minute, true},
		{payment.NameSandbox, 12 * time.Minute, time.Second, true},
		{"", 12 * time.Minute, time.Second, true},
	} {
		pay := &models.Payment{Provider: tt.provider, CreatedAt: now.Add(-tt.age), UpdatedAt: now.Add(-tt.lastSeen)}
		if got := p.due(pay); got != tt.due {
			t.Errorf("a %s payment %v old, last asked about %v ago: due %v, want %v", tt.provider, tt.age, tt.lastSeen, got, tt.due)
		}
	}
	// At most pollRate queries a second to one provider, whatever the backlog: past a burst of pollRate,
	// the next waits (a caller that cannot wait 1/pollRate s is told at once); the sandbox is not paced.
	ctx := context.Background()
	for i := 0; i < pollRate; i++ {
		if err := p.pace(ctx, payment.NameAlipay); err != nil {
			t.Fatal(err)
		}
	}
	short, cancel := context.WithTimeout(ctx, time.Second/(4*pollRate))
	defer cancel()
	if err := p.pace(short, payment.NameAlipay); err == nil {
		t.Error("a query past the burst went out without waiting")
	}
	if err := p.pace(short, payment.NameWeChat); err != nil {
		t.Errorf("WeChat Pay waited for Alipay's turn: %v", err)
	}
	for i := 0; i < 10*pollRate; i++ {
		if err := p.pace(short, payment.NameSandbox); err != nil {
			t.Fatalf("the sandbox's queries are paced: %v", err)
		}
	}
}
