package app

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"seckill/internal/testenv"
	"seckill/models"
)

// A person who forgot their password, in English and in Chinese: "Forgot password?" on the login page,
// the address, the link from the demo's outbox, a refused password shown beside its field at once, the
// new one, and a login with it.
func TestForgotPasswordThroughTheOutboxInBrowser(t *testing.T) {
	s := startLive(t, liveOpts{only: []string{workerSessions, workerEmails, workerMail}, tune: func(c *Config) { c.Demo = true }})
	for _, tc := range []struct {
		lang, sent, subject, short, done string
	}{
		{"en", "If an account has this verified address", "Reset your password", "must be 8 to 72 bytes long", "Your password is changed"},
		{"zh", "如果有账户使用这个已验证的邮箱", "重置您的密码", "长度须为 8 到 72 字节", "密码已更改"},
	} {
		t.Run(tc.lang, func(t *testing.T) {
			name := "forgot_" + tc.lang
			addr := name + "@example.com"
			id := newBrowser(t, s.URL).register(name, passwordOf(name))
			ctx := context.Background()
			if _, err := models.SetEmail(ctx, s.DB, id, addr, time.Now()); err != nil {
				t.Fatal(err)
			}
			if err := models.VerifyEmail(ctx, s.DB, id, addr, time.Now()); err != nil {
				t.Fatal(err)
			}
			b := chrome(t)
			if tc.lang == "zh" {
				run(t, b, "Chinese", chromedp.Navigate(s.URL+"/lang/zh"))
			}
			var said string
			run(t, b, "ask for a link from the login page",
				chromedp.Navigate(s.URL+"/login"),
				chromedp.Click("#forgot-link", chromedp.ByID),
				chromedp.WaitVisible("#email", chromedp.ByID),
				chromedp.SendKeys("#email", strings.ToUpper(addr), chromedp.ByID),
				chromedp.Click("form[data-forgot-form] button[type=submit]", chromedp.ByQuery),
				chromedp.WaitVisible("form[data-forgot-form] .form-done", chromedp.ByQuery),
				chromedp.Text("form[data-forgot-form] .form-done", &said, chromedp.ByQuery),
			)
			if !strings.Contains(said, tc.sent) {
				t.Errorf("the page says %q, want %q", said, tc.sent)
			}
			var subject string
			link := `//article[.//span[@class="outbox-to"][.="` + addr + `"]]//a[contains(@href, "/reset?token=")]`
			// The link is looked up and queued after the answer: the outbox has it a moment later.
			testenv.EventuallySaw(t, 10*time.Second, "the reset mail queued", func() (bool, string) {
				var n int64
				s.DB.Model(&models.Mail{}).Where("to_addr = ? AND kind = ?", addr, "password_reset").Count(&n)
				return n == 1, ""
			})
			run(t, b, "open the link in the outbox",
				chromedp.Navigate(s.URL+"/outbox"),
				chromedp.Text(`//article[.//span[@class="outbox-to"][.="`+addr+`"]]//h2`, &subject),
				chromedp.Click(link),
				chromedp.WaitVisible("#new_password", chromedp.ByID),
			)
			if subject != tc.subject {
				t.Errorf("the outbox's mail is %q, want %q", subject, tc.subject)
			}
			var why, done string
			run(t, b, "a short password, then a good one",
				chromedp.SendKeys("#new_password", "short", chromedp.ByID),
				chromedp.Click("form[data-reset-form] button[type=submit]", chromedp.ByQuery),
				chromedp.Poll(`document.querySelector('[data-error-for="new_password"]').textContent !== ""`, nil, chromedp.WithPollingTimeout(5*time.Second)),
				chromedp.Text(`[data-error-for="new_password"]`, &why, chromedp.ByQuery),
				chromedp.Evaluate(`document.getElementById("new_password").value = ""`, nil),
				chromedp.SendKeys("#new_password", "brand-New-secret-7", chromedp.ByID),
				chromedp.Click("form[data-reset-form] button[type=submit]", chromedp.ByQuery),
				chromedp.WaitVisible("form[data-reset-form] .form-done", chromedp.ByQuery),
				chromedp.Text("form[data-reset-form] .form-done", &done, chromedp.ByQuery),
				chromedp.Click("form[data-reset-form] .done-login a", chromedp.ByQuery),
				chromedp.WaitVisible("#username", chromedp.ByID),
			)
			if !strings.Contains(why, tc.short) {
				t.Errorf("the short password's error is %q, want %q", why, tc.short)
			}
			if !strings.Contains(done, tc.done) {
				t.Errorf("the page says %q, want %q", done, tc.done)
			}
			loginInBrowser(t, b, s.URL, name, "brand-New-secret-7")
		})
	}
}

