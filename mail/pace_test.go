package mail_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"seckill/internal/testenv"
	"seckill/mail"
	"seckill/models"
	"seckill/ratelimit"
)

// stamps is a relay that notes when it took each mail.
type stamps struct {
	mu sync.Mutex
	at []time.Time
}

func (s *stamps) Send(_ context.Context, mails []models.Mail) []error {
	s.mu.Lock()
	for range mails {
		s.at = append(s.at, time.Now())
	}
	s.mu.Unlock()
	return make([]error, len(mails))
}

// Two workers sharing the rate in Redis hand the relay MAIL_RATE mails a second in all: over any span
// from the first mail, at most the burst plus the rate times the span (each alone would send that much).
func TestTwoWorkersTogetherKeepTheRate(t *testing.T) {
	db, rdb, clk := testenv.Postgres(t), testenv.Redis(t), newClock()
	const perSecond, burst = 20, 4
	relay := &stamps{}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var msgs []mail.Message
	for i := range 200 {
		msgs = append(msgs, verifyMsg(fmt.Sprintf("p%d@example.com", i), "en"))
	}
	if err := newQueue(db, nil, clk).Enqueue(context.Background(), nil, msgs...); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	started := time.Now()
	for range 2 {
		q := newQueue(db, relay, clk)
		q.Rate, q.Batch, q.Interval = perSecond, burst, 20*time.Millisecond
		q.Pace = ratelimit.NewPace(rdb, "test:mail:pace", perSecond, q.PaceBurst(), log)
		q.Prepare()
		wg.Add(1)
		go func() { defer wg.Done(); _ = q.Run(ctx) }()
	}
	time.Sleep(2 * time.Second)
	cancel()
	wg.Wait()

	relay.mu.Lock()
	defer relay.mu.Unlock()
	if len(relay.at) < 20 {
		t.Fatalf("two workers sent %d mails in 2 s at 20 a second", len(relay.at))
	}
	// Every prefix of the sends keeps the rate: the n-th mail no sooner than (n - burst) / rate after the
	// start (a few milliseconds' grace for the clocks of Redis and of this test).
	for i, at := range relay.at {
		earliest := started.Add(time.Duration(float64(i+1-burst) / perSecond * float64(time.Second))).Add(-20 * time.Millisecond)
		if at.Before(earliest) {
			t.Fatalf("mail %d of %d went %v after the start, before %v: two workers passed %d a second together",
				i+1, len(relay.at), at.Sub(started), earliest.Sub(started), perSecond)
		}
	}
	t.Logf("two workers sent %d mails in %v at %d a second shared", len(relay.at), relay.at[len(relay.at)-1].Sub(started), perSecond)
}
