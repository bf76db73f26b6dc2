package app

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"seckill/captcha"
	"seckill/internal/testenv"
	"seckill/models"
	"seckill/pow"
)

// challengeOf asks the browser's challenge for query, unsolved.
func (b *browser) challengeOf(query string) pow.Challenge {
	b.t.Helper()
	r := b.call("GET", "/api/altcha?"+query, nil)
	if r.Status != 200 {
		b.t.Fatalf("GET /api/altcha?%s: %d %s", query, r.Status, r.Body)
	}
	var c pow.Challenge
	if err := json.Unmarshal(r.Body, &c); err != nil {
		b.t.Fatal(err)
	}
	return c
}

// captchaKept reports whether the captcha id is still there to be answered.
func captchaKept(t *testing.T, s *liveServer, id string) bool {
	t.Helper()
	n, err := s.Redis.Exists(context.Background(), captcha.Key(id)).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n == 1
}

// TestBadProofOfWorkLeavesTheCaptchaUsable: a registration or a join whose proof is missing, wrong,
// forged, expired, reused, or made for another purpose, item or account answers 400 bad_pow before the
// captcha is looked at, so the captcha the person typed still works with a good proof.
func TestBadProofOfWorkLeavesTheCaptchaUsable(t *testing.T) {
	db := testenv.Postgres(t)
	s := startLive(t, liveOpts{db: db, only: []string{"sessions"}})
	_, item := queueSale(t, db, s, 5)
	_, other := queueSale(t, db, s, 5)
	joinQ := "purpose=join&item_id=" + itoa(item.ID)
	ada := newBrowser(t, s.URL)
	ada.register("pow_ada", passwordOf("pow_ada"))
	bo := newBrowser(t, s.URL)
	bo.register("pow_bo", passwordOf("pow_bo"))
	forger := pow.New("another secret of thirty-two characters or more", testPow, s.Redis, s.Clock.Now)

	// A proof sent once already: with a wrong captcha, which uses the proof up (and that captcha).
	usedJoin := ada.altcha(joinQ)
	id, answer := ada.captcha()
	expect(t, "a join with a wrong captcha", ada.call("POST", "/api/items/"+itoa(item.ID)+"/queue",
		map[string]string{"captcha_id": id, "captcha_answer": answer + "x", "altcha": usedJoin}), 400, "bad_captcha")
	usedReg := newBrowser(t, s.URL).altcha("purpose=register")
	if r := newBrowser(t, s.URL).call("POST", "/api/auth/register", map[string]string{"username": "pow_first", "password": passwordOf("pow_first"),
		"captcha_id": "0123456789abcdef0123456789abcdef", "captcha_answer": "12345", "altcha": usedReg}); r.code(t) != "bad_captcha" {
		t.Fatalf("a registration with a wrong captcha: %d %s", r.Status, r.Body)
	}

	expired := func(b *browser, query string) string {
		c := b.challengeOf(query)
		s.Clock.Advance(pow.TTL + time.Second)
		return solvePow(t, c)
	}
	forged := func(a pow.Ask) string {
		c, err := forger.Challenge(context.Background(), a)
		if err != nil {
			t.Fatal(err)
		}
		return solvePow(t, c)
	}
	tests := []struct {
		name   string
		who    *browser
		route  string // register or join
		altcha func() string
	}{
		{"join: missing", ada, "join", func() string { return "" }},
		{"join: not base64", ada, "join", func() string { return "not base64!" }},
		{"join: reused", ada, "join", func() string { return usedJoin }},
		{"join: expired", ada, "join", func() string { return expired(ada, joinQ) }},
		{"join: forged", ada, "join", func() string { return forged(pow.Ask{Purpose: pow.Join, ItemID: item.ID, UserID: 1}) }},
		{"join: a registration's", ada, "join", func() string { return ada.altcha("purpose=register") }},
		{"join: another item's", ada, "join", func() string { return ada.altcha("purpose=join&item_id=" + itoa(other.ID)) }},
		{"join: another account's", ada, "join", func() string { return bo.altcha(joinQ) }},
		{"register: missing", newBrowser(t, s.URL), "register", func() string { return "" }},
		{"register: reused", newBrowser(t, s.URL), "register", func() string { return usedReg }},
		{"register: expired", newBrowser(t, s.URL), "register", func() string { return expired(newBrowser(t, s.URL), "purpose=register") }},
		{"register: forged", newBrowser(t, s.URL), "register", func() string { return forged(pow.Ask{Purpose: pow.Register}) }},
		{"register: a join's", newBrowser(t, s.URL), "register", func() string { return ada.altcha(joinQ) }},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.who.in(t)
			id, answer := b.captcha()
			proof := tt.altcha()
			body := map[string]string{"captcha_id": id, "captcha_answer": answer, "altcha": proof}
			path := "/api/items/" + itoa(item.ID) + "/queue"
			if tt.route == "register" {
				path = "/api/auth/register"
				body["username"], body["password"] = "pow_"+itoa(int64(i)), passwordOf("pow")
			}
			expect(t, "a bad proof", b.call("POST", path, body), 400, "bad_pow")
			s.Clock.Set(time.Now()) // back from an expiry
			if !captchaKept(t, s, id) {
				t.Fatal("a bad proof used the captcha up")
			}
			if tt.route == "register" {
				body["altcha"] = b.altcha("purpose=register")
				expect(t, "the same captcha with a good proof", b.call("POST", path, body), 201, "")
			}
		})
	}
	// The captcha a bad proof left is good for the join with a good proof (once: the join is kept).
	id, answer = ada.captcha()
	body := map[string]string{"captcha_id": id, "captcha_answer": answer, "altcha": usedJoin}
	expect(t, "a reused proof", ada.call("POST", "/api/items/"+itoa(item.ID)+"/queue", body), 400, "bad_pow")
	body["altcha"] = ada.altcha(joinQ)
	expect(t, "the same captcha with a good proof", ada.call("POST", "/api/items/"+itoa(item.ID)+"/queue", body), 200, "")
}

