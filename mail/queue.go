// Package mail is the e-mail queue: mails rendered in the person's language and queued in the database
// in the same transaction as what causes them, then sent by a worker through an SMTP relay, at least
// once, each with a Message-ID made when it was queued (a resend is recognisable as one).
package mail

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"golang.org/x/time/rate"
	"gorm.io/gorm"

	"seckill/models"
)

// Sender hands mails to a relay: errs[i] is mails[i]'s outcome (nil: the relay took it). A Permanent
// error is not tried again.
type Sender interface {
	Send(ctx context.Context, mails []models.Mail) []error
}

// Permanent marks a refusal that another attempt cannot change (the relay's 5xx answer: no such
// mailbox, a refused address); the mail is marked failed at once.
type Permanent struct{ Err error }

func (p Permanent) Error() string { return p.Err.Error() }
func (p Permanent) Unwrap() error { return p.Err }

// Queue queues mails and, in its worker (Run), sends them. The zero durations take their defaults.
type Queue struct {
	DB     *gorm.DB
	Sender Sender // nil: nothing is sent, the mails wait in the queue (the worker says so)
	Domain string // the right side of every Message-ID (MAIL_FROM's domain)
	Now    func() time.Time
	Log    *slog.Logger

	Lease       time.Duration // a claimed mail's lease: past it, a worker that died is presumed so (2 min)
	Interval    time.Duration // how often the worker looks for due mails (1 s)
	Batch       int           // mails claimed and sent in one connection (20)
	MaxAttempts int           // attempts before a mail is marked failed (12: about 17 hours of backoff)
	Backoff     func(attempt int) time.Duration
	// Rate is the most mails a second the workers hand the relay (MAIL_RATE; 0: as fast as it takes
	// them): a relay's sending quota. Pace keeps it across every worker; without one, each worker keeps
	// it alone (two would send twice as many).
	Rate float64
	// Pace, when set, is the rate every worker shares (ratelimit.Pace, in Redis): a batch waits there for
	// its turn.
	Pace Pacer

	wake chan struct{}
}

// Pacer returns once n more mails may go to the relay, or with ctx's error.
type Pacer interface {
	Wait(ctx context.Context, n int) error
}

// localPace is the rate of this worker alone.
type localPace struct{ l *rate.Limiter }

func (p localPace) Wait(ctx context.Context, n int) error { return p.l.WaitN(ctx, n) }

// PaceBurst is the most mails a shared Pace should let go at once for a queue of this rate: a batch.
func (q *Queue) PaceBurst() int { return q.batch() }

func (q *Queue) lease() time.Duration    { return cmp(q.Lease, 2*time.Minute) }
func (q *Queue) interval() time.Duration { return cmp(q.Interval, time.Second) }
func (q *Queue) batch() int {
	n := 20
	if q.Batch > 0 {
		n = q.Batch
	}
	if q.Rate > 0 {
		// A batch waits at most a quarter of the lease for its turn.
		n = min(n, max(1, int(q.Rate*q.lease().Seconds()/4)))
	}
	return n
}
func (q *Queue) maxAttempts() int {
	if q.MaxAttempts > 0 {
		return q.MaxAttempts
	}
	return 12
}

