package app

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"seckill/auth"
	"seckill/models"
)

// Issue 28's account rules, asserted as a person (or an attacker) meets them over HTTP.

// TestUsernamesAreUniqueIgnoringCase: ADM2 is taken when adm2 exists, and adm2 logs in by any case of
// its name (as itself).
func TestUsernamesAreUniqueIgnoringCase(t *testing.T) {
	s := startLive(t, liveOpts{only: []string{"sessions"}})
	owner := newBrowser(t, s.URL)
	ownerID := owner.register("adm2", passwordOf("adm2"))

	for _, name := range []string{"ADM2", "Adm2", "aDm2"} {
		b := newBrowser(t, s.URL)
		r := b.call("POST", "/api/auth/register", b.registration(name, passwordOf(name)))
		if r.Status != 409 || r.code(t) != "username_taken" {
			t.Errorf("registering %s beside adm2: %d %s, want 409 username_taken", name, r.Status, r.Body)
		}
	}
	b := newBrowser(t, s.URL)
	r := b.call("POST", "/api/auth/login", map[string]string{"username": "ADM2", "password": passwordOf("adm2")})
	if r.Status != 200 || r.json(t)["username"] != "adm2" || int64(r.json(t)["id"].(float64)) != ownerID {
		t.Errorf("logging in as ADM2 with adm2's password: %d %s, want 200 as adm2", r.Status, r.Body)
	}
}

// TestLoginLockIsTheAccounts: the attack of issue 28 — guess adm2's password 4 times, log in to
// another account whose name differs only by case (one made before names were unique ignoring case),
// repeat — no longer resets adm2's count: the 6th guess is refused, and so is the right password.
func TestLoginLockIsTheAccounts(t *testing.T) {
	s := startLive(t, liveOpts{only: []string{"sessions"}, tune: func(c *Config) { c.RateLimitIP = false }})
	newBrowser(t, s.URL).register("adm2", passwordOf("adm2"))
	// ADM2 as a database from before the rule may hold it: the index away, the row written directly.
	if err := s.DB.Exec("DROP INDEX IF EXISTS " + models.UsernameIndex).Error; err != nil {
		t.Fatal(err)
	}
	hash, err := auth.HashPassword("the attacker's own", 4)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := s.DB.Create(&models.User{Username: "ADM2", PasswordHash: hash, Role: models.RoleShopper, SessionVersion: 1, CreatedAt: now, UpdatedAt: now}).Error; err != nil {
		t.Fatal(err)
	}

	attacker := newBrowser(t, s.URL)
	attacker.getCSRF()
	guesses, refused := 0, 0
	for round := 0; round < 4; round++ {
		for range 4 {
			switch r := attacker.call("POST", "/api/auth/login", map[string]string{"username": "adm2", "password": "a guess"}); r.Status {
			case 401:
				guesses++
			case 429:
				refused++
			default:
				t.Fatalf("a guess at adm2: %d %s", r.Status, r.Body)
			}
		}
		if r := attacker.call("POST", "/api/auth/login", map[string]string{"username": "ADM2", "password": "the attacker's own"}); r.Status != 200 || r.json(t)["username"] != "ADM2" {
			t.Fatalf("the attacker's login to ADM2 (its own spelling first): %d %s", r.Status, r.Body)
		}
	}
	if guesses > 5 {
		t.Errorf("%d of 16 guesses at adm2 were checked (401) and %d refused, with a login to ADM2 after every 4: want at most 5 checked", guesses, refused)
	}
	r := attacker.call("POST", "/api/auth/login", map[string]string{"username": "adm2", "password": passwordOf("adm2")})
	if r.Status != 429 || r.code(t) != "rate_limited" {
		t.Errorf("adm2's right password after the guesses: %d %s, want 429 rate_limited (the account is locked)", r.Status, r.Body)
	}
}

