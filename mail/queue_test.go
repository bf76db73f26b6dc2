package mail_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"

	"seckill/internal/smtptest"
	"seckill/internal/testenv"
	"seckill/mail"
	"seckill/models"
)

// clock is a test's clock, moved by hand.
type clock struct{ at atomic.Int64 }

func newClock() *clock                   { c := &clock{}; c.at.Store(time.Now().UnixNano()); return c }
func (c *clock) Now() time.Time          { return time.Unix(0, c.at.Load()).UTC() }
func (c *clock) Advance(d time.Duration) { c.at.Add(int64(d)) }

func relay(s *smtptest.Server) *mail.SMTP {
	return &mail.SMTP{Host: s.Host, Port: s.Port, Username: smtptest.Username, Password: smtptest.Password,
		From: "Seckill <noreply@shop.test>", TLS: mail.TLSStartTLS, TLSConfig: s.TLSConfig(), Timeout: 5 * time.Second}
}

func newQueue(db *gorm.DB, sender mail.Sender, clk *clock) *mail.Queue {
	return &mail.Queue{DB: db, Sender: sender, Domain: "shop.test", Now: clk.Now, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Lease: time.Minute, Batch: 5, Backoff: func(int) time.Duration { return 10 * time.Second }}
}

func verifyMsg(to, lang string) mail.Message {
	return mail.Message{Kind: mail.KindVerifyEmail, To: to, Lang: lang, UserID: 7,
		Data: map[string]string{"Link": "https://shop.test/verify-email?token=abc", "Username": "mei", "Email": to}}
}

func queued(t *testing.T, db *gorm.DB) []models.Mail {
	t.Helper()
	var rows []models.Mail
	if err := db.Order("id").Find(&rows).Error; err != nil {
		t.Fatal(err)
	}
	return rows
}

// A mail goes to a real relay over STARTTLS with AUTH PLAIN: the relay reads it in the person's
// language, plain text and HTML, with the Message-ID made when it was queued.
func TestMailsReachTheRelayOverSTARTTLSWithAuth(t *testing.T) {
	db, srv, clk := testenv.Postgres(t), smtptest.Start(t), newClock()
	q := newQueue(db, relay(srv), clk)
	ctx := context.Background()
	if err := q.Enqueue(ctx, nil, verifyMsg("mei@example.com", "en"), verifyMsg("li@example.cn", "zh")); err != nil {
		t.Fatal(err)
	}
	if n, err := q.Round(ctx); err != nil || n != 2 {
		t.Fatalf("Round = %d, %v; want the 2 mails sent", n, err)
	}
	got := srv.Wait(t, 2, 5*time.Second)
	rows := queued(t, db)
	for i, want := range []struct{ to, subject, text, html string }{
		{"mei@example.com", "Verify your e-mail address", "Confirm that mei@example.com is your address", `<a href="https://shop.test/verify-email?token=abc"`},
		{"li@example.cn", "验证您的邮箱地址", "请确认 li@example.cn 是您的邮箱", "验证我的邮箱"},
	} {
		r := got[i]
		if !r.TLS || r.AuthUser != smtptest.Username {
			t.Errorf("mail %d came with TLS %v as %q; want STARTTLS and AUTH", i, r.TLS, r.AuthUser)
		}
		if len(r.To) != 1 || r.To[0] != want.to || r.Header("Subject") != want.subject {
			t.Errorf("mail %d went to %v with subject %q; want %s, %q", i, r.To, r.Header("Subject"), want.to, want.subject)
		}
		if text := r.Part("text/plain"); !strings.Contains(text, want.text) || !strings.Contains(text, "https://shop.test/verify-email?token=abc") {
			t.Errorf("mail %d's text is %q; want %q and the link", i, text, want.text)
		}
		if html := r.Part("text/html"); !strings.Contains(html, want.html) {
			t.Errorf("mail %d's HTML is %q; want %q", i, html, want.html)
		}
		if id := r.Header("Message-ID"); id != "<"+rows[i].MessageID+">" || !strings.HasSuffix(id, "@shop.test>") {
			t.Errorf("mail %d's Message-ID is %q; the queue made %q", i, id, rows[i].MessageID)
		}
		if rows[i].State != models.MailSent || rows[i].SentAt == nil {
			t.Errorf("mail %d is %s after the relay took it", i, rows[i].State)
		}
	}
}

