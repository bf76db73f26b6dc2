package auth

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"seckill/models"
)

// otherSpelling changes the spare low bits of a raw base64url value's last character: the same bytes,
// spelt another way, which a lenient decoder accepts.
func otherSpelling(t *testing.T, v string) string {
	t.Helper()
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	if len(v)*6%8 == 0 {
		t.Fatalf("%d characters carry no spare bits", len(v))
	}
	i := strings.IndexByte(alphabet, v[len(v)-1])
	alt := v[:len(v)-1] + string(alphabet[i^1])
	lenient, _ := base64.RawURLEncoding.DecodeString(alt)
	orig, _ := base64.RawURLEncoding.DecodeString(v)
	if string(lenient) != string(orig) {
		t.Fatal("the other spelling decodes to other bytes: not a spelling")
	}
	return alt
}

// Found by fuzzing: a token or cookie had four spellings; it has one.
func TestTokensAndCookiesHaveOneSpelling(t *testing.T) {
	c := NewCSRF("a secret of at least thirty-two characters")
	tok, err := c.Token()
	if err != nil {
		t.Fatal(err)
	}
	if !c.Valid(tok, tok) {
		t.Fatal("a real token is refused")
	}
	if alt := otherSpelling(t, tok); c.Valid(alt, alt) {
		t.Errorf("the CSRF token %s is also accepted as %s", tok, alt)
	}
	// A line break in place of the last character, which a decoder skips, is no spelling either: with a
	// token whose last byte is zero it would decode to the same bytes (found by the second review).
	for range 2000 {
		tok, _ := c.Token()
		raw, _ := base64.RawURLEncoding.DecodeString(tok)
		if raw[len(raw)-1] != 0 {
			continue
		}
		for _, alt := range []string{tok[:len(tok)-1] + "\n", tok[:len(tok)-1] + "\r"} {
			if c.Valid(alt, alt) {
				t.Errorf("the CSRF token %s is also accepted with a line break: %q", tok, alt)
			}
		}
		break
	}

	s := NewSessions("a secret of at least thirty-two characters", time.Hour, nil, nil, time.Now, nil)
	// (A name of four letters: a cookie of 75 bytes, a name of none, fills its last character exactly.)
	_, cookie, err := s.Issue(&models.User{ID: 7, SessionVersion: 1, Role: models.RoleShopper, Username: "ming"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Check(cookie); !ok {
		t.Fatal("a real session cookie is refused")
	}
	if alt := otherSpelling(t, cookie); func() bool { _, ok := s.Check(alt); return ok }() {
		t.Errorf("the session cookie %s is also accepted as %s", cookie, alt)
	}
}
