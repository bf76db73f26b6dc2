package jobs

import (
	"cmp"
	"context"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"time"

	"gorm.io/gorm"

	"seckill/mail"
	"seckill/models"
)

// RemindersJob mails the shoppers who asked to be reminded of a sale.
const RemindersJob = "reminders"

// Reminders mails, for each approved sale, each reminder once when its line opens (a queue sale) and once
// Before its start. The mails are queued in the transaction that marks them sent and spread within the
// relay's Rate: a sale's N reminders of a moment M alone start being queued at M - N/Rate - Margin, Rate a
// second, so that the last is on its way by M - Margin (100,000 at 100 a second begin 16 min 40 s + 1 min
// early); moments whose windows overlap (several sales, or a sale's two) go one after another, earliest
// first, each beginning early enough for those after it (planReminders). A sale paused, ended early or
// started is not mailed about; a reminder deleted is not mailed.
type Reminders struct {
	DB       *gorm.DB
	Mail     *mail.Queue
	Links    *mail.Unsubscribes
	Runs     *Runs
	BaseURL  string
	Before   time.Duration // REMIND_BEFORE: how long before a sale's start its reminder arrives (10 min)
	Rate     float64       // MAIL_RATE: the relay's rate, mails a second (100)
	Margin   time.Duration // how long before its moment a sale's last reminder is queued (1 min)
	Interval time.Duration // how often a round runs (5 s)
	Now      func() time.Time
	Log      *slog.Logger
}

func (r *Reminders) before() time.Duration   { return positive(r.Before, 10*time.Minute) }
func (r *Reminders) margin() time.Duration   { return positive(r.Margin, time.Minute) }
func (r *Reminders) interval() time.Duration { return positive(r.Interval, 5*time.Second) }
func (r *Reminders) rate() float64 {
	if r.Rate > 0 {
		return r.Rate
	}
	return 100
}

func positive(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// reminderBatch is how many reminders one transaction claims, queues and marks.
const reminderBatch = 200

// Run mails reminders every interval until ctx ends.
func (r *Reminders) Run(ctx context.Context) error {
	return Every(ctx, r.interval(), r.Once, func(err error) { r.Log.Warn("reminders round failed", "err", err) })
}

// Once runs one round now, under the job's lock: one instance paces the relay's rate at a time.
func (r *Reminders) Once(ctx context.Context) error {
	return r.Runs.Once(ctx, RemindersJob, true, max(r.interval()*6, 30*time.Second), func(ctx context.Context, counts map[string]int64) error {
		return r.Round(ctx, r.Now(), counts)
	})
}

// Round queues the reminders due at now: at most Rate × Interval mails across every sale, each due a
// 1/Rate after the one before, so that the relay gets them at its rate. Every moment of every sale still to
// be reminded of is planned together (plan): they share the relay. It is safe to run on several workers at
// once (each reminder is claimed with SKIP LOCKED and marked in the transaction that queues its mail) and
// again after a restart (a marked reminder is never queued again). counts may be nil.
func (r *Reminders) Round(ctx context.Context, now time.Time, counts map[string]int64) error {
	if counts == nil {
		counts = map[string]int64{}
	}
	cancelled, err := models.CancelEndedReminders(ctx, r.DB)
	if err != nil {
		return err
	}
	counts["cancelled"] += cancelled
	sales, err := models.RemindedSales(ctx, r.DB, now)
	if err != nil {
		return err
	}
	type moment struct {
		sale       *models.RemindedSale
		which      string
		at         time.Time
		left, sent int64
	}
	var ms []moment
	for i := range sales {
		s := &sales[i]
		startMoment := s.StartsAt.Add(-r.before())
		queue := s.SaleMode == models.SaleQueue && s.QueueOpensAt != nil
		switch {
		case queue && !s.QueueOpensAt.Before(startMoment.Add(-r.before())):
			// The line opens within REMIND_BEFORE of the start's moment (by default it opens ten minutes
			// before the start, the very moment of the start's mail): one mail, the line's, which says the
			// start too; two at once would be one too many, and would share the relay's rate.
			ms = append(ms, moment{s, models.RemindLineOpen, *s.QueueOpensAt, s.OpenLeft, s.OpenSent})
		case queue && now.Before(startMoment):
			// The line's mail goes until the start's is due: a shopper who asks later gets the start's alone.
			ms = append(ms, moment{s, models.RemindLineOpen, *s.QueueOpensAt, s.OpenLeft, s.OpenSent},
				moment{s, models.RemindStart, startMoment, s.StartLeft, s.StartSent})
		default:
			ms = append(ms, moment{s, models.RemindStart, startMoment, s.StartLeft, s.StartSent})
		}
	}
	batches := make([]remindBatch, len(ms))
	for i, m := range ms {
		batches[i] = remindBatch{By: m.at.Add(-r.margin()), Size: m.left + m.sent}
	}
	begins := planReminders(batches, r.rate())
	// The round's budget goes to the earliest deadline first: when the relay cannot carry everything in
	// time, the latest moments are the ones late, not every one a little.
	order := make([]int, len(ms))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return batches[a].By.Compare(batches[b].By) })
	budget := int(math.Ceil(r.rate() * r.interval().Seconds()))
	queued := 0
	for _, i := range order {
		m := ms[i]
		n := r.due(now, begins[i], m.left, m.sent)
		n = min(n, budget-queued)
		if n <= 0 {
			continue
		}
		done, err := r.send(ctx, m.sale, m.which, n, now, queued)
		queued += done
		counts[m.which] += int64(done)
		if err != nil {
			return err
		}
	}
	return nil
}