// A relay that refuses for now gets the mail again after the backoff; one that refuses the address
// for good marks it failed at once (a bounce the queue can see), and the others still go.
func TestMailsAreRetriedAfterATemporaryRefusal(t *testing.T) {
	db, srv, clk := testenv.Postgres(t), smtptest.Start(t), newClock()
	q := newQueue(db, relay(srv), clk)
	ctx := context.Background()
	srv.Refuse(func(to string) error {
		if strings.HasPrefix(to, "gone@") {
			return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such mailbox"}
		}
		return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "try later"}
	})
	if err := q.Enqueue(ctx, nil, verifyMsg("mei@example.com", "en"), verifyMsg("gone@example.com", "en")); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Round(ctx); err != nil {
		t.Fatal(err)
	}
	rows := queued(t, db)
	if rows[0].State != models.MailQueued || rows[0].Attempts != 1 || !strings.Contains(rows[0].LastError, "451") || !rows[0].NextAt.After(clk.Now()) {
		t.Errorf("after a 451 the mail is %+v; want queued again, later, with the reason", rows[0])
	}
	if rows[1].State != models.MailFailed || !strings.Contains(rows[1].LastError, "550") {
		t.Errorf("after a 550 the mail is %s (%q); want failed", rows[1].State, rows[1].LastError)
	}
	srv.Refuse(nil)
	if n, _ := q.Round(ctx); n != 0 {
		t.Errorf("a Round before the backoff sent %d mails", n)
	}
	clk.Advance(11 * time.Second)
	if n, err := q.Round(ctx); n != 1 || err != nil {
		t.Fatalf("a Round after the backoff = %d, %v; want the one mail", n, err)
	}
	if got := srv.Wait(t, 1, 5*time.Second); got[0].To[0] != "mei@example.com" {
		t.Errorf("the relay took %v", got[0].To)
	}
}

// The queue survives a restart with nothing lost: mails queued while no worker runs, a worker stopped
// in the middle, another started: every mail arrives, each Message-ID at least once.
func TestTheQueueSurvivesARestart(t *testing.T) {
	db, srv, clk := testenv.Postgres(t), smtptest.Start(t), newClock()
	ctx := context.Background()
	const n = 23
	var msgs []mail.Message
	for i := range n {
		msgs = append(msgs, verifyMsg(fmt.Sprintf("p%d@example.com", i), "en"))
	}
	if err := newQueue(db, nil, clk).Enqueue(ctx, nil, msgs...); err != nil {
		t.Fatal(err)
	}
	// The first worker sends a few batches and is stopped.
	first := newQueue(db, relay(srv), clk)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- first.Run(runCtx) }()
	srv.Wait(t, 5, 10*time.Second)
	stop()
	<-done
	// A batch cut short by the stop is tried again after its backoff (or, had the worker died, its lease).
	clk.Advance(time.Minute + time.Second)
	// A new process: a new queue on the same database.
	second := newQueue(db, relay(srv), clk)
	runCtx, stop = context.WithCancel(ctx)
	go func() { done <- second.Run(runCtx) }()
	defer func() { stop(); <-done }()
	testenv.EventuallySaw(t, 20*time.Second, "every mail sent", func() (bool, string) {
		var left int64
		db.Model(&models.Mail{}).Where("state <> ?", models.MailSent).Count(&left)
		return left == 0, fmt.Sprintf("%d not sent", left)
	})
	ids := map[string]bool{}
	for _, r := range srv.Received() {
		ids[r.Header("Message-ID")] = true
	}
	for _, row := range queued(t, db) {
		if !ids["<"+row.MessageID+">"] {
			t.Errorf("mail %d to %s never reached the relay", row.ID, row.ToAddr)
		}
	}
}

// A worker killed between the relay's acceptance and the queue's mark: the mail is sent again once its
// lease ends, once, with the same Message-ID, and then never more.
func TestAKillAfterAcceptanceResendsOnceWithTheSameMessageID(t *testing.T) {
	url := testenv.PostgresSchema(t)
	open := func() *gorm.DB {
		db, err := gorm.Open(postgres.Open(url), testenv.GormConfig())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if d, err := db.DB(); err == nil {
				d.Close()
			}
		})
		return db
	}
	db, doomed := open(), open()
	if err := models.Migrate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	srv, clk := smtptest.Start(t), newClock()
	ctx := context.Background()
	if err := newQueue(db, nil, clk).Enqueue(ctx, nil, verifyMsg("mei@example.com", "en")); err != nil {
		t.Fatal(err)
	}
	// The doomed worker's process dies the moment the relay has the mail: its database is gone before
	// it can mark it.
	dies := killAfter{SMTP: relay(srv), kill: func() {
		if d, err := doomed.DB(); err == nil {
			d.Close()
		}
	}}
	if _, err := newQueue(doomed, dies, clk).Round(ctx); err == nil {
		t.Fatal("the doomed worker marked the mail")
	}
	srv.Wait(t, 1, 5*time.Second)
	survivor := newQueue(db, relay(srv), clk)
	if n, _ := survivor.Round(ctx); n != 0 {
		t.Fatalf("another worker took the mail while its lease held (%d)", n)
	}
	clk.Advance(time.Minute + time.Second)
	if n, err := survivor.Round(ctx); n != 1 || err != nil {
		t.Fatalf("after the lease: Round = %d, %v; want the mail sent again", n, err)
	}
	clk.Advance(time.Hour)
	if n, err := survivor.Round(ctx); n != 0 || err != nil {
		t.Fatalf("a later Round = %d, %v; want nothing more", n, err)
	}
	got := srv.Wait(t, 2, 5*time.Second)
	if len(got) != 2 || got[0].Header("Message-ID") == "" || got[0].Header("Message-ID") != got[1].Header("Message-ID") {
		t.Fatalf("the relay took %d mails, Message-IDs %q; want the mail twice with one Message-ID", len(got), ids(got))
	}
	if rows := queued(t, db); rows[0].State != models.MailSent || rows[0].Attempts != 2 {
		t.Errorf("the mail is %s after %d attempts; want sent after 2", rows[0].State, rows[0].Attempts)
	}
}