// A shopper adds an address on /account/email, in English and in Chinese: a wrong one is refused beside
// the field at once, a good one is mailed a link, the link's page verifies it on its button (not by
// being opened), and the account page then says it is verified.
func TestAddAndVerifyAnEmailInBrowser(t *testing.T) {
	s := startLive(t, liveOpts{only: []string{workerSessions, workerEmails, workerMail}, tune: func(c *Config) { c.Demo = true }})
	for _, tc := range []struct{ lang, bad, sent, done, verified string }{
		{"en", "must be an e-mail address", "A link is on its way to", "Your e-mail address is verified.", "Verified"},
		{"zh", "须为邮箱地址", "验证链接已发往", "您的邮箱已验证。", "已验证"},
	} {
		t.Run(tc.lang, func(t *testing.T) {
			name := "verify_" + tc.lang
			addr := name + "@example.com"
			newBrowser(t, s.URL).register(name, passwordOf(name))
			b := chrome(t)
			if tc.lang == "zh" {
				run(t, b, "Chinese", chromedp.Navigate(s.URL+"/lang/zh"))
			}
			loginInBrowser(t, b, s.URL, name, passwordOf(name))
			var why, sent string
			run(t, b, "add an address",
				chromedp.Navigate(s.URL+"/account/email"),
				chromedp.WaitVisible("#email", chromedp.ByID),
				chromedp.SendKeys("#email", "not an address", chromedp.ByID),
				chromedp.Click("form[data-email-form] button[type=submit]", chromedp.ByQuery),
				chromedp.Poll(`document.querySelector('[data-error-for="email"]').textContent !== ""`, nil, chromedp.WithPollingTimeout(5*time.Second)),
				chromedp.Text(`[data-error-for="email"]`, &why, chromedp.ByQuery),
				chromedp.Evaluate(`document.getElementById("email").value = ""`, nil),
				chromedp.SendKeys("#email", addr, chromedp.ByID),
				chromedp.Click("form[data-email-form] button[type=submit]", chromedp.ByQuery),
				chromedp.WaitVisible("form[data-email-form] .form-done", chromedp.ByQuery),
				chromedp.Text("form[data-email-form] .form-done", &sent, chromedp.ByQuery),
			)
			if !strings.Contains(why, tc.bad) || !strings.Contains(sent, tc.sent) || !strings.Contains(sent, addr) {
				t.Errorf("the page said %q, then %q; want %q, then %q with the address", why, sent, tc.bad, tc.sent)
			}
			testenv.EventuallySaw(t, 10*time.Second, "the mail in the outbox", func() (bool, string) {
				var n int64
				s.DB.Model(&models.Mail{}).Where("to_addr = ? AND state = ?", addr, models.MailSent).Count(&n)
				return n == 1, ""
			})
			var done, badge string
			run(t, b, "verify from the outbox",
				chromedp.Navigate(s.URL+"/outbox"),
				chromedp.Click(`//article[.//span[@class="outbox-to"][.="`+addr+`"]]//a[contains(@href, "/verify-email?token=")]`),
				chromedp.WaitVisible("form[data-verify-form] button[type=submit]", chromedp.ByQuery),
			)
			if st, _ := s.Srv.Emails.Of(t.Context(), mustUserID(t, s, name)); st.Verified {
				t.Fatal("opening the link verified the address: a scanner would use it")
			}
			run(t, b, "press Verify",
				chromedp.Click("form[data-verify-form] button[type=submit]", chromedp.ByQuery),
				chromedp.WaitVisible("form[data-verify-form] .form-done", chromedp.ByQuery),
				chromedp.Text("form[data-verify-form] .form-done", &done, chromedp.ByQuery),
				chromedp.Navigate(s.URL+"/account/email"),
				chromedp.Text(".email-current .badge", &badge, chromedp.ByQuery),
			)
			if done != tc.done || badge != tc.verified {
				t.Errorf("the page said %q, the account %q; want %q and %q", done, badge, tc.done, tc.verified)
			}
		})
	}
}

func mustUserID(t *testing.T, s *liveServer, name string) int64 {
	t.Helper()
	u, err := models.UserByUsername(t.Context(), s.DB, name)
	if err != nil {
		t.Fatal(err)
	}
	return u.ID
}