// remindBatch is one moment's reminders of one sale: Size mails (those sent and those left), the last of
// which should be on its way by By (the moment less the margin).
type remindBatch struct {
	By   time.Time
	Size int64
}

// planReminders answers when each batch begins, for one relay that takes rate mails a second: the batches
// go one after another, earliest deadline first, each as late as it can while every later one still ends
// by its own deadline. A batch alone begins Size/rate before its deadline; batches whose windows overlap
// begin earlier by the sizes of those due after them (100 and 100 due at the same moment, at 10 a second,
// begin 20 s and 10 s before it). Whatever the sizes, the plan keeps every deadline; a beginning in the
// past (too much asked too late) is the round's to catch up on, at the rate.
func planReminders(batches []remindBatch, rate float64) []time.Time {
	order := make([]int, len(batches))
	for i := range order {
		order[i] = i
	}
	// Latest deadline first (of two due at once, the later in the list goes later), each ending where the
	// one after it begins.
	slices.SortFunc(order, func(a, b int) int {
		if c := batches[b].By.Compare(batches[a].By); c != 0 {
			return c
		}
		return cmp.Compare(b, a)
	})
	begins := make([]time.Time, len(batches))
	var next time.Time // where the batch planned after this one begins
	for k, i := range order {
		end := batches[i].By
		if k > 0 && next.Before(end) {
			end = next
		}
		begins[i] = end.Add(-time.Duration(float64(max(batches[i].Size, 0)) / rate * float64(time.Second)))
		next = begins[i]
	}
	return begins
}

// due is how many of a moment's reminders should be queued by now: none before its beginning, then Rate
// a second since it, less those sent.
func (r *Reminders) due(now, begin time.Time, left, sent int64) int {
	if left <= 0 || now.Before(begin) {
		return 0
	}
	should := int64(now.Sub(begin).Seconds()*r.rate()) + 1
	return int(min(left, max(should-sent, 0)))
}

// send queues up to n of sale s's reminders of moment which, in batches, the k-th due at now + (from+k)/Rate.
func (r *Reminders) send(ctx context.Context, s *models.RemindedSale, which string, n int, now time.Time, from int) (int, error) {
	item, err := models.FirstItemOf(ctx, r.DB, s.ID)
	if err != nil {
		return 0, err
	}
	link := r.BaseURL + "/"
	if item != 0 {
		link = r.BaseURL + "/items/" + strconv.FormatInt(item, 10)
	}
	kind, at := mail.KindRemindStart, s.StartsAt
	if which == models.RemindLineOpen {
		kind, at = mail.KindRemindLineOpen, *s.QueueOpensAt
	}
	step := time.Duration(float64(time.Second) / r.rate())
	done := 0
	for done < n {
		claimed, err := models.SendReminders(ctx, r.DB, s.ID, which, min(reminderBatch, n-done), now, func(tx *gorm.DB, due []models.DueReminder) error {
			msgs := make([]mail.Message, len(due))
			for k, d := range due {
				msgs[k] = mail.Message{Kind: kind, To: d.Email, Lang: d.Lang, UserID: d.UserID,
					NotBefore: now.Add(time.Duration(from+done+k) * step),
					Data: map[string]string{"Username": d.Username, "Sale": s.Name, "Time": mail.When(d.Lang, at),
						"Start": mail.When(d.Lang, s.StartsAt), "Link": link,
						"Unsubscribe": r.BaseURL + "/unsubscribe?token=" + r.Links.Token(d.UserID, s.ID)}}
			}
			return r.Mail.Enqueue(ctx, tx, msgs...)
		})
		if err != nil {
			return done, err
		}
		if claimed == 0 {
			break // the rest are another worker's, or gone
		}
		done += claimed
	}
	return done, nil
}
