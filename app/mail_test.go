package app

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"seckill/internal/smtptest"
	"seckill/internal/testenv"
	"seckill/mail"
	"seckill/models"
)

// mailServer is a live server whose mail goes to a real SMTP server the test started (STARTTLS, AUTH
// PLAIN), sent by the mail worker as the worker role runs it.
type mailServer struct {
	*liveServer
	smtp *smtptest.Server
}

func startMailServer(t *testing.T) *mailServer {
	t.Helper()
	relay := smtptest.Start(t)
	s := startLive(t, liveOpts{only: []string{workerSessions, workerEmails}, setup: func(srv *Server) {
		srv.Mail.Sender = &mail.SMTP{Host: relay.Host, Port: relay.Port, Username: smtptest.Username, Password: smtptest.Password,
			From: "Seckill <noreply@shop.test>", TLS: mail.TLSStartTLS, TLSConfig: relay.TLSConfig(), Timeout: 5 * time.Second}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = srv.Mail.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
	}})
	return &mailServer{liveServer: s, smtp: relay}
}

// mailTo waits for the n-th mail (from 1) to addr and returns it.
func (m *mailServer) mailTo(t *testing.T, addr string, n int) smtptest.Received {
	t.Helper()
	var got []smtptest.Received
	testenv.EventuallySaw(t, 10*time.Second, "mail to "+addr, func() (bool, string) {
		got = got[:0]
		for _, r := range m.smtp.Received() {
			if len(r.To) == 1 && r.To[0] == addr {
				got = append(got, r)
			}
		}
		return len(got) >= n, ""
	})
	return got[n-1]
}

func (m *mailServer) countTo(addr string) int {
	n := 0
	for _, r := range m.smtp.Received() {
		if len(r.To) == 1 && r.To[0] == addr {
			n++
		}
	}
	return n
}

var linkToken = regexp.MustCompile(`/(verify-email|reset)\?token=([0-9a-f]{64})`)

// tokenIn is the token of the link in a mail's text.
func tokenIn(t *testing.T, r smtptest.Received) string {
	t.Helper()
	m := linkToken.FindStringSubmatch(r.Part("text/plain"))
	if m == nil {
		t.Fatalf("no link in the mail %q", r.Part("text/plain"))
	}
	return m[2]
}

