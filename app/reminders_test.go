package app

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"seckill/internal/smtptest"
	"seckill/internal/testenv"
	"seckill/jobs"
	"seckill/mail"
	"seckill/models"
)

// startRemindServer is startMailServer with more of the worker's background work (the order consumer,
// for a receipt's order).
func startRemindServer(t *testing.T, more ...string) *mailServer {
	t.Helper()
	relay := smtptest.Start(t)
	s := startLive(t, liveOpts{only: append([]string{workerSessions, workerEmails}, more...), setup: func(srv *Server) {
		srv.Mail.Sender = &mail.SMTP{Host: relay.Host, Port: relay.Port, Username: smtptest.Username, Password: smtptest.Password,
			From: "Seckill <noreply@shop.test>", TLS: mail.TLSStartTLS, TLSConfig: relay.TLSConfig(), Timeout: 5 * time.Second}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = srv.Mail.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
	}})
	return &mailServer{liveServer: s, smtp: relay}
}

// verifyEmail gives b's account addr, verified through the mailed link as a person does.
func (m *mailServer) verifyEmail(t *testing.T, b *browser, addr string) {
	t.Helper()
	expect(t, "set the address", b.call("POST", "/api/me/email", map[string]string{"email": addr}), 202, "")
	token := tokenIn(t, m.mailTo(t, addr, 1))
	expect(t, "verify the address", b.call("POST", "/api/auth/verify-email", map[string]string{"token": token}), 200, "")
}

// mailsOf are the kinds of the mails queued to addr, oldest first.
func mailsOf(t *testing.T, s *mailServer, addr string) []string {
	t.Helper()
	var kinds []string
	if err := s.DB.Raw(`SELECT kind FROM mails WHERE to_addr = ? ORDER BY id`, addr).Scan(&kinds).Error; err != nil {
		t.Fatal(err)
	}
	return kinds
}

var unsubscribeLink = regexp.MustCompile(`(?m)^(http://[^/\s]+)(/unsubscribe\?token=[0-9.a-f]+)$`)