// TestWeakPasswordsAreRefused: registration refuses a common password, one repeated character, a run,
// and one holding the username (any case), with the reason beside the field in the person's language.
func TestWeakPasswordsAreRefused(t *testing.T) {
	s := startLive(t, liveOpts{only: []string{"sessions"}})
	newBrowser(t, s.URL).register("adm", passwordOf("adm"))
	for _, tt := range []struct {
		username, password, lang, want string
	}{
		{"ming_1", "12345678", "en", "is too easy to guess"},
		{"ming_1", "aaaaaaaa", "en", "is too easy to guess"},
		{"ming_1", "password1", "zh", "太容易被猜到"},
		{"ming_1", "ming_1ming_1", "en", "must not contain the username"},
		{"ming_1", "my MING_1 pass", "zh", "不能包含用户名"},
	} {
		t.Run(tt.password, func(t *testing.T) {
			b := newBrowser(t, s.URL)
			b.getCSRF()
			raw, _ := json.Marshal(b.registration(tt.username, tt.password))
			r := b.send("POST", "/api/auth/register", raw, map[string]string{"Accept-Language": tt.lang})
			if r.Status != 400 || r.code(t) != "bad_request" {
				t.Fatalf("got %d %s, want 400 bad_request", r.Status, r.Body)
			}
			fields, _ := r.json(t)["fields"].(map[string]any)
			if got, _ := fields["password"].(string); !strings.Contains(got, tt.want) {
				t.Errorf("fields.password = %q, want it to say %q", got, tt.want)
			}
		})
	}
	// Adm beside adm, with a good password: the name is taken.
	b := newBrowser(t, s.URL)
	if r := b.call("POST", "/api/auth/register", b.registration("Adm", passwordOf("Adm"))); r.Status != 409 || r.code(t) != "username_taken" {
		t.Errorf("Adm beside adm: %d %s, want 409 username_taken", r.Status, r.Body)
	}
}

// TestShippedPasswordsPassTheRules: the demo's accounts are made without the checks (seedDemo hashes
// them directly), so their passwords are held to the rules here.
func TestShippedPasswordsPassTheRules(t *testing.T) {
	for _, a := range demoAccounts {
		if why := auth.ValidatePassword("password", a.Username, a.Password); len(why) > 0 {
			t.Errorf("the demo's %s / %s: %s", a.Username, a.Password, why[0].Key)
		}
	}
}

// TestTheLastAdminCannotLeave: the shop's only active admin cannot take its own admin role away (409
// last_admin, said in the person's language); with a second admin it can, and once the other is
// blocked the one left is the last again.
func TestTheLastAdminCannotLeave(t *testing.T) {
	s := startLive(t, liveOpts{only: []string{"sessions"}})
	boss := withRole(t, s, "boss", models.RoleAdmin)
	bossID := userID(t, s, "boss")
	demote := map[string]string{"role": "merchant"}

	r := boss.call("POST", "/api/admin/users/"+itoa(bossID)+"/role", demote)
	if r.Status != 409 || r.code(t) != "last_admin" || !strings.Contains(r.json(t)["message"].(string), "without an active admin") {
		t.Fatalf("the only admin demoting itself: %d %s, want 409 last_admin", r.Status, r.Body)
	}
	raw, _ := json.Marshal(demote)
	r = boss.send("POST", "/api/admin/users/"+itoa(bossID)+"/role", raw, map[string]string{"Accept-Language": "zh-CN"})
	if r.Status != 409 || !strings.Contains(r.json(t)["message"].(string), "管理员") {
		t.Errorf("in Chinese: %d %s, want the reason in Chinese", r.Status, r.Body)
	}
	if status, _ := boss.me(); status != 200 {
		t.Fatalf("boss after the refusal: %d", status)
	}

	chief := withRole(t, s, "chief", models.RoleAdmin)
	chiefID := userID(t, s, "chief")
	if r := chief.call("POST", "/api/admin/users/"+itoa(bossID)+"/block", map[string]string{"reason": "left the company"}); r.Status != 200 {
		t.Fatalf("chief blocking boss: %d %s", r.Status, r.Body)
	}
	r = chief.call("POST", "/api/admin/users/"+itoa(chiefID)+"/role", demote)
	if r.Status != 409 || r.code(t) != "last_admin" {
		t.Errorf("the last active admin (the other blocked) demoting itself: %d %s, want 409 last_admin", r.Status, r.Body)
	}
	if r := chief.call("POST", "/api/admin/users/"+itoa(bossID)+"/unblock", nil); r.Status != 200 {
		t.Fatalf("unblocking boss: %d %s", r.Status, r.Body)
	}
	if r := chief.call("POST", "/api/admin/users/"+itoa(chiefID)+"/role", demote); r.Status != 200 {
		t.Errorf("with boss active again, chief stepping down: %d %s, want 200", r.Status, r.Body)
	}
}

func userID(t *testing.T, s *liveServer, name string) int64 {
	t.Helper()
	u, err := models.UserByUsername(context.Background(), s.DB, name)
	if err != nil {
		t.Fatal(err)
	}
	return u.ID
}