// An address is verified by the mailed link, once; /api/me shows it without a database statement once
// the instance has it; the page that opens the link uses nothing until its button is pressed.
func TestEmailIsVerifiedByTheMailedLinkOnce(t *testing.T) {
	s := startMailServer(t)
	mei := newBrowser(t, s.URL)
	mei.register("mei_mail", passwordOf("mei"))

	r := mei.call("POST", "/api/me/email", map[string]string{"email": " Mei@Example.COM "})
	if r.Status != 202 || r.json(t)["email"] != "mei@example.com" || r.json(t)["email_verified"] != false {
		t.Fatalf("POST /api/me/email = %d %s; want 202 with the address, not verified", r.Status, r.Body)
	}
	me := func(what string) map[string]any {
		t.Helper()
		mei.call("GET", "/api/me", nil) // warm
		before := dbCounts(t, s.Srv)
		r := mei.call("GET", "/api/me", nil)
		if d := dbDelta(before, dbCounts(t, s.Srv)); len(d) > 0 {
			t.Errorf("%s: a warm /api/me made statements: %v", what, d)
		}
		return r.json(t)
	}
	got := s.mailTo(t, "mei@example.com", 1)
	// The mail worker marks the mail sent after the relay took it: its write is not /api/me's.
	testenv.Eventually(t, 10*time.Second, "the mail to be marked sent", func() bool {
		var queued int64
		s.DB.Model(&models.Mail{}).Where("state <> ?", models.MailSent).Count(&queued)
		return queued == 0
	})
	if j := me("unverified"); j["email"] != "mei@example.com" || j["email_verified"] != false {
		t.Errorf("/api/me = %v; want the address, not verified", j)
	}
	if got.Header("Subject") != "Verify your e-mail address" || !got.TLS {
		t.Errorf("the mail: subject %q, TLS %v", got.Header("Subject"), got.TLS)
	}
	token := tokenIn(t, got)

	// A scanner opens the link: the page renders, and the token is still good.
	page := newBrowser(t, s.URL).call("GET", "/verify-email?token="+token, nil)
	if page.Status != 200 || !strings.Contains(string(page.Body), "data-verify-form") {
		t.Fatalf("the verify page: %d", page.Status)
	}
	other := newBrowser(t, s.URL) // the link may be opened anywhere, logged in or not
	expect(t, "a malformed token", other.call("POST", "/api/auth/verify-email", map[string]string{"token": "nope"}), 400, "bad_token")
	expect(t, "an unknown token", other.call("POST", "/api/auth/verify-email", map[string]string{"token": strings.Repeat("ab", 32)}), 400, "bad_token")
	expect(t, "the token", other.call("POST", "/api/auth/verify-email", map[string]string{"token": token}), 200, "")
	expect(t, "the token again", other.call("POST", "/api/auth/verify-email", map[string]string{"token": token}), 400, "bad_token")
	if j := me("verified"); j["email"] != "mei@example.com" || j["email_verified"] != true {
		t.Errorf("/api/me after verifying = %v; want verified", j)
	}

	// A link older than a day works no more.
	expect(t, "a new address", mei.call("POST", "/api/me/email", map[string]string{"email": "mei@example.org", "current_password": passwordOf("mei")}), 202, "")
	late := tokenIn(t, s.mailTo(t, "mei@example.org", 1))
	s.Clock.Advance(25 * time.Hour)
	expect(t, "a token after 25 h", other.call("POST", "/api/auth/verify-email", map[string]string{"token": late}), 400, "bad_token")

	expect(t, "a bad address", mei.call("POST", "/api/me/email", map[string]string{"email": "Mei <mei@example.com>"}), 400, "bad_request")
	expect(t, "no session", newBrowser(t, s.URL).call("POST", "/api/me/email", map[string]string{"email": "x@example.com"}), 401, "unauthenticated")
}

// Changing a verified address tells the old one; a verified address is another's to nobody (409), an
// unverified claim keeps it from nobody.
func TestChangingTheEmailTellsTheOldAddressAndTakenAddresses(t *testing.T) {
	s := startMailServer(t)
	ada := newBrowser(t, s.URL)
	ada.register("ada_mail", passwordOf("ada"))
	expect(t, "ada's address", ada.call("POST", "/api/me/email", map[string]string{"email": "ada@example.com"}), 202, "")
	expect(t, "verify", ada.call("POST", "/api/auth/verify-email", map[string]string{"token": tokenIn(t, s.mailTo(t, "ada@example.com", 1))}), 200, "")

	squatter := newBrowser(t, s.URL)
	squatter.register("squatter_mail", passwordOf("sq"))
	expect(t, "a verified address of another", squatter.call("POST", "/api/me/email", map[string]string{"email": "ADA@example.com"}), 409, "email_taken")
	expect(t, "an unclaimed address", squatter.call("POST", "/api/me/email", map[string]string{"email": "bob@example.com"}), 202, "")

	bob := newBrowser(t, s.URL)
	bob.register("bob_mail", passwordOf("bob"))
	expect(t, "bob's own address, claimed unverified by another", bob.call("POST", "/api/me/email", map[string]string{"email": "bob@example.com"}), 202, "")
	if j := squatter.call("GET", "/api/me", nil).json(t); j["email"] != nil {
		t.Errorf("the squatter's /api/me = %v; want no address once its owner claimed it", j)
	}
	expect(t, "the squatter's link", squatter.call("POST", "/api/auth/verify-email", map[string]string{"token": tokenIn(t, s.mailTo(t, "bob@example.com", 1))}), 400, "bad_token")

	// Replacing a verified address asks the password, and keeps the verified one until the new one's link
	// is used: a borrowed session cannot mail itself the account's recovery.
	expect(t, "ada changes her address without her password", ada.call("POST", "/api/me/email", map[string]string{"email": "ada@new.example"}), 400, "bad_request")
	expect(t, "with a wrong one", ada.call("POST", "/api/me/email", map[string]string{"email": "ada@new.example", "current_password": "not hers at all"}), 401, "bad_credentials")
	r := ada.call("POST", "/api/me/email", map[string]string{"email": "ada@new.example", "current_password": passwordOf("ada")})
	if j := r.json(t); r.Status != 202 || j["email"] != "ada@example.com" || j["email_verified"] != true || j["email_pending"] != "ada@new.example" {
		t.Errorf("ada changes her address: %d %s; want 202, the verified address kept and the new one pending", r.Status, r.Body)
	}
	if j := ada.call("GET", "/api/me", nil).json(t); j["email"] != "ada@example.com" || j["email_verified"] != true {
		t.Errorf("/api/me while the change waits = %v; want the verified address", j)
	}
	notice := s.mailTo(t, "ada@example.com", 2)
	if notice.Header("Subject") != "A change of your account's e-mail address was asked" || !strings.Contains(notice.Part("text/plain"), "ada@new.example") {
		t.Errorf("the old address was told %q: %q", notice.Header("Subject"), notice.Part("text/plain"))
	}
	if strings.Contains(notice.Part("text/plain"), "token=") {
		t.Error("the notice to the old address carries a link to verify the new one")
	}
	expect(t, "the new address's link", ada.call("POST", "/api/auth/verify-email", map[string]string{"token": tokenIn(t, s.mailTo(t, "ada@new.example", 1))}), 200, "")
	if j := ada.call("GET", "/api/me", nil).json(t); j["email"] != "ada@new.example" || j["email_verified"] != true {
		t.Errorf("/api/me after the new link = %v; want the new address, verified", j)
	}
}