// "Remind me": a verified address is needed (409 email_required, in the shopper's language, otherwise);
// the right people are mailed, in their language, when the queue sale's line opens and before its
// start, once each; a deleted or unsubscribed reminder is mailed no more; the unsubscribe link's page
// stops nothing until its button is pressed.
func TestRemindMeByMail(t *testing.T) {
	s := startRemindServer(t)
	ctx := context.Background()
	now := s.Clock.Now()
	starts := now.Add(2 * time.Hour).Truncate(time.Second)
	opens := starts.Add(-30 * time.Minute)
	sale, item := testenv.Sale(t, s.DB, 10, starts, starts.Add(time.Hour))
	s.DB.Exec(`UPDATE activities SET sale_mode = ?, queue_opens_at = ? WHERE id = ?`, models.SaleQueue, opens, sale.ID)
	started, _ := testenv.Sale(t, s.DB, 10, now.Add(-time.Minute), now.Add(time.Hour))
	path := "/api/activities/" + itoa(sale.ID) + "/reminder"

	expect(t, "remind me, logged out", newBrowser(t, s.URL).call("POST", path, nil), 401, "unauthenticated")

	mei := newBrowser(t, s.URL)
	mei.setCookie("lang", "zh")
	mei.register("mei_remind", passwordOf("mei"))
	r := mei.call("POST", path, nil)
	expect(t, "remind me without an address", r, 409, "email_required")
	if _, msg := errorOf(t, r); !strings.Contains(msg, "邮箱") {
		t.Errorf("the Chinese shopper reads %q; want it in Chinese", msg)
	}
	s.verifyEmail(t, mei, "mei@example.com")
	expect(t, "remind me", mei.call("POST", path, nil), 201, "")
	expect(t, "remind me again", mei.call("POST", path, nil), 200, "")
	list := mei.call("GET", "/api/me/reminders", nil)
	if list.Status != 200 || !strings.Contains(string(list.Body), `"activity_id":`+itoa(sale.ID)) || !strings.Contains(string(list.Body), `"lang":"zh"`) {
		t.Fatalf("GET /api/me/reminders = %d %s; want the sale, in Chinese", list.Status, list.Body)
	}
	expect(t, "a sale that has started", mei.call("POST", "/api/activities/"+itoa(started.ID)+"/reminder", nil), 409, "activity_state")
	expect(t, "no such sale", mei.call("POST", "/api/activities/999999/reminder", nil), 404, "not_found")

	ada := newBrowser(t, s.URL)
	ada.register("ada_remind", passwordOf("ada"))
	s.verifyEmail(t, ada, "ada@example.com")
	expect(t, "ada: remind me", ada.call("POST", path, nil), 201, "")
	bob := newBrowser(t, s.URL)
	bob.register("bob_remind", passwordOf("bob"))
	s.verifyEmail(t, bob, "bob@example.com")
	expect(t, "bob: remind me", bob.call("POST", path, nil), 201, "")
	expect(t, "bob: no, thanks", bob.call("DELETE", path, nil), 204, "")
	expect(t, "bob: no, thanks, again", bob.call("DELETE", path, nil), 204, "")
	if l := bob.call("GET", "/api/me/reminders", nil); string(l.Body) != "[]" {
		t.Errorf("bob's reminders after the delete: %s", l.Body)
	}
	carl := newBrowser(t, s.URL) // verified, never asked
	carl.register("carl_remind", passwordOf("carl"))
	s.verifyEmail(t, carl, "carl@example.com")

	round := func(at time.Time) {
		t.Helper()
		s.Clock.Set(at)
		if err := s.Srv.Reminders.Round(ctx, s.Clock.Now(), nil); err != nil {
			t.Fatal(err)
		}
	}
	round(opens.Add(-2 * time.Hour)) // long before: nothing
	if k := mailsOf(t, s, "mei@example.com"); len(k) != 1 {
		t.Fatalf("mei's mails long before the line opens: %v; want the verification alone", k)
	}
	round(opens.Add(-30 * time.Second))
	round(opens.Add(-29 * time.Second)) // a second round finds nothing more to send
	adaOpen := s.mailTo(t, "ada@example.com", 2)
	if want := "The line for “Test sale” opens at " + mail.When("en", opens); adaOpen.Header("Subject") != want {
		t.Errorf("ada's reminder: %q; want %q", adaOpen.Header("Subject"), want)
	}
	text := strings.ReplaceAll(adaOpen.Part("text/plain"), "\r\n", "\n")
	if !strings.Contains(text, s.URL+"/items/"+itoa(item.ID)+"\n") || !strings.Contains(adaOpen.Part("text/html"), "/unsubscribe?token=") {
		t.Errorf("ada's reminder has no link to the item or no unsubscribe link:\n%s", text)
	}
	meiOpen := s.mailTo(t, "mei@example.com", 2)
	if subj := meiOpen.Header("Subject"); !strings.Contains(subj, "排队将于") || !strings.Contains(subj, "北京时间") {
		t.Errorf("mei's reminder is not in Chinese: %q", subj)
	}

	// ada's unsubscribe link: the page (a scanner opening it) stops nothing; its button does.
	m := unsubscribeLink.FindStringSubmatch(text)
	if m == nil || m[1] != s.URL {
		t.Fatalf("no unsubscribe link of the shop in ada's mail:\n%s", text)
	}
	if h := adaOpen.Header("List-Unsubscribe"); h != "<"+m[0]+">" || adaOpen.Header("List-Unsubscribe-Post") != "List-Unsubscribe=One-Click" {
		t.Errorf("List-Unsubscribe %q (Post %q); want <%s> with one-click", h, adaOpen.Header("List-Unsubscribe-Post"), m[0])
	}
	scanner := newBrowser(t, s.URL)
	page := scanner.call("GET", m[2], nil)
	if page.Status != 200 || !strings.Contains(string(page.Body), `method="post"`) || !strings.Contains(string(page.Body), "Test sale") {
		t.Fatalf("the unsubscribe page: %d %s", page.Status, page.Body)
	}
	if l := ada.call("GET", "/api/me/reminders", nil); !strings.Contains(string(l.Body), `"activity_id":`+itoa(sale.ID)) {
		t.Fatalf("opening the unsubscribe link stopped the reminder: %s", l.Body)
	}
	bad := scanner.call("GET", strings.Replace(m[2], "token=", "token=9", 1), nil)
	if !strings.Contains(string(bad.Body), "This link is unknown") {
		t.Errorf("a forged token's page: %s", bad.Body)
	}
	req, _ := http.NewRequest("POST", s.URL+m[2], strings.NewReader(url.Values{"List-Unsubscribe": {"One-Click"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	done := scanner.do(req) // no session, no CSRF token: the token is the authority
	if done.Status != 200 || !strings.Contains(string(done.Body), "no more reminders") {
		t.Fatalf("pressing the button: %d %s", done.Status, done.Body)
	}
	if l := ada.call("GET", "/api/me/reminders", nil); string(l.Body) != "[]" {
		t.Errorf("ada's reminders after unsubscribing: %s", l.Body)
	}

	round(starts.Add(-10*time.Minute - 30*time.Second))
	meiStart := s.mailTo(t, "mei@example.com", 3)
	if subj := meiStart.Header("Subject"); !strings.Contains(subj, "将于") || !strings.Contains(subj, "开始") {
		t.Errorf("mei's start reminder: %q", subj)
	}
	round(starts.Add(-10*time.Minute - 20*time.Second))
	want := map[string][]string{
		"mei@example.com":  {mail.KindVerifyEmail, mail.KindRemindLineOpen, mail.KindRemindStart},
		"ada@example.com":  {mail.KindVerifyEmail, mail.KindRemindLineOpen}, // unsubscribed before the start's
		"bob@example.com":  {mail.KindVerifyEmail},                          // deleted
		"carl@example.com": {mail.KindVerifyEmail},                          // never asked
	}
	for addr, kinds := range want {
		if got := mailsOf(t, s, addr); strings.Join(got, ",") != strings.Join(kinds, ",") {
			t.Errorf("%s was mailed %v; want %v", addr, got, kinds)
		}
	}
}

// The reminders job runs in the worker role.
func TestRemindersRunInTheWorkerRole(t *testing.T) {
	found := false
	for _, w := range roleTable[RoleWorker] {
		found = found || w == jobs.RemindersJob
	}
	if !found {
		t.Errorf("the worker role runs %v; want the reminders job among them", roleTable[RoleWorker])
	}
}

// A paid order's buyer with a verified address is mailed a receipt (order number, item, amount, time);
// a buyer without one is mailed nothing.
func TestReceiptIsMailedWhenAnOrderIsPaid(t *testing.T) {
	s := startRemindServer(t, jobs.OrderConsumerJob)
	_, _ = newPaySale(t, s.liveServer, 5)
	item, _ := newPaySale(t, s.liveServer, 5)
	payBy := func(b *browser, no string) {
		t.Helper()
		deliverTo(t, b, no, homeAddress)
		p := pay(t, b, no)
		if r := b.call("POST", "/sandbox/pay/"+p["payment_id"].(string)+"/confirm", nil); r.Status != 302 {
			t.Fatalf("pressing Pay: %d", r.Status)
		}
		waitStatus(t, s.liveServer, no, models.OrderPaid, 10*time.Second)
	}
	b, o := bareOrderFor(t, s.liveServer, item, "rcpt_mei")
	s.verifyEmail(t, b, "buyer@example.com")
	payBy(b, o.OrderNo)
	got := s.mailTo(t, "buyer@example.com", 2)
	text := got.Part("text/plain")
	if got.Header("Subject") != "Your receipt for order "+o.OrderNo {
		t.Errorf("the receipt's subject: %q", got.Header("Subject"))
	}
	for _, want := range []string{"Order number: " + o.OrderNo, "Item: Test item", "Amount paid: ¥9.90", "Paid at: ", s.URL + "/orders/" + o.OrderNo} {
		if !strings.Contains(text, want) {
			t.Errorf("the receipt does not say %q:\n%s", want, text)
		}
	}
	other, o2 := bareOrderFor(t, s.liveServer, item, "rcpt_none")
	payBy(other, o2.OrderNo)
	var receipts int64
	s.DB.Raw(`SELECT count(*) FROM mails WHERE kind = ?`, mail.KindReceipt).Scan(&receipts)
	if receipts != 1 {
		t.Errorf("%d receipts queued; want 1 (the buyer without an address gets none)", receipts)
	}
}

// verifiedInDB gives user id a verified address straight in the database, as the mailed link would.
func verifiedInDB(t *testing.T, s *liveServer, id int64, addr string) {
	t.Helper()
	ctx := context.Background()
	if _, err := models.SetEmail(ctx, s.DB, id, addr, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := models.VerifyEmail(ctx, s.DB, id, addr, time.Now()); err != nil {
		t.Fatal(err)
	}
	s.Srv.Emails.Changed(ctx, id)
}

// A sale an admin ended before its start is not coming: the shopper's list leaves it out (its calendar
// answers 404), and keeps the sale still coming.
func TestRemindersListLeavesOutASaleEndedEarly(t *testing.T) {
	s := startLive(t, liveOpts{only: []string{workerSessions, workerEmails}})
	ctx := context.Background()
	now := s.Clock.Now()
	ended, _ := testenv.Sale(t, s.DB, 10, now.Add(2*time.Hour), now.Add(3*time.Hour))
	coming, _ := testenv.Sale(t, s.DB, 10, now.Add(4*time.Hour), now.Add(5*time.Hour))
	b := newBrowser(t, s.URL)
	verifiedInDB(t, s, b.register("remind_list", passwordOf("remind_list")), "remind_list@example.com")
	for _, a := range []models.Activity{ended, coming} {
		expect(t, "remind me", b.call("POST", "/api/activities/"+itoa(a.ID)+"/reminder", nil), 201, "")
	}
	admin, err := models.CreateUser(ctx, s.DB, "remind_list_admin", "hash", models.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := models.Stop(ctx, s.DB, models.Actor{ID: admin.ID, Username: admin.Username}, ended.ID, models.ActEnd, "the supplier failed", now, nil); err != nil {
		t.Fatal(err)
	}
	var list []struct {
		ActivityID int64 `json:"activity_id"`
	}
	r := b.call("GET", "/api/me/reminders", nil)
	if err := json.Unmarshal(r.Body, &list); r.Status != 200 || err != nil {
		t.Fatalf("GET /api/me/reminders = %d %s", r.Status, r.Body)
	}
	if len(list) != 1 || list[0].ActivityID != coming.ID {
		t.Errorf("the list after sale %d ended before its start: %s; want sale %d alone", ended.ID, r.Body, coming.ID)
	}
}

// Someone a sale's rules keep out is refused its reminder with the code and the words its purchase would
// get, in English and Chinese: an account made after the sale's approval (accounts_before_approval) and a
// merchant. An account made before it goes on to the address's check.
func TestRemindMeFollowsTheSaleRules(t *testing.T) {
	s := startLive(t, liveOpts{only: []string{workerSessions, workerEmails}})
	now := s.Clock.Now()
	early := newBrowser(t, s.URL)
	earlyID := early.register("remind_early", passwordOf("remind_early"))
	sale, item := testenv.Sale(t, s.DB, 10, now.Add(2*time.Hour), now.Add(3*time.Hour))
	if err := s.DB.Exec(`UPDATE activities SET rule_accounts_before_approval = true, eligible_through = ?, reviewed_at = ? WHERE id = ?`,
		earlyID, now.Add(-time.Hour), sale.ID).Error; err != nil {
		t.Fatal(err)
	}
	late := newBrowser(t, s.URL)
	lateID := late.register("remind_late", passwordOf("remind_late"))
	verifiedInDB(t, s, lateID, "remind_late@example.com")
	staff := withRole(t, s, "remind_staff", models.RoleMerchant)
	remind := "/api/activities/" + itoa(sale.ID) + "/reminder"
	path := func(b *browser) reply {
		id, answer := b.captcha()
		return b.call("POST", "/api/items/"+itoa(item.ID)+"/path", map[string]string{"captcha_id": id, "captcha_answer": answer})
	}
	for _, who := range []struct {
		name string
		b    *browser
		code string
	}{{"an account made after approval", late, "not_eligible"}, {"a merchant", staff, "staff"}} {
		for _, lang := range []string{"en", "zh"} {
			who.b.setCookie("lang", lang)
			r := who.b.call("POST", remind, nil)
			expect(t, who.name+" asking a reminder in "+lang, r, 403, who.code)
			_, got := errorOf(t, r)
			_, want := errorOf(t, path(who.b))
			if got != want || got == "" {
				t.Errorf("%s in %s is told %q; the purchase says %q", who.name, lang, got, want)
			}
		}
	}
	var n int64
	s.DB.Raw(`SELECT count(*) FROM reminders WHERE activity_id = ?`, sale.ID).Scan(&n)
	if n != 0 {
		t.Errorf("%d reminders were kept for those the rules refuse", n)
	}
	expect(t, "an account made before approval, without an address", early.call("POST", remind, nil), 409, "email_required")
}
