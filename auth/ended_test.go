package auth

import (
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"seckill/models"
)

func testSessions(now func() time.Time) *Sessions {
	return NewSessions("a secret of the ended set's test", 24*time.Hour, nil, nil, now, slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// A session ended on another instance (its message on the channel) is refused here; the user's other
// sessions are not; a message that is not one is ignored.
func TestEndedMessageRefusesOneSession(t *testing.T) {
	start := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	now := start
	s := testSessions(func() time.Time { return now })
	u := &models.User{ID: 9, SessionVersion: 1, Role: models.RoleShopper, Username: "nine"}
	one, oneCookie, _ := s.Issue(u)
	_, twoCookie, _ := s.Issue(u)
	exp := strconv.FormatInt(one.Expires.Unix(), 10)
	for _, junk := range []string{"end:", "end:9:" + one.IDString(), "end:9:" + one.IDString() + ":soon:1", "end:9:zz" + one.IDString()[2:] + ":" + exp + ":1",
		"end:9:" + one.IDString()[:30] + ":" + exp + ":1", "end:9:" + one.IDString() + ":" + exp, "end:x:" + one.IDString() + ":" + exp + ":1",
		"end:9:" + one.IDString() + ":" + exp + ":v"} {
		s.applyMessage(junk)
	}
	if _, ok := s.Check(oneCookie); !ok {
		t.Fatal("a malformed message ended a session")
	}
	s.applyMessage("end:10:" + one.IDString() + ":" + exp + ":1") // another user's session of that id: not this one
	if _, ok := s.Check(oneCookie); !ok {
		t.Fatal("the end of another user's session ended this one")
	}
	s.applyMessage("end:9:" + one.IDString() + ":" + exp + ":1")
	if _, ok := s.Check(oneCookie); ok {
		t.Error("the ended session is still taken")
	}
	if _, ok := s.Check(twoCookie); !ok {
		t.Error("ending one session ended another of the user")
	}
	// Once the session would have expired, its id is forgotten (the cookie is refused as expired anyway).
	s.applyMessage("end:10:" + one.IDString() + ":" + exp + ":1")
	now = one.Expires.Add(time.Second)
	s.ended.forget(now)
	if n := s.ended.size.Load(); n != 0 {
		t.Errorf("%d ids kept after their sessions expired", n)
	}
}

// A user's ended ids whose version the user's session version has passed are dropped (the version
// refuses their cookies); those of the current version are kept and still refused.
func TestNewerVersionDropsEndedIDs(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	s := testSessions(func() time.Time { return now })
	u := &models.User{ID: 4, SessionVersion: 1, Role: models.RoleShopper, Username: "four"}
	old, oldCookie, _ := s.Issue(u)
	u.SessionVersion = 2
	cur, curCookie, _ := s.Issue(u)
	s.ended.add(4, old.ID, old.Expires, 1)
	s.ended.add(4, cur.ID, cur.Expires, 2)
	s.ended.add(6, old.ID, old.Expires, 1) // another user's: untouched
	s.apply(4, 2, models.RoleShopper, now)
	if n := s.ended.count(4); n != 1 {
		t.Errorf("user 4 at version 2 keeps %d ended ids, want 1 (that of version 2)", n)
	}
	if n := s.ended.count(6); n != 1 {
		t.Errorf("user 6 keeps %d ended ids after user 4's version changed, want 1", n)
	}
	for what, c := range map[string]string{"version 1, dropped": oldCookie, "version 2, kept": curCookie} {
		if _, ok := s.Check(c); ok {
			t.Errorf("an ended session of %s is taken", what)
		}
	}
}

// A cookie of an older session version than this instance knows is refused; one of a newer version (the
// caller's own after "log out everywhere else" on another instance, before this one heard of it) is taken.
func TestNewerSessionVersionIsTaken(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	s := testSessions(func() time.Time { return now })
	_, old, _ := s.Issue(&models.User{ID: 5, SessionVersion: 1, Role: models.RoleShopper, Username: "five"})
	_, newer, _ := s.Issue(&models.User{ID: 5, SessionVersion: 3, Role: models.RoleShopper, Username: "five"})
	s.apply(5, 2, models.RoleShopper, now)
	if _, ok := s.Check(old); ok {
		t.Error("a cookie of version 1 is taken where the user is at version 2")
	}
	if _, ok := s.Check(newer); !ok {
		t.Error("a cookie of version 3 is refused where this instance knows version 2")
	}
}

// Last seen is noted once a session until written and seenEvery has passed, and the notes come out by
// the minute they were made in.
func TestSeenNotes(t *testing.T) {
	var n seenNotes
	id := [16]byte{1}
	t0 := time.Date(2026, 11, 26, 12, 0, 30, 0, time.UTC)
	if !n.due(id) {
		t.Fatal("a session never seen is not due")
	}
	n.note(id, t0)
	if n.due(id) {
		t.Error("a session noted is due again at once")
	}
	got := n.take(t0)
	if ids := got[t0.Unix()-30]; len(got) != 1 || len(ids) != 1 || ids[0] != id {
		t.Errorf("take = %v; want the session in the minute of 12:00", got)
	}
	if len(n.take(t0.Add(time.Minute))) != 0 || n.due(id) {
		t.Error("a written note came out again, or the session is due before seenEvery")
	}
	n.take(t0.Add(seenEvery))
	if !n.due(id) {
		t.Error("seenEvery after its note was written, the session is not due")
	}
}

// Browsers and systems are named from the User-Agent, WeChat's in-app browser by its own name.
func TestAgentNames(t *testing.T) {
	a := NewAgents()
	for _, tt := range []struct{ ua, browser, system string }{
		{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Safari/537.36", "Chrome", "Windows"},
		{"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Safari/605.1.15", "Safari", "macOS"},
		{"Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 MicroMessenger/8.0.40(0x18002831) NetType/WIFI Language/zh_CN", "WeChat", "iOS"},
		{"Mozilla/5.0 (Linux; U; Android 12; zh-CN; V2118A Build/SP1A.210812.003) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/100.0.4896.58 UCBrowser/15.5.2.1241 Mobile Safari/537.36", "UC Browser", "Android"},
		{"Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:120.0) Gecko/20100101 Firefox/120.0", "Firefox", "Windows"},
		{"", "", ""},
		{"curl/8.0", "", ""},
	} {
		if b, s := a.Name(tt.ua); b != tt.browser || s != tt.system {
			t.Errorf("Name(%.40q) = %q, %q; want %q, %q", tt.ua, b, s, tt.browser, tt.system)
		}
	}
}
