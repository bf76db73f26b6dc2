package auth_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"io"
	"log/slog"
	"testing"
	"time"

	"seckill/auth"
	"seckill/models"
)

// formatOneCookie spells a session as cookies were before they carried the username (format 1): the
// format, user id, session version, expiry, role code and session id, then their HMAC-SHA256 under the
// key derived from the secret for sessions.
func formatOneCookie(secret string, userID, version int64, roleCode byte, id [16]byte, expires time.Time) string {
	buf := make([]byte, 42)
	buf[0] = 1
	binary.BigEndian.PutUint64(buf[1:], uint64(userID))
	binary.BigEndian.PutUint64(buf[9:], uint64(version))
	binary.BigEndian.PutUint64(buf[17:], uint64(expires.Unix()))
	buf[25] = roleCode
	copy(buf[26:], id[:])
	return signed(secret, buf)
}

// signed is payload and its MAC, as a cookie value.
func signed(secret string, payload []byte) string {
	k := hmac.New(sha256.New, []byte(secret))
	k.Write([]byte("session"))
	m := hmac.New(sha256.New, k.Sum(nil))
	m.Write(payload)
	return base64.RawURLEncoding.EncodeToString(m.Sum(payload))
}

// The cookie carries the username (so "who am I" needs no query); a cookie of the format before it is
// still taken, without a name, and Upgrade spells that same session in the current format.
func TestSessionCookieFormat(t *testing.T) {
	start := time.Date(2026, 11, 11, 10, 0, 0, 0, time.UTC)
	const secret, ttl = "a session secret of the cookie format test", 24 * time.Hour
	s := auth.NewSessions(secret, ttl, nil, nil, func() time.Time { return start }, slog.New(slog.NewTextHandler(io.Discard, nil)))

	issued, cookie, err := s.Issue(&models.User{ID: 42, SessionVersion: 3, Role: models.RoleMerchant, Username: "Mei_Lin"})
	if err != nil {
		t.Fatal(err)
	}
	got, ok := s.Check(cookie)
	if !ok || !same(got, issued) || got.Username != "Mei_Lin" || got.Role != models.RoleMerchant || got.UserID != 42 {
		t.Fatalf("Check of a new cookie = %+v, %v; want %+v", got, ok, issued)
	}
	raw, _ := base64.RawURLEncoding.DecodeString(cookie)
	if raw[0] != 2 {
		t.Errorf("a new cookie is of format %d, want 2", raw[0])
	}

	// A changed name, a lying name length (signed, so only the layout is wrong), a line break inserted, a
	// cut: refused.
	renamed := append([]byte(nil), raw...)
	renamed[43] = 'm'
	lying := append([]byte(nil), raw[:len(raw)-32]...)
	lying[42]--
	for name, bad := range map[string]string{
		"the name changed":    base64.RawURLEncoding.EncodeToString(renamed),
		"a lying name length": signed(secret, lying),
		"a line break inside": cookie[:50] + "\n" + cookie[50:],
		"cut":                 cookie[:len(cookie)-4],
	} {
		if _, ok := s.Check(bad); ok {
			t.Errorf("%s: Check took %q", name, bad)
		}
	}
	if string(raw[43:50]) != "Mei_Lin" || raw[42] != 7 {
		t.Errorf("the cookie's name is %q (length %d), want Mei_Lin after its length", raw[43:], raw[42])
	}

	// A cookie of format 1 (issued before this build) is taken, with no name.
	id := [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	expires := start.Add(time.Hour)
	old := formatOneCookie(secret, 7, 1, 1, id, expires)
	sess, ok := s.Check(old)
	if !ok || sess.UserID != 7 || sess.Version != 1 || sess.Role != models.RoleShopper || sess.ID != id || !sess.Expires.Equal(expires) || sess.Username != "" {
		t.Fatalf("Check of a format 1 cookie = %+v, %v", sess, ok)
	}
	if _, ok := s.Check(formatOneCookie(secret+"x", 7, 1, 1, id, expires)); ok {
		t.Error("a format 1 cookie under another secret was taken")
	}
	// Upgraded: the same session (id, version, expiry), with the name, in the current format.
	up, value, err := s.Upgrade(sess, "ming")
	if err != nil {
		t.Fatal(err)
	}
	again, ok := s.Check(value)
	if !ok || !same(again, up) || again.Username != "ming" || again.ID != id || again.Version != 1 || !again.Expires.Equal(expires) || again.UserID != 7 {
		t.Fatalf("the upgraded cookie checks as %+v, %v; want the session of %+v named ming", again, ok, sess)
	}
	if value == old {
		t.Error("Upgrade gave back the old cookie")
	}
}

// same reports whether two sessions are one: every field, the expiry as an instant.
func same(a, b auth.Session) bool {
	return a.UserID == b.UserID && a.Version == b.Version && a.Role == b.Role && a.ID == b.ID &&
		a.Expires.Equal(b.Expires) && a.Username == b.Username
}