// Password reset: the same answer for a known and an unknown address (status, body, limit), a link that
// works once and for 30 minutes, the password's rules, every session ended, the new password logs in.
func TestPasswordResetByMail(t *testing.T) {
	s := startMailServer(t)
	lin := newBrowser(t, s.URL)
	lin.register("lin_reset", passwordOf("lin"))
	lin.send("POST", "/api/me/email", []byte(`{"email":"lin@example.cn"}`), map[string]string{"Accept-Language": "zh-CN"})
	expect(t, "verify", lin.call("POST", "/api/auth/verify-email", map[string]string{"token": tokenIn(t, s.mailTo(t, "lin@example.cn", 1))}), 200, "")

	stranger := newBrowser(t, s.URL)
	stranger.getCSRF()
	ask := func(addr string) (int, string) {
		r := stranger.send("POST", "/api/auth/password-reset", []byte(`{"email":"`+addr+`"}`), map[string]string{"Accept-Language": "zh-CN"})
		return r.Status, string(r.Body)
	}
	ks, kb := ask("LIN@example.cn")
	us, ub := ask("nobody@example.cn")
	if ks != 202 || us != ks || ub != kb {
		t.Fatalf("a known address: %d %s; an unknown one: %d %s; want the same 202", ks, kb, us, ub)
	}
	got := s.mailTo(t, "lin@example.cn", 2)
	if got.Header("Subject") != "重置您的密码" {
		t.Errorf("the reset mail's subject is %q, want it in Chinese", got.Header("Subject"))
	}
	token := tokenIn(t, got)

	confirm := func(token, pw string) reply {
		return stranger.send("POST", "/api/auth/password-reset/confirm", []byte(`{"token":"`+token+`","new_password":"`+pw+`"}`),
			map[string]string{"Accept-Language": "zh-CN"})
	}
	bad := confirm(token, "short")
	if bad.Status != 400 || bad.code(t) != "bad_request" || !strings.Contains(string(bad.Body), `"new_password":"长度`) {
		t.Errorf("a short password: %d %s; want 400 with fields.new_password, in Chinese", bad.Status, bad.Body)
	}
	expect(t, "the new password", confirm(token, "a-new-Secret-42"), 204, "")
	expect(t, "the link again", confirm(token, "another-Secret-43"), 400, "bad_token")
	expect(t, "lin's session after the reset", lin.call("GET", "/api/me", nil), 401, "unauthenticated")
	again := newBrowser(t, s.URL)
	expect(t, "the old password", again.call("POST", "/api/auth/login", map[string]string{"username": "lin_reset", "password": passwordOf("lin")}), 401, "bad_credentials")
	expect(t, "the new password logs in", again.call("POST", "/api/auth/login", map[string]string{"username": "lin_reset", "password": "a-new-Secret-42"}), 200, "")
	if n := s.mailTo(t, "lin@example.cn", 3); n.Header("Subject") != "您的密码已更改" {
		t.Errorf("the change's notice: %q", n.Header("Subject"))
	}

	// A link 31 minutes old works no more.
	ask("lin@example.cn")
	old := tokenIn(t, s.mailTo(t, "lin@example.cn", 4))
	s.Clock.Advance(31 * time.Minute)
	expect(t, "an expired link", confirm(old, "yet-another-Secret-44"), 400, "bad_token")

	// The limits count the address whoever owns it: the known and the unknown are refused alike.
	for i := 0; i < 2; i++ {
		ask("lin@example.cn")
		ask("nobody@example.cn")
	}
	ks, _ = ask("lin@example.cn")
	us, _ = ask("nobody@example.cn")
	if ks != 429 || us != 429 {
		t.Errorf("the fourth ask in an hour: known %d, unknown %d; want 429 for both", ks, us)
	}
	time.Sleep(300 * time.Millisecond) // the lookups run after the answers
	if n := s.countTo("nobody@example.cn"); n != 0 {
		t.Errorf("%d mails went to an address no account has", n)
	}
	if u, err := models.UserByUsername(t.Context(), s.DB, "lin_reset"); err != nil || u.Email == nil {
		t.Fatalf("lin: %+v, %v", u, err)
	}
}