// killAfter sends, then kills the worker's process (its database) before the queue can mark the mail.
type killAfter struct {
	*mail.SMTP
	kill func()
}

func (k killAfter) Send(ctx context.Context, mails []models.Mail) []error {
	out := k.SMTP.Send(ctx, mails)
	for _, err := range out {
		if err != nil {
			panic(errors.Join(err))
		}
	}
	k.kill()
	return out
}

func ids(got []smtptest.Received) []string {
	var out []string
	for _, r := range got {
		out = append(out, r.Header("Message-ID"))
	}
	return out
}

// The demo's outbox takes every mail: it is marked sent and stays in the table, which /outbox lists.
func TestTheOutboxTakesEveryMail(t *testing.T) {
	db, clk := testenv.SQLite(t), newClock()
	q := newQueue(db, mail.Outbox{}, clk)
	ctx := context.Background()
	if err := q.Enqueue(ctx, nil, verifyMsg("mei@example.com", "zh")); err != nil {
		t.Fatal(err)
	}
	if n, err := q.Round(ctx); n != 1 || err != nil {
		t.Fatalf("Round = %d, %v", n, err)
	}
	rows, err := models.RecentMails(ctx, db, 10)
	if err != nil || len(rows) != 1 || rows[0].State != models.MailSent || !strings.Contains(rows[0].TextBody, "verify-email?token=abc") {
		t.Fatalf("the outbox holds %+v, %v", rows, err)
	}
}

// A relay's rate is kept: 12 mails at 20 a second, 4 at once, take at least 0.4 s.
func TestTheQueueKeepsTheRelaysRate(t *testing.T) {
	db, clk := testenv.SQLite(t), newClock()
	q := newQueue(db, mail.Outbox{}, clk)
	q.Rate, q.Batch = 20, 4
	q.Prepare()
	ctx := context.Background()
	var msgs []mail.Message
	for i := range 12 {
		msgs = append(msgs, verifyMsg(fmt.Sprintf("r%d@example.com", i), "en"))
	}
	if err := q.Enqueue(ctx, nil, msgs...); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for sent := 0; sent < 12; {
		n, err := q.Round(ctx)
		if err != nil || n == 0 {
			t.Fatalf("Round = %d, %v after %d", n, err, sent)
		}
		sent += n
	}
	if took := time.Since(start); took < 400*time.Millisecond {
		t.Errorf("12 mails at 20 a second went in %v", took)
	}
}

// Mails done and tokens expired more than Keep ago are deleted; a queued mail never is.
func TestTidyForgetsOldMailsAndTokens(t *testing.T) {
	for name, open := range map[string]func(testing.TB) *gorm.DB{"postgres": testenv.Postgres, "sqlite": testenv.SQLite} {
		t.Run(name, func(t *testing.T) { tidies(t, open(t)) })
	}
}

func tidies(t *testing.T, db *gorm.DB) {
	clk := newClock()
	q := newQueue(db, mail.Outbox{}, clk)
	ctx := context.Background()
	if err := q.Enqueue(ctx, nil, verifyMsg("old@example.com", "en")); err != nil {
		t.Fatal(err)
	}
	q.Round(ctx)
	if err := models.CreateToken(ctx, db, &models.Token{UserID: 1, Purpose: models.TokenPasswordReset, Hash: strings.Repeat("a", 64),
		ExpiresAt: clk.Now(), CreatedAt: clk.Now()}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(mail.Keep + time.Hour)
	if err := newQueue(db, nil, clk).Enqueue(ctx, nil, verifyMsg("waiting@example.com", "en")); err != nil {
		t.Fatal(err)
	}
	q.Tidy(ctx)
	rows := queued(t, db)
	var tokens int64
	db.Model(&models.Token{}).Count(&tokens)
	if len(rows) != 1 || rows[0].ToAddr != "waiting@example.com" || tokens != 0 {
		t.Errorf("after Tidy: %d mails (%v), %d tokens; want only the queued mail", len(rows), rows, tokens)
	}
}
