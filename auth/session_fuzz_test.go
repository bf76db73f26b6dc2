package auth_test

import (
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"seckill/auth"
	"seckill/models"
)

// FuzzSessionCookie: Check takes a cookie only if Issue made it, gives back exactly the session Issue
// made (role included, and no session for a role that is not one), and refuses the cookie once it
// expires, with any byte changed, or under another secret. Check reads memory only: the Sessions need no
// database and no Redis for it.
func FuzzSessionCookie(f *testing.F) {
	start := time.Date(2026, 11, 11, 10, 0, 0, 123456789, time.UTC)
	const ttl = 24 * time.Hour
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	s := auth.NewSessions(fzSecret, ttl, nil, nil, func() time.Time { return start }, log)
	later := auth.NewSessions(fzSecret, ttl, nil, nil, func() time.Time { return start.Add(ttl) }, log)
	other := auth.NewSessions(fzSecret+"x", ttl, nil, nil, func() time.Time { return start }, log)

	// The fuzzer only ever sends what it made from the seeds, never a cookie issued at run time: so a fuzzed
	// cookie that is taken is a forgery. (Seeds are constants for that reason: the fuzzing workers share the
	// secret and the clock.) No seed changes the last character (pos 98 of 99), whose two spare bits would
	// make a seed fail by chance rather than every time.
	const genuineLooking = "AQAAAAAAAAAHAAAAAAAAAAEAAAAAavWOIAGQYB79pr___XJOw296A70vd8MPlRAoWbVKcu3UIMFS8CBRnFJq8NEGrXvRRlTmDca"
	f.Add(genuineLooking, int64(7), int64(1), models.RoleShopper, uint16(0), byte('A'))
	f.Add("", int64(1), int64(0), models.RoleAdmin, uint16(97), byte('B'))
	f.Add(strings.Repeat("A", 99), int64(-1), int64(-1), models.RoleMerchant, uint16(50), byte('-'))
	f.Add(strings.Repeat("_", 100), int64(9223372036854775807), int64(9223372036854775807), "", uint16(1), byte('='))
	f.Add(genuineLooking+"=", int64(0), int64(0), "superuser", uint16(25), byte(0))
	f.Add("AQ\r\n", int64(2), int64(3), "Admin", uint16(200), byte(0xff))
	f.Fuzz(func(t *testing.T, value string, userID, version int64, role string, pos uint16, b byte) {
		if _, ok := s.Check(value); ok {
			t.Fatalf("Check(%q) took a cookie that Issue never made", value)
		}
		issued, cookie, err := s.Issue(&models.User{ID: userID, SessionVersion: version, Role: role})
		if err != nil {
			t.Fatal(err)
		}
		got, ok := s.Check(cookie)
		if ok != models.ValidRole(role) {
			t.Fatalf("role %q: Check of its cookie = %v, want %v", role, ok, models.ValidRole(role))
		}
		if !ok {
			return
		}
		if got.UserID != userID || got.Version != version || got.Role != role || got.ID != issued.ID || got.Expires.Unix() != issued.Expires.Unix() {
			t.Fatalf("Check gave %+v for the cookie of %+v", got, issued)
		}
		if _, ok := later.Check(cookie); ok {
			t.Fatalf("cookie %q is taken at its expiry %v", cookie, issued.Expires)
		}
		if _, ok := other.Check(cookie); ok {
			t.Fatalf("cookie %q is taken under another secret", cookie)
		}
		if m := fzMutate(cookie, pos, b); m != cookie {
			if _, ok := s.Check(m); ok {
				t.Fatalf("cookie %q with byte %d set to %q (%q) is taken", cookie, int(pos)%len(cookie), b, m)
			}
		}
		for _, m := range []string{cookie[:len(cookie)-1], cookie + "A", cookie + "=", " " + cookie} {
			if _, ok := s.Check(m); ok {
				t.Fatalf("cookie %q, cut or lengthened to %q, is taken", cookie, m)
			}
		}
	})
}
