package app

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"seckill/handlers"
	"seckill/internal/testenv"
	"seckill/models"
)

const (
	uaWindowsChrome = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Safari/537.36"
	uaWeChatIPhone  = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 MicroMessenger/8.0.40(0x18002831) NetType/WIFI Language/zh_CN"
)

// loginAs logs a new browser of base in as username with userAgent: another device.
func loginAs(t *testing.T, base, username, userAgent string) *browser {
	t.Helper()
	b := newBrowser(t, base)
	b.name = username + " on " + userAgent[:20]
	b.getCSRF()
	body, _ := json.Marshal(map[string]string{"username": username, "password": passwordOf(username)})
	if r := b.send("POST", "/api/auth/login", body, map[string]string{"User-Agent": userAgent}); r.Status != 200 {
		t.Fatalf("login of %s: %d %s", username, r.Status, r.Body)
	}
	return b
}

// sessionRow is an entry of GET /api/me/sessions.
type sessionRow struct {
	ID         string    `json:"id"`
	Current    bool      `json:"current"`
	Browser    string    `json:"browser"`
	System     string    `json:"system"`
	IP         string    `json:"ip"`
	CreatedAt  time.Time `json:"created_at"`
	LastSeenAt time.Time `json:"last_seen_at"`
}

func sessionsOf(t *testing.T, b *browser) []sessionRow {
	t.Helper()
	r := b.call("GET", "/api/me/sessions", nil)
	if r.Status != 200 {
		t.Fatalf("GET /api/me/sessions as %s: %d %s", b.name, r.Status, r.Body)
	}
	var out []sessionRow
	if err := json.Unmarshal(r.Body, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func currentOf(t *testing.T, b *browser) sessionRow {
	t.Helper()
	for _, s := range sessionsOf(t, b) {
		if s.Current {
			return s
		}
	}
	t.Fatalf("%s's list marks no session current", b.name)
	return sessionRow{}
}

// The list shows the caller's live sessions, newest first, this one marked, with the browser and
// system each came from; a logout ends the caller's own session only; an id that is not the caller's
// live session is 404.
func TestSessionsListAndLogoutOfOne(t *testing.T) {
	s := startLive(t, liveOpts{only: []string{"sessions"}})
	newBrowser(t, s.URL).register("devices_ann", passwordOf("devices_ann"))
	pc := loginAs(t, s.URL, "devices_ann", uaWindowsChrome)
	s.Clock.Advance(time.Second)
	phone := loginAs(t, s.URL, "devices_ann", uaWeChatIPhone)

	list := sessionsOf(t, phone)
	if len(list) != 3 {
		t.Fatalf("3 logins (registration, PC, phone) list %d sessions: %+v", len(list), list)
	}
	if !list[0].Current || list[0].Browser != "WeChat" || list[0].System != "iOS" || list[0].IP != "127.0.0.1" {
		t.Errorf("the newest session, the phone's own, is %+v; want current, WeChat on iOS from 127.0.0.1", list[0])
	}
	if list[1].Current || list[1].Browser != "Chrome" || list[1].System != "Windows" {
		t.Errorf("the PC's session is %+v; want not current, Chrome on Windows", list[1])
	}
	for _, row := range list {
		if len(row.ID) != 32 || row.ID == phone.cookie(handlers.SessionCookie) {
			t.Errorf("a session's public id is %q", row.ID)
		}
	}
	if pcList := sessionsOf(t, pc); !pcList[1].Current || pcList[0].Current {
		t.Errorf("the PC's own list marks %+v", pcList)
	}

	// Another account's session, a made-up id, a malformed one: not found.
	stranger := newBrowser(t, s.URL)
	stranger.register("devices_bob", passwordOf("devices_bob"))
	expect(t, "ending another account's session", stranger.call("DELETE", "/api/me/sessions/"+list[1].ID, nil), 404, "not_found")
	expect(t, "ending a made-up session", phone.call("DELETE", "/api/me/sessions/0123456789abcdef0123456789abcdef", nil), 404, "not_found")
	expect(t, "ending a malformed id", phone.call("DELETE", "/api/me/sessions/nope", nil), 404, "not_found")
	// The answer says what was not found, in the reader's language (the review found the generic one).
	for _, c := range []struct{ lang, want string }{
		{"en", "This device is not logged in to your account"},
		{"zh", "该设备没有登录您的账号"},
	} {
		for _, id := range []string{"0123456789abcdef0123456789abcdef", "nope"} {
			r := phone.send("DELETE", "/api/me/sessions/"+id, nil, map[string]string{"Accept-Language": c.lang})
			if msg, _ := r.json(t)["message"].(string); r.Status != 404 || !strings.HasPrefix(msg, c.want) {
				t.Errorf("ending session %q in %s: %d %q; want 404 %q", id, c.lang, r.Status, msg, c.want)
			}
		}
	}
	expect(t, "the list without a session", newBrowser(t, s.URL).call("GET", "/api/me/sessions", nil), 401, "unauthenticated")
	if status, _ := pc.me(); status != 200 {
		t.Fatalf("the refused requests ended the PC's session: %d", status)
	}

	// The phone logs out: its session ends (a copy of its cookie too), the PC's goes on.
	cookie := phone.cookie(handlers.SessionCookie)
	expect(t, "logout", phone.call("POST", "/api/auth/logout", nil), 204, "")
	copied := newBrowser(t, s.URL)
	copied.setCookie(handlers.SessionCookie, cookie)
	if status, _ := copied.me(); status != 401 {
		t.Errorf("a copy of the logged-out cookie: /api/me = %d, want 401", status)
	}
	if status, name := pc.me(); status != 200 || name != "devices_ann" {
		t.Errorf("the phone's logout ended the PC's session: %d %q", status, name)
	}
	if got := sessionsOf(t, pc); len(got) != 2 || got[0].Browser == "WeChat" {
		t.Errorf("after the phone's logout the list is %+v; want the PC's and the registration's", got)
	}
	expect(t, "ending the logged-out session again", pc.call("DELETE", "/api/me/sessions/"+list[0].ID, nil), 404, "not_found")
}

// Ending one session on an instance is refused by another instance (the same database and Redis) within
// moments, and by one started after (from the database); the user's other sessions go on on both.
func TestEndingOneSessionReachesEveryInstance(t *testing.T) {
	only := liveOpts{only: []string{"sessions"}}
	a := startLive(t, only)
	only.db, only.rdb = a.DB, a.Redis
	b := startLive(t, only)
	newBrowser(t, a.URL).register("devices_cai", passwordOf("devices_cai"))
	keeper := loginAs(t, a.URL, "devices_cai", uaWindowsChrome)
	lost := loginAs(t, b.URL, "devices_cai", uaWeChatIPhone)
	other := loginAs(t, b.URL, "devices_cai", uaWindowsChrome)
	lostID := currentOf(t, lost).ID

	expect(t, "ending the lost phone from instance A", keeper.call("DELETE", "/api/me/sessions/"+lostID, nil), 204, "")
	testenv.EventuallySaw(t, 10*time.Second, "instance B to refuse the session ended on A", func() (bool, string) {
		sess, ok := b.Srv.Sessions.Check(lost.cookie(handlers.SessionCookie))
		return !ok, fmt.Sprintf("it accepts the session of user %d", sess.UserID)
	})
	if status, _ := lost.me(); status != 401 {
		t.Errorf("the ended session on B: /api/me = %d, want 401", status)
	}
	if status, _ := other.me(); status != 200 {
		t.Errorf("another session of the user on B: /api/me = %d, want 200", status)
	}
	if status, _ := keeper.me(); status != 200 {
		t.Errorf("the session that ended the other on A: /api/me = %d, want 200", status)
	}

	// An instance started now learns it from the database, before it serves.
	c := startLive(t, liveOpts{db: a.DB, rdb: a.Redis, noBackground: true})
	if err := c.Srv.Sessions.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Srv.Sessions.Check(lost.cookie(handlers.SessionCookie)); ok {
		t.Error("an instance started after the end accepts the ended session")
	}
	if _, ok := c.Srv.Sessions.Check(other.cookie(handlers.SessionCookie)); !ok {
		t.Error("an instance started after the end refuses the user's live session")
	}
}

// A password change needs the current password, takes a new one by registration's rules (every mistake
// at once, in the reader's language), is limited per account, and ends every other session but not
// the caller's; "log out everywhere else" does the same without a password.
func TestPasswordChangeAndEndOthers(t *testing.T) {
	only := liveOpts{only: []string{"sessions"}}
	a := startLive(t, only)
	only.db, only.rdb = a.DB, a.Redis
	b := startLive(t, only)
	const name = "devices_dai"
	newBrowser(t, a.URL).register(name, passwordOf(name))
	me := loginAs(t, a.URL, name, uaWindowsChrome)
	elsewhere := loginAs(t, b.URL, name, uaWeChatIPhone)

	r := me.call("POST", "/api/me/password", map[string]string{"current_password": "", "new_password": "password1"})
	expect(t, "no current password and a common new one", r, 400, "bad_request")
	if f, _ := r.json(t)["fields"].(map[string]any); f["current_password"] == nil || f["new_password"] == nil {
		t.Errorf("both mistakes at once: %s", r.Body)
	}
	me.setCookie(handlers.LangCookie, "zh")
	r = me.call("POST", "/api/me/password", map[string]string{"current_password": passwordOf(name), "new_password": "my devices_dai pass"})
	if f, _ := r.json(t)["fields"].(map[string]any); r.Status != 400 || f["new_password"] != "不能包含用户名" {
		t.Errorf("a new password holding the name, in Chinese: %d %s", r.Status, r.Body)
	}
	me.setCookie(handlers.LangCookie, "en")
	expect(t, "a wrong current password", me.call("POST", "/api/me/password", map[string]string{"current_password": "not it at all", "new_password": "copper kettle on the hill"}), 401, "bad_credentials")
	if status, _ := elsewhere.me(); status != 200 {
		t.Fatalf("refused changes ended another session: %d", status)
	}

	newPassword := "copper kettle on the hill"
	expect(t, "the change", me.call("POST", "/api/me/password", map[string]string{"current_password": passwordOf(name), "new_password": newPassword}), 204, "")
	if status, who := me.me(); status != 200 || who != name {
		t.Errorf("the caller's session after its password change: %d %q", status, who)
	}
	testenv.Eventually(t, 10*time.Second, "the other instance to end the other session", func() bool {
		status, _ := elsewhere.me()
		return status == 401
	})
	if list := sessionsOf(t, me); len(list) != 1 || !list[0].Current {
		t.Errorf("after the change the list is %+v; want this session alone", list)
	}
	anon := newBrowser(t, a.URL)
	anon.getCSRF()
	expect(t, "the old password", anon.call("POST", "/api/auth/login", map[string]string{"username": name, "password": passwordOf(name)}), 401, "bad_credentials")
	expect(t, "the new password", anon.call("POST", "/api/auth/login", map[string]string{"username": name, "password": newPassword}), 200, "")

	// Log out everywhere else: the other browser ends, this one goes on, on both instances.
	onB := newBrowser(t, b.URL)
	expect(t, "log out everywhere else", me.call("POST", "/api/me/sessions/end-others", nil), 204, "")
	onB.setCookie(handlers.SessionCookie, me.cookie(handlers.SessionCookie))
	testenv.Eventually(t, 10*time.Second, "the anonymous browser's session to end", func() bool {
		status, _ := anon.me()
		return status == 401
	})
	if status, _ := me.me(); status != 200 {
		t.Errorf("log out everywhere else logged this browser out: %d", status)
	}
	if status, _ := onB.me(); status != 200 {
		t.Errorf("this browser's new cookie on the other instance: %d", status)
	}

	// Wrong current passwords are limited per account.
	limited := false
	for i := 0; i < 8 && !limited; i++ {
		r := me.call("POST", "/api/me/password", map[string]string{"current_password": fmt.Sprintf("wrong guess %d", i), "new_password": "another long pass phrase"})
		limited = r.Status == 429
	}
	if !limited {
		t.Error("eight wrong current passwords in a row were never limited")
	}
}

// A blocked account's sessions end on every instance at once, and the list says so.
func TestBlockEndsEverySession(t *testing.T) {
	only := liveOpts{only: []string{"sessions"}}
	a := startLive(t, only)
	only.db, only.rdb = a.DB, a.Redis
	b := startLive(t, only)
	admin := withRole(t, a, "devices_boss", models.RoleAdmin)
	id := newBrowser(t, a.URL).register("devices_eve", passwordOf("devices_eve"))
	onA := loginAs(t, a.URL, "devices_eve", uaWindowsChrome)
	onB := loginAs(t, b.URL, "devices_eve", uaWeChatIPhone)
	expect(t, "block", admin.call("POST", "/api/admin/users/"+itoa(id)+"/block", map[string]any{"reason": "a stolen account"}), 200, "")
	testenv.Eventually(t, 10*time.Second, "both sessions to end", func() bool {
		sa, _ := onA.me()
		sb, _ := onB.me()
		return sa == 401 && sb == 401
	})
	if live, err := models.LiveSessionsOf(context.Background(), a.DB, id, a.Clock.Now()); err != nil || len(live) != 0 {
		t.Errorf("after the block the account has %d live sessions (%v)", len(live), err)
	}
}

// "Last seen" is written off the request path, at most once in a few minutes a session.
func TestLastSeenIsWrittenInBatches(t *testing.T) {
	s := startLive(t, liveOpts{noBackground: true})
	newBrowser(t, s.URL).register("devices_fay", passwordOf("devices_fay"))
	pc := loginAs(t, s.URL, "devices_fay", uaWindowsChrome)
	first := currentOf(t, pc)
	ctx := context.Background()
	s.Srv.Sessions.FlushSeen(ctx)
	s.Clock.Advance(6 * time.Minute)
	s.Srv.Sessions.FlushSeen(ctx) // the login's note is old now: forgotten, so the next request notes again
	before := dbCounts(t, s.Srv)
	if status, _ := pc.me(); status != 200 {
		t.Fatal(status)
	}
	if d := dbDelta(before, dbCounts(t, s.Srv)); len(d) > 0 {
		t.Errorf("the request that noted its session seen made database statements: %v", d)
	}
	if got := currentOf(t, pc); !got.LastSeenAt.Equal(first.LastSeenAt) {
		t.Errorf("last seen changed on the request's path: %v → %v", first.LastSeenAt, got.LastSeenAt)
	}
	s.Srv.Sessions.FlushSeen(ctx)
	got := currentOf(t, pc)
	if d := got.LastSeenAt.Sub(first.LastSeenAt); d < 5*time.Minute || d > 7*time.Minute {
		t.Errorf("after a request 6 minutes on, last seen moved by %v; want about 6 minutes", d)
	}
}

// The case: a PC logged in by QR code logs out, and the phone that approved it (waiting in a
// line, say) stays logged in. The QR login is a session of its own in the phone's list.
func TestQRLoggedPCLogsOutAlone(t *testing.T) {
	s := startLive(t, liveOpts{only: []string{"sessions"}})
	phone := newBrowser(t, s.URL)
	phone.register("devices_qr", passwordOf("devices_qr"))
	pc := newBrowser(t, s.URL)
	id, _ := scanned(t, s, pc, phone)
	right := qrNumber(t, pc, id)
	expect(t, "confirm", phone.call("POST", "/api/qr/login/"+id+"/confirm", map[string]string{"code": right}), 200, "")
	if r := pc.call("GET", "/api/qr/login/"+id, nil); r.json(t)["state"] != "confirmed" {
		t.Fatalf("the PC's poll after the confirm: %s", r.Body)
	}
	if list := sessionsOf(t, phone); len(list) != 2 || list[0].Current || !list[1].Current {
		t.Fatalf("the phone's list after the QR login: %+v; want the PC's session (newest) and the phone's own", list)
	}
	expect(t, "the PC logs out", pc.call("POST", "/api/auth/logout", nil), 204, "")
	if status, _ := pc.me(); status != 401 {
		t.Errorf("the PC after its logout: /api/me = %d", status)
	}
	if status, name := phone.me(); status != 200 || name != "devices_qr" {
		t.Errorf("the PC's logout logged the phone out: %d %q", status, name)
	}
}

// A blocked account's session on an instance that has not heard of the block yet cannot end the others
// and so get a cookie of the new session version, which every instance would take.
func TestBlockedSessionGetsNoNewCookie(t *testing.T) {
	s := startLive(t, liveOpts{noBackground: true}) // no refresh: this instance does not hear of the block
	chief := newBrowser(t, s.URL).register("devices_chief", passwordOf("devices_chief"))
	id := newBrowser(t, s.URL).register("devices_gus", passwordOf("devices_gus"))
	me := loginAs(t, s.URL, "devices_gus", uaWindowsChrome)
	// The block, written to the database as an admin's on another instance would be.
	if _, err := models.SetBlocked(context.Background(), s.DB, models.Actor{ID: chief, Username: "devices_chief"}, id, true, "stolen", s.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	before := me.cookie(handlers.SessionCookie)
	expect(t, "log out everywhere else, blocked", me.call("POST", "/api/me/sessions/end-others", nil), 401, "unauthenticated")
	expect(t, "a password change, blocked", me.call("POST", "/api/me/password", map[string]string{"current_password": passwordOf("devices_gus"), "new_password": "copper kettle on the hill"}), 401, "unauthenticated")
	if me.cookie(handlers.SessionCookie) != before {
		t.Error("the blocked session was given a new cookie")
	}
	if err := s.Srv.Sessions.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	if status, _ := me.me(); status != 401 {
		t.Errorf("once the instance knows of the block, the session: %d, want 401", status)
	}
}

// Stopping the sessions' worker writes the last seen it noted, and Run returns.
func TestSessionsWorkerWritesLastSeenWhenStopped(t *testing.T) {
	s := startLive(t, liveOpts{noBackground: true})
	newBrowser(t, s.URL).register("devices_hal", passwordOf("devices_hal"))
	pc := loginAs(t, s.URL, "devices_hal", uaWindowsChrome)
	first := currentOf(t, pc)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Srv.Sessions.Run(ctx) }()
	s.Srv.Sessions.FlushSeen(ctx)
	s.Clock.Advance(10 * time.Minute)
	s.Srv.Sessions.FlushSeen(ctx) // the login's note, written and old: forgotten
	if status, _ := pc.me(); status != 200 {
		t.Fatal(status)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the sessions' worker did not stop within 10 s of its context's end")
	}
	if got := currentOf(t, pc); got.LastSeenAt.Sub(first.LastSeenAt) < 9*time.Minute {
		t.Errorf("after the worker stopped, last seen is %v (login %v): the last note was not written", got.LastSeenAt, first.LastSeenAt)
	}
}

// An account has at most SESSION_MAX live sessions: a login past it logs out the account's oldest
// device, and only that one; the list shows SESSION_MAX.
func TestALoginPastSessionMaxLogsOutTheOldestDevice(t *testing.T) {
	s := startLive(t, liveOpts{only: []string{"sessions"}, tune: func(c *Config) { c.SessionMax = 2 }})
	first := newBrowser(t, s.URL)
	first.register("devices_dan", passwordOf("devices_dan"))
	s.Clock.Advance(time.Second)
	pc := loginAs(t, s.URL, "devices_dan", uaWindowsChrome)
	s.Clock.Advance(time.Second)
	phone := loginAs(t, s.URL, "devices_dan", uaWeChatIPhone)
	if status, _ := first.me(); status != 401 {
		t.Errorf("the oldest device after a third login with SESSION_MAX=2: /api/me = %d, want 401", status)
	}
	for _, b := range []*browser{pc, phone} {
		if status, _ := b.me(); status != 200 {
			t.Errorf("%s after the third login: /api/me = %d, want 200", b.name, status)
		}
	}
	if list := sessionsOf(t, phone); len(list) != 2 || list[1].Browser != "Chrome" {
		t.Errorf("the list after three logins with SESSION_MAX=2: %+v; want the phone's and the PC's", list)
	}
}

// An account logs in at most 10 times at once (then 30 an hour): past it, a login with the right
// password is answered 429 with Retry-After, in the person's language; another account logs in as ever.
func TestLoginsPerAccountAreLimited(t *testing.T) {
	s := startLive(t, liveOpts{only: []string{"sessions"}})
	newBrowser(t, s.URL).register("devices_eve", passwordOf("devices_eve")) // the first of the 10
	login := func(name, lang string) reply {
		b := newBrowser(t, s.URL)
		b.getCSRF()
		body, _ := json.Marshal(map[string]string{"username": name, "password": passwordOf(name)})
		r := b.send("POST", "/api/auth/login", body, map[string]string{"Accept-Language": lang})
		if r.Status == 200 {
			expect(t, "logout of "+name, b.call("POST", "/api/auth/logout", nil), 204, "")
		}
		return r
	}
	for i := 2; i <= 10; i++ {
		if r := login("devices_eve", "en"); r.Status != 200 {
			t.Fatalf("login %d of devices_eve: %d %s", i, r.Status, r.Body)
		}
	}
	r := login("devices_eve", "zh-CN")
	if r.Status != 429 || r.code(t) != "rate_limited" || r.Header.Get("Retry-After") == "" {
		t.Fatalf("the 11th login in a row: %d %s (Retry-After %q), want 429 rate_limited with Retry-After", r.Status, r.Body, r.Header.Get("Retry-After"))
	}
	if msg, _ := r.json(t)["message"].(string); msg != "此账号近期登录次数过多：请等待几分钟后再登录。" {
		t.Errorf("the refusal in Chinese says %q", msg)
	}
	newBrowser(t, s.URL).register("devices_fay", passwordOf("devices_fay"))
	if r := login("devices_fay", "en"); r.Status != 200 {
		t.Errorf("another account's login after devices_eve's were refused: %d %s", r.Status, r.Body)
	}
}
