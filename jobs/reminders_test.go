package jobs

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"seckill/internal/testenv"
	"seckill/mail"
	"seckill/models"
)

// remindedSale makes a first-come sale starting at starts and n shoppers with verified addresses who
// asked to be reminded of it (in English, and every third in Chinese).
func remindedSale(t *testing.T, db *gorm.DB, starts time.Time, n int) (models.Activity, []models.User) {
	t.Helper()
	a, _ := testenv.Sale(t, db, 10, starts, starts.Add(time.Hour))
	users := testenv.Users(t, db, fmt.Sprintf("r%d_", a.ID), n)
	for i, u := range users {
		if err := db.Exec(`UPDATE users SET email = ?, email_verified_at = ? WHERE id = ?`, fmt.Sprintf("%s@example.com", u.Username), starts.Add(-24*time.Hour), u.ID).Error; err != nil {
			t.Fatal(err)
		}
		lang := "en"
		if i%3 == 2 {
			lang = "zh"
		}
		if _, err := models.AddReminder(context.Background(), db, u.ID, a.ID, lang, starts.Add(-24*time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	return a, users
}

func reminderJob(db *gorm.DB, rate float64) *Reminders {
	q := &mail.Queue{DB: db, Now: time.Now, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	return &Reminders{DB: db, Mail: q, Links: mail.NewUnsubscribes("a secret of the tests, long enough"), BaseURL: "https://shop.test",
		Rate: rate, Interval: 5 * time.Second, Margin: time.Minute, Before: 10 * time.Minute, Log: q.Log}
}

type queuedMail struct {
	Kind, ToAddr, Lang, Subject, TextBody string
	NextAt                                time.Time
}

func queuedMails(t *testing.T, db *gorm.DB) []queuedMail {
	t.Helper()
	var out []queuedMail
	if err := db.Raw(`SELECT kind, to_addr, lang, subject, text_body, next_at FROM mails ORDER BY next_at, id`).Scan(&out).Error; err != nil {
		t.Fatal(err)
	}
	return out
}

// A sale's reminders begin at its moment less count/rate less the margin, go at the rate (each mail
// due 1/rate after the one before), never more than rate × interval a round, and all are queued before
// the moment.
func TestRemindersAreSpreadWithinTheRateAndQueuedBeforeTheMoment(t *testing.T) {
	for _, d := range []struct {
		name string
		open func(testing.TB) *gorm.DB
	}{{"postgres", testenv.Postgres}, {"sqlite", testenv.SQLite}} { // SQLite: demo mode
		t.Run(d.name, func(t *testing.T) { remindersAreSpread(t, d.open(t)) })
	}
}

func remindersAreSpread(t *testing.T, db *gorm.DB) {
	starts := time.Now().Add(2 * time.Hour).Truncate(time.Second)
	a, users := remindedSale(t, db, starts, 120)
	r := reminderJob(db, 10) // 120 at 10 a second: 12 s, and a minute's margin
	moment := starts.Add(-10 * time.Minute)
	begin := moment.Add(-12*time.Second - time.Minute)
	ctx := context.Background()

	if err := r.Round(ctx, begin.Add(-time.Second), nil); err != nil {
		t.Fatal(err)
	}
	if got := queuedMails(t, db); len(got) != 0 {
		t.Fatalf("%d mails queued a second before the beginning; want none", len(got))
	}
	at := begin.Add(500 * time.Millisecond)
	if err := r.Round(ctx, at, nil); err != nil {
		t.Fatal(err)
	}
	got := queuedMails(t, db)
	if len(got) != 6 { // half a second at 10 a second, and the first
		t.Fatalf("half a second after the beginning %d are queued; want 6", len(got))
	}
	for i, m := range got {
		if want := at.Add(time.Duration(i) * 100 * time.Millisecond); !m.NextAt.Equal(want) {
			t.Errorf("mail %d is due at %v; want %v (a tenth of a second after the one before)", i, m.NextAt, want)
		}
	}
	// Late (a worker was down): a round queues at most rate × interval, spread over the interval.
	if err := r.Round(ctx, moment.Add(-30*time.Second), nil); err != nil {
		t.Fatal(err)
	}
	if got := queuedMails(t, db); len(got) != 6+50 {
		t.Fatalf("a late round brought the queue to %d; want 56 (50 a round)", len(got))
	}
	for _, step := range []time.Duration{-25 * time.Second, -20 * time.Second} {
		if err := r.Round(ctx, moment.Add(step), nil); err != nil {
			t.Fatal(err)
		}
	}
	got = queuedMails(t, db)
	if len(got) != len(users) {
		t.Fatalf("%d mails queued before the moment; want one for each of %d reminders", len(got), len(users))
	}
	seen := map[string]bool{}
	for _, m := range got {
		if m.Kind != mail.KindRemindStart || seen[m.ToAddr] || !m.NextAt.Before(moment) {
			t.Errorf("mail %+v: want one start reminder to each, due before %v", m, moment)
		}
		seen[m.ToAddr] = true
	}
	var left int64
	db.Raw(`SELECT count(*) FROM reminders WHERE activity_id = ? AND start_sent_at IS NULL`, a.ID).Scan(&left)
	if left != 0 {
		t.Errorf("%d reminders are not marked sent", left)
	}
	// The words are the shopper's language's, with the link to the item and to unsubscribe.
	for _, m := range got {
		if m.Lang == "zh" && m.Subject != "“Test sale”将于 "+mail.When("zh", starts)+" 开始" {
			t.Errorf("a Chinese reminder's subject is %q", m.Subject)
		}
		if m.Lang == "en" && m.Subject != "“Test sale” starts at "+mail.When("en", starts) {
			t.Errorf("an English reminder's subject is %q", m.Subject)
		}
	}
}

// Two workers rounding at once, and rounds after them (a restart), queue each reminder exactly once.
func TestTwoWorkersQueueEachReminderOnce(t *testing.T) {
	db := testenv.Postgres(t)
	starts := time.Now().Add(2 * time.Hour).Truncate(time.Second)
	remindedSale(t, db, starts, 500)
	now := starts.Add(-10*time.Minute + time.Second) // late: everything is due
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := reminderJob(db, 1000) // 5,000 a round: one round takes them all
			errs <- r.Round(ctx, now, nil)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := reminderJob(db, 1000).Round(ctx, now.Add(time.Second), nil); err != nil {
		t.Fatal(err)
	}
	var rows []struct {
		ToAddr string
		N      int
	}
	db.Raw(`SELECT to_addr, count(*) AS n FROM mails GROUP BY to_addr`).Scan(&rows)
	if len(rows) != 500 {
		t.Fatalf("%d shoppers got mail; want 500", len(rows))
	}
	for _, r := range rows {
		if r.N != 1 {
			t.Errorf("%s got %d reminders; want 1", r.ToAddr, r.N)
		}
	}
}

// A sale paused or ended early, a reminder deleted, an address not verified: nothing is queued for them.
func TestNoReminderForAStoppedSaleOrADeletedReminder(t *testing.T) {
	db := testenv.Postgres(t)
	ctx := context.Background()
	starts := time.Now().Add(2 * time.Hour).Truncate(time.Second)
	ended, _ := remindedSale(t, db, starts, 2)
	paused, _ := remindedSale(t, db, starts, 2)
	running, users := remindedSale(t, db, starts, 3)
	db.Exec(`UPDATE activities SET ended_early = true WHERE id = ?`, ended.ID)
	db.Exec(`UPDATE activities SET paused_at = ? WHERE id = ?`, starts.Add(-time.Hour), paused.ID)
	if err := models.DeleteReminder(ctx, db, users[0].ID, running.ID); err != nil {
		t.Fatal(err)
	}
	db.Exec(`UPDATE users SET email_verified_at = NULL WHERE id = ?`, users[1].ID)
	if err := reminderJob(db, 100).Round(ctx, starts.Add(-5*time.Minute), nil); err != nil {
		t.Fatal(err)
	}
	got := queuedMails(t, db)
	if len(got) != 1 || got[0].ToAddr != users[2].Username+"@example.com" {
		t.Fatalf("queued %+v; want the one reminder of the running sale that was kept, to a verified address", got)
	}
	// Once started, a sale is not reminded of: the paused one resumed after its start sends nothing.
	db.Exec(`UPDATE activities SET paused_at = NULL WHERE id = ?`, paused.ID)
	if err := reminderJob(db, 100).Round(ctx, starts.Add(time.Second), nil); err != nil {
		t.Fatal(err)
	}
	if got := queuedMails(t, db); len(got) != 1 {
		t.Fatalf("after the start %d mails are queued; want still 1", len(got))
	}
	// A mail queued ahead and not yet sent goes with its reminder, and with its sale ended early.
	late, lateUsers := remindedSale(t, db, starts.Add(time.Minute), 2)
	if err := reminderJob(db, 100).Round(ctx, starts.Add(-5*time.Minute), nil); err != nil {
		t.Fatal(err)
	}
	if got := queuedMails(t, db); len(got) != 5 { // and the paused sale's two, resumed before its start
		t.Fatalf("%d mails queued; want 5", len(got))
	}
	if err := models.DeleteReminder(ctx, db, lateUsers[0].ID, late.ID); err != nil {
		t.Fatal(err)
	}
	if got := queuedMails(t, db); len(got) != 4 {
		t.Fatalf("after a reminder's delete %d mails are queued; want 4 (its mail gone)", len(got))
	}
	db.Exec(`UPDATE activities SET ended_early = true WHERE id IN ?`, []int64{running.ID, late.ID})
	if err := reminderJob(db, 100).Round(ctx, starts.Add(-5*time.Minute), nil); err != nil {
		t.Fatal(err)
	}
	if got := queuedMails(t, db); len(got) != 2 {
		t.Fatalf("after two sales ended early %d mails are still queued; want the resumed sale's 2", len(got))
	}
}

// A queue sale whose line opens at the start's reminder moment (ten minutes before, the defaults of both)
// gets one mail a shopper, the line's, which says the start too; one whose line opens an hour earlier gets
// both, each at its moment.
func TestAQueueSaleOpeningAtTheStartsMomentMailsOnce(t *testing.T) {
	db := testenv.Postgres(t)
	ctx := context.Background()
	for _, tc := range []struct {
		opensBefore time.Duration
		want        map[string]int
	}{
		{10 * time.Minute, map[string]int{"remind_line_open": 3}},
		{time.Hour, map[string]int{"remind_line_open": 3, "remind_start": 3}},
	} {
		db.Exec(`DELETE FROM mails`)
		starts := time.Now().Add(3 * time.Hour).Truncate(time.Second)
		a, _ := remindedSale(t, db, starts, 3)
		opens := starts.Add(-tc.opensBefore)
		if err := db.Model(&a).Updates(map[string]any{"sale_mode": models.SaleQueue, "queue_opens_at": opens}).Error; err != nil {
			t.Fatal(err)
		}
		// A round at each moment and after the start's: all that is due is queued.
		for _, at := range []time.Time{opens.Add(time.Second), starts.Add(-10*time.Minute + time.Second), starts.Add(-time.Minute)} {
			if err := reminderJob(db, 100).Round(ctx, at, nil); err != nil {
				t.Fatal(err)
			}
		}
		got := map[string]int{}
		for _, m := range queuedMails(t, db) {
			got[m.Kind]++
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("the line opening %v before the start: mails %v, want %v", tc.opensBefore, got, tc.want)
		}
	}
}

// The plan of the moments due: one alone begins its size's time before its deadline; moments whose
// windows overlap go one after another, earliest deadline first, the earlier beginning early enough for
// the later; moments far apart do not move each other.
func TestPlanRemindersSharesTheRate(t *testing.T) {
	at := time.Date(2026, 11, 11, 11, 0, 0, 0, time.UTC)
	s := func(n int) time.Duration { return time.Duration(n) * time.Second }
	for _, tc := range []struct {
		name    string
		batches []remindBatch
		want    []time.Time
	}{
		{"alone", []remindBatch{{at, 100}}, []time.Time{at.Add(-s(10))}},
		{"nothing to send", []remindBatch{{at, 0}}, []time.Time{at}},
		{"two sales at once", []remindBatch{{at, 100}, {at, 100}}, []time.Time{at.Add(-s(20)), at.Add(-s(10))}},
		{"overlapping", []remindBatch{{at.Add(s(5)), 100}, {at, 100}}, []time.Time{at.Add(-s(5)), at.Add(-s(15))}},
		{"far apart", []remindBatch{{at, 10}, {at.Add(time.Hour), 10}}, []time.Time{at.Add(-s(1)), at.Add(time.Hour - s(1))}},
		// A queue sale's line by at, its start 10 min later, 7,000 at 10 a second: the start's take 11 min
		// 40 s, so the line's end where they begin.
		{"a sale's two moments", []remindBatch{{at, 100}, {at.Add(10 * time.Minute), 7000}},
			[]time.Time{at.Add(-s(110)), at.Add(-s(100))}},
		{"three at once", []remindBatch{{at, 100}, {at, 100}, {at, 100}}, []time.Time{at.Add(-s(30)), at.Add(-s(20)), at.Add(-s(10))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := planReminders(tc.batches, 10)
			for i := range tc.want {
				if !got[i].Equal(tc.want[i]) {
					t.Errorf("batch %d begins %v before its deadline; want %v", i, tc.batches[i].By.Sub(got[i]), tc.batches[i].By.Sub(tc.want[i]))
				}
			}
		})
	}
}

// Whatever the sizes and deadlines, sending each batch from its beginning at the rate, one relay for all,
// ends every batch by its deadline and never sends two at once.
func TestPlanRemindersKeepsEveryDeadline(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 1))
	at := time.Date(2026, 11, 11, 11, 0, 0, 0, time.UTC)
	for round := 0; round < 500; round++ {
		batches := make([]remindBatch, 1+rng.IntN(8))
		for i := range batches {
			batches[i] = remindBatch{By: at.Add(time.Duration(rng.IntN(3600)) * time.Second), Size: rng.Int64N(20000)}
		}
		rate := float64(1 + rng.IntN(200))
		begins := planReminders(batches, rate)
		type span struct{ from, to time.Time }
		spans := make([]span, len(batches))
		for i, b := range batches {
			end := begins[i].Add(time.Duration(float64(b.Size) / rate * float64(time.Second)))
			if end.After(b.By.Add(time.Microsecond)) {
				t.Fatalf("%+v at %v a second: batch %d ends %v after its deadline", batches, rate, i, end.Sub(b.By))
			}
			spans[i] = span{begins[i], end}
		}
		for i := range spans {
			for j := range spans {
				if i != j && spans[i].from.Before(spans[j].to.Add(-time.Microsecond)) && spans[j].from.Before(spans[i].to.Add(-time.Microsecond)) {
					t.Fatalf("%+v at %v a second: batches %d and %d are sent at once (%v, %v)", batches, rate, i, j, spans[i], spans[j])
				}
			}
		}
	}
}

// Three sales starting at once, 100 reminders each, at 10 a second: 30 s of mail. Rounds every interval
// from well before: every reminder is queued to go before its moment, not only each sale's share.
func TestSalesAtOnceAreAllRemindedBeforeTheirMoment(t *testing.T) {
	db := testenv.Postgres(t)
	ctx := context.Background()
	starts := time.Now().Add(2 * time.Hour).Truncate(time.Second)
	for range 3 {
		remindedSale(t, db, starts, 100)
	}
	r := reminderJob(db, 10)
	r.Margin = 10 * time.Second
	moment := starts.Add(-10 * time.Minute)
	for at := moment.Add(-2 * time.Minute); at.Before(moment); at = at.Add(r.Interval) {
		if err := r.Round(ctx, at, nil); err != nil {
			t.Fatal(err)
		}
	}
	got := queuedMails(t, db)
	if len(got) != 300 {
		t.Fatalf("%d mails queued by the moment; want 300", len(got))
	}
	for i, m := range got {
		if m.NextAt.After(moment.Add(-r.Margin + r.Interval)) {
			t.Fatalf("mail %d of 300 goes %v before the moment; want at least the margin (less a round)", i, moment.Sub(m.NextAt))
		}
		if i > 0 && m.NextAt.Sub(got[i-1].NextAt) < 100*time.Millisecond {
			t.Fatalf("mails %d and %d go %v apart; want a tenth of a second (the rate)", i-1, i, m.NextAt.Sub(got[i-1].NextAt))
		}
	}
}