// TestAltchaChallenges: GET /api/altcha answers the contract's challenge for a registration (anyone)
// and for a join (a shopper, a queue item), priced higher for a new account, and refuses the rest.
func TestAltchaChallenges(t *testing.T) {
	s := startLive(t, liveOpts{only: []string{"sessions"}})
	now := s.Clock.Now()
	_, firstCome := testenv.Sale(t, s.DB, 10, now.Add(time.Minute), now.Add(time.Hour))
	_, queued := queueSale(t, s.DB, s, 5)
	anon := newBrowser(t, s.URL)
	r := anon.call("GET", "/api/altcha?purpose=register", nil)
	c := r.json(t)
	if r.Status != 200 || c["algorithm"] != "SHA-256" || c["maxnumber"] != float64(testPow) || r.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("a registration's challenge: %d %s %v", r.Status, r.Body, r.Header)
	}
	for _, k := range []string{"challenge", "salt", "signature"} {
		if v, _ := c[k].(string); v == "" {
			t.Errorf("the challenge has no %s: %s", k, r.Body)
		}
	}
	if salt := c["salt"].(string); !strings.Contains(salt, "?") || !strings.Contains(salt, "expires=") || !strings.Contains(salt, "purpose=register") {
		t.Errorf("the salt %q does not carry its expiry and purpose", salt)
	}
	shopper := newBrowser(t, s.URL)
	shopper.register("pow_newcomer", passwordOf("pow_newcomer"))
	if c := shopper.challengeOf("purpose=join&item_id=" + itoa(queued.ID)); c.MaxNumber != 2*testPow {
		t.Errorf("a new account's join costs %d, want %d", c.MaxNumber, 2*testPow)
	}
	// Made two days ago, it is not new: once the instance reads again which accounts are (each minute).
	if err := s.DB.Model(&models.User{}).Where("username = ?", "pow_newcomer").Update("created_at", now.Add(-48*time.Hour)).Error; err != nil {
		t.Fatal(err)
	}
	s.Clock.Advance(61 * time.Second)
	if c := shopper.challengeOf("purpose=join&item_id=" + itoa(queued.ID)); c.MaxNumber != testPow {
		t.Errorf("an account two days old: its join costs %d, want %d", c.MaxNumber, testPow)
	}
	tests := []struct {
		name   string
		b      *browser
		query  string
		status int
		field  string
	}{
		{"no purpose", anon, "", 400, "purpose"},
		{"another purpose", anon, "purpose=buy", 400, "purpose"},
		{"a join without a session", anon, "purpose=join&item_id=" + itoa(queued.ID), 401, ""},
		{"a join without an item", shopper, "purpose=join", 400, "item_id"},
		{"a join of junk", shopper, "purpose=join&item_id=x1", 400, "item_id"},
		{"a join of no item", shopper, "purpose=join&item_id=999999", 400, "item_id"},
		{"a join of a first-come item", shopper, "purpose=join&item_id=" + itoa(firstCome.ID), 400, "item_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.b.in(t).call("GET", "/api/altcha?"+tt.query, nil)
			f, _ := r.json(t)["fields"].(map[string]any)
			if r.Status != tt.status || (tt.field != "" && f[tt.field] == nil) {
				t.Errorf("%d %s, want %d naming %q", r.Status, r.Body, tt.status, tt.field)
			}
		})
	}
}

// A challenge is limited as a captcha is: a page asks one per registration or join, a script asking a
// stream of them is told to wait.
func TestChallengesAreRateLimited(t *testing.T) {
	s := startLive(t, liveOpts{noBackground: true})
	b := newBrowser(t, s.URL)
	b.register("many_challenges", passwordOf("many_challenges"))
	var last reply
	for range 12 {
		if last = b.call("GET", "/api/altcha?purpose=register", nil); last.Status != 200 {
			break
		}
	}
	if last.Status != 429 || last.code(t) != "rate_limited" {
		t.Fatalf("twelve challenges at once for one account: the last answered %d %s; want 429 rate_limited", last.Status, last.Body)
	}
}