// The demo's outbox lists the mails with their links; anywhere else /outbox is not found.
func TestOutboxOnlyInDemoMode(t *testing.T) {
	demo := startLive(t, liveOpts{only: []string{workerSessions, workerEmails, workerMail}, tune: func(c *Config) { c.Demo = true }})
	b := newBrowser(t, demo.URL)
	b.register("outbox_mail", passwordOf("ob"))
	expect(t, "an address", b.call("POST", "/api/me/email", map[string]string{"email": "ob@example.com"}), 202, "")
	testenv.EventuallySaw(t, 10*time.Second, "the mail in the outbox", func() (bool, string) {
		r := newBrowser(t, demo.URL).call("GET", "/outbox", nil)
		return r.Status == 200 && strings.Contains(string(r.Body), `<a href="`+demo.URL+`/verify-email?token=`), string(r.Body)
	})
	shop := startLive(t, liveOpts{noBackground: true, tune: func(c *Config) { c.Demo = false }})
	if r := newBrowser(t, shop.URL).call("GET", "/outbox", nil); r.Status != 404 {
		t.Errorf("/outbox outside demo mode: %d", r.Status)
	}
}

// A password changed on the account page is told to the verified address, as one reset by mail is.
func TestAPasswordChangeIsToldToTheVerifiedAddress(t *testing.T) {
	s := startMailServer(t)
	b := newBrowser(t, s.URL)
	b.register("lin_change", passwordOf("lin"))
	expect(t, "an address", b.call("POST", "/api/me/email", map[string]string{"email": "lin@example.com"}), 202, "")
	expect(t, "verified", b.call("POST", "/api/auth/verify-email", map[string]string{"token": tokenIn(t, s.mailTo(t, "lin@example.com", 1))}), 200, "")
	expect(t, "the change", b.call("POST", "/api/me/password", map[string]string{"current_password": passwordOf("lin"),
		"new_password": "a much newer passphrase"}), 204, "")
	if got := s.mailTo(t, "lin@example.com", 2); got.Header("Subject") != "Your password was changed" {
		t.Errorf("the second mail is %q, want the notice of the change", got.Header("Subject"))
	}
}