func cmp(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// backoff is the wait after a failed attempt: 30 s doubling to at most 4 h, a fifth of it at random so
// that mails that failed together do not come back together.
func backoff(attempt int) time.Duration {
	d := 30 * time.Second << min(attempt-1, 9)
	d = min(d, 4*time.Hour)
	return d - time.Duration(rand.Int64N(int64(d)/5+1))
}

// Message is a mail to queue: its kind (which words), the address and language, the account it is
// about, and the values its words take (Link, Username, Email).
type Message struct {
	Kind   string
	To     string
	Lang   string
	UserID int64
	Data   map[string]string
	// NotBefore is the earliest the worker sends it (zero: at once); a reminder's mails are spread by it
	// within the relay's rate.
	NotBefore time.Time
}

// Enqueue renders msgs and queues them in tx (the transaction of what causes them, so that both happen
// or neither; nil: the queue's own database). A job that queues many (reminders) calls it with a few
// hundred at a time. The worker of this process is woken; the others find them within their interval.
func (q *Queue) Enqueue(ctx context.Context, tx *gorm.DB, msgs ...Message) error {
	if tx == nil {
		tx = q.DB
	}
	now := q.Now()
	rows := make([]models.Mail, 0, len(msgs))
	for _, m := range msgs {
		r, err := Render(m)
		if err != nil {
			return err
		}
		id, err := q.messageID()
		if err != nil {
			return err
		}
		row := models.Mail{MessageID: id, Kind: m.Kind, ToAddr: m.To, Lang: r.Lang, Subject: r.Subject,
			TextBody: r.Text, HTMLBody: r.HTML, State: models.MailQueued, NextAt: now, CreatedAt: now, UpdatedAt: now}
		row.ListUnsubscribe = m.Data["Unsubscribe"]
		if m.NotBefore.After(now) {
			row.NextAt = m.NotBefore
		}
		if m.UserID != 0 {
			uid := m.UserID
			row.UserID = &uid
		}
		rows = append(rows, row)
	}
	if err := models.EnqueueMails(ctx, tx, rows); err != nil {
		return err
	}
	q.Wake()
	return nil
}

// messageID is a new Message-ID, without its angle brackets: 128 random bits at the queue's domain.
func (q *Queue) messageID() (string, error) {
	b := make([]byte, 16)
	if _, err := cryptoRead(b); err != nil {
		return "", fmt.Errorf("message id: %w", err)
	}
	domain := q.Domain
	if domain == "" {
		domain = "seckill.invalid"
	}
	return hex.EncodeToString(b) + "@" + domain, nil
}

var cryptoRead = crand.Read

// Wake tells this process's worker that mails are due (queued by a request it served).
func (q *Queue) Wake() {
	if q.wake == nil {
		return
	}
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Prepare makes the worker's wake-up channel; call it before the queue is shared (NewServer does).
func (q *Queue) Prepare() {
	q.wake = make(chan struct{}, 1)
	if q.Rate > 0 && q.Pace == nil {
		q.Pace = localPace{rate.NewLimiter(rate.Limit(q.Rate), q.batch())}
	}
}

// Run sends due mails until ctx ends: every interval, and at once when woken, it claims a batch under a
// lease and sends it; mails whose worker died before marking them are claimed again once their lease
// passes (so a mail the relay took just before the death is sent twice, with the same Message-ID).
// Without a Sender it only says, now and then, how many mails wait.
func (q *Queue) Run(ctx context.Context) error {
	if q.wake == nil {
		q.Prepare()
	}
	if q.Sender == nil {
		return q.idle(ctx)
	}
	t := time.NewTicker(q.interval())
	defer t.Stop()
	tidy := time.NewTicker(time.Hour)
	defer tidy.Stop()
	q.Tidy(ctx)
	for {
		for {
			n, err := q.Round(ctx)
			if err != nil && ctx.Err() == nil {
				q.Log.WarnContext(ctx, "mail round failed", "err", err)
			}
			if n < q.batch() || err != nil {
				break
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		case <-q.wake:
		case <-tidy.C:
			q.Tidy(ctx)
		}
	}
}

// Keep is how long a sent or failed mail stays in the table (the outbox, an operator's look at
// last_error), and an expired token.
const Keep = 30 * 24 * time.Hour

// Tidy deletes the mails done and the tokens expired more than Keep ago, a thousand at a time.
func (q *Queue) Tidy(ctx context.Context) {
	for ctx.Err() == nil {
		n, err := models.ForgetMails(ctx, q.DB, q.Now().Add(-Keep), 1000)
		if err != nil {
			q.Log.WarnContext(ctx, "old mails and tokens not deleted", "err", err)
			return
		}
		if n == 0 {
			return
		}
	}
}

// idle is the worker with no relay configured: mails stay queued, and the log says so every ten
// minutes while any wait.
func (q *Queue) idle(ctx context.Context) error {
	q.Log.WarnContext(ctx, "no SMTP relay is configured (SMTP_URL or SMTP_HOST): mails are queued and wait until one is")
	t := time.NewTicker(10 * time.Minute)
	defer t.Stop()
	for {
		if n, oldest, err := models.QueuedMails(ctx, q.DB); err == nil && n > 0 {
			q.Log.WarnContext(ctx, "mails wait in the queue and no SMTP relay is configured (SMTP_URL or SMTP_HOST): they are sent once one is",
				"queued", n, "oldest", oldest.UTC().Format(time.RFC3339))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// Round claims one batch of due mails, sends it and records each outcome; it answers how many it
// claimed.
func (q *Queue) Round(ctx context.Context) (int, error) {
	mails, err := models.ClaimMails(ctx, q.DB, q.Now(), q.lease(), q.batch())
	if err != nil || len(mails) == 0 {
		return 0, err
	}
	if q.Rate > 0 && q.Pace != nil {
		// The relay's rate: the batch waits its turn, at most a quarter of the lease (batch() keeps one
		// worker's wait within it; several sharing the rate may wait longer). A batch that waited its
		// quarter out, or a stop meanwhile, is left to its lease, unsent: sent late, never twice.
		waitCtx, cancel := context.WithTimeout(ctx, q.lease()/4)
		err := q.Pace.Wait(waitCtx, len(mails))
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return 0, ctx.Err()
			}
			q.Log.WarnContext(ctx, "a batch of mails waited a quarter of its lease for the relay's rate: it goes when the lease ends", "mails", len(mails))
			return 0, nil
		}
	}
	// The relay gets less than the lease: a mail still being sent when its lease ends would be sent by
	// another worker too.
	sendCtx, cancel := context.WithTimeout(ctx, q.lease()/2)
	outcomes := q.Sender.Send(sendCtx, mails)
	cancel()
	// The outcomes are written even when the worker is stopping: a mail the relay took is marked, so a
	// graceful stop sends nothing twice.
	ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	var errs []error
	for i, m := range mails {
		var sendErr error
		if i < len(outcomes) {
			sendErr = outcomes[i]
		} else {
			sendErr = errors.New("the sender gave no outcome")
		}
		now := q.Now()
		if sendErr == nil {
			errs = append(errs, models.MarkMailSent(ctx, q.DB, m.ID, now))
			continue
		}
		var perm Permanent
		giveUp := errors.As(sendErr, &perm) || m.Attempts >= q.maxAttempts()
		wait := backoff
		if q.Backoff != nil {
			wait = q.Backoff
		}
		next := now.Add(wait(m.Attempts))
		if giveUp {
			q.Log.WarnContext(ctx, "a mail could not be delivered and is given up", "message_id", m.MessageID, "kind", m.Kind,
				"attempts", m.Attempts, "err", sendErr)
		} else {
			q.Log.InfoContext(ctx, "a mail will be tried again", "message_id", m.MessageID, "attempts", m.Attempts, "next", next, "err", sendErr)
		}
		errs = append(errs, models.MarkMailRetry(ctx, q.DB, m.ID, next, sendErr.Error(), giveUp, now))
	}
	return len(mails), errors.Join(errs...)
}

// Outbox is the demo's sender: a mail is "delivered" by being marked sent, and the /outbox page shows
// the queue's rows.
type Outbox struct{}

// Send takes every mail.
func (Outbox) Send(_ context.Context, mails []models.Mail) []error { return make([]error, len(mails)) }

var _ Sender = Outbox{}
