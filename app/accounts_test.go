package app

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"image"
	_ "image/png"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/makiuchi-d/gozxing"
	gozxingqr "github.com/makiuchi-d/gozxing/qrcode"
	"github.com/redis/go-redis/v9"

	"seckill/handlers"
	"seckill/internal/testenv"
	"seckill/models"
)

func TestRegister(t *testing.T) {
	s := startLive(t, liveOpts{})
	b := newBrowser(t, s.URL)
	b.getCSRF()
	tests := []struct {
		name, username, password, field string
	}{
		{"too short a name", "ab", "long enough", "username"},
		{"too long a name", strings.Repeat("a", 33), "long enough", "username"},
		{"a space in the name", "bad name", "long enough", "username"},
		{"a dash in the name", "bad-name", "long enough", "username"},
		{"non-ascii name", "名字名字", "long enough", "username"},
		{"too short a password", "gooduser", "7 chars", "password"},
		{"too long a password", "gooduser", strings.Repeat("p", 73), "password"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := b.call("POST", "/api/auth/register", b.registration(tt.username, tt.password))
			if r.Status != 400 || r.code(t) != "bad_request" {
				t.Fatalf("got %d %s, want 400 bad_request", r.Status, r.Body)
			}
			if f, _ := r.json(t)["fields"].(map[string]any); f[tt.field] == nil {
				t.Errorf("the answer %s does not name the field %s", r.Body, tt.field)
			}
		})
	}
	if r := b.call("POST", "/api/auth/register", "not an object"); r.Status != 400 || r.code(t) != "bad_request" {
		t.Errorf("a body that is not an object: %d %s", r.Status, r.Body)
	}

	r := b.call("POST", "/api/auth/register", b.registration("Ming_88", "the kettle sings on the hob while rain taps the window of the old inn 72"))
	if r.Status != 201 {
		t.Fatalf("a good registration: %d %s", r.Status, r.Body)
	}
	j := r.json(t)
	if j["username"] != "Ming_88" || j["role"] != "shopper" || j["id"].(float64) <= 0 {
		t.Errorf("registration answered %s", r.Body)
	}
	if status, name := b.me(); status != 200 || name != "Ming_88" {
		t.Errorf("after registering, /api/me = %d %q; want logged in as Ming_88", status, name)
	}

	other := newBrowser(t, s.URL)
	other.getCSRF()
	r = other.call("POST", "/api/auth/register", other.registration("Ming_88", "another password"))
	if r.Status != 409 || r.code(t) != "username_taken" {
		t.Errorf("a taken name: %d %s, want 409 username_taken", r.Status, r.Body)
	}
}

func TestLoginLogoutAndSessions(t *testing.T) {
	s := startLive(t, liveOpts{})
	pc := newBrowser(t, s.URL)
	pc.register("lin", passwordOf("lin"))
	first := pc.cookie(handlers.SessionCookie)

	anon := newBrowser(t, s.URL)
	for _, creds := range []map[string]string{
		{"username": "lin", "password": "wrong password"},
		{"username": "nobody", "password": passwordOf("lin")},
	} {
		r := anon.call("POST", "/api/auth/login", creds)
		if r.Status != 401 || r.code(t) != "bad_credentials" {
			t.Errorf("login %v: %d %s, want 401 bad_credentials", creds, r.Status, r.Body)
		}
	}
	if status, _ := anon.me(); status != 401 {
		t.Errorf("a failed login left a session: /api/me = %d", status)
	}

	// A session id planted before login (fixation) does not survive it.
	phone := newBrowser(t, s.URL)
	phone.setCookie(handlers.SessionCookie, first)
	phone.getCSRF()
	r := phone.call("POST", "/api/auth/login", map[string]string{"username": "lin", "password": passwordOf("lin")})
	if r.Status != 200 || r.json(t)["username"] != "lin" {
		t.Fatalf("login: %d %s", r.Status, r.Body)
	}
	second := phone.cookie(handlers.SessionCookie)
	if second == "" || second == first {
		t.Fatal("the session id did not change at login")
	}

	// Logout ends this phone's session, and a copy of its cookie, and no other: the PC stays logged in.
	if r := phone.call("POST", "/api/auth/logout", nil); r.Status != 204 {
		t.Fatalf("logout: %d %s", r.Status, r.Body)
	}
	if status, _ := phone.me(); status != 401 {
		t.Errorf("after logout /api/me = %d, want 401", status)
	}
	if status, name := pc.me(); status != 200 || name != "lin" {
		t.Errorf("logging the phone out logged the PC out too: /api/me = %d %q", status, name)
	}
	if r := pc.call("POST", "/api/auth/logout", nil); r.Status != 204 {
		t.Fatalf("logout of the PC: %d %s", r.Status, r.Body)
	}
	replay := newBrowser(t, s.URL)
	replay.setCookie(handlers.SessionCookie, second)
	if status, _ := replay.me(); status != 401 {
		t.Errorf("a copy of the logged-out cookie still works: /api/me = %d", status)
	}

	// Logging in again works, with a new session.
	pc.getCSRF()
	if r := pc.call("POST", "/api/auth/login", map[string]string{"username": "lin", "password": passwordOf("lin")}); r.Status != 200 {
		t.Fatalf("login after logout: %d %s", r.Status, r.Body)
	}
	if status, name := pc.me(); status != 200 || name != "lin" {
		t.Errorf("after logging in again /api/me = %d %q", status, name)
	}
}

// TestLogoutReachesEveryInstance runs two instances on one database and Redis: a logout on one ends the
// session on the other, which checks sessions from memory.
func TestLogoutReachesEveryInstance(t *testing.T) {
	a := startLive(t, liveOpts{})
	b := startLive(t, liveOpts{db: a.DB, rdb: a.Redis})
	onA := newBrowser(t, a.URL)
	onA.register("wei", passwordOf("wei"))
	onB := newBrowser(t, b.URL)
	onB.setCookie(handlers.SessionCookie, onA.cookie(handlers.SessionCookie))
	if status, _ := onB.me(); status != 200 {
		t.Fatalf("the session made on A does not work on B: %d", status)
	}
	if r := onA.call("POST", "/api/auth/logout", nil); r.Status != 204 {
		t.Fatalf("logout: %d", r.Status)
	}
	// At once by pub/sub, or within 2 s by the database read; 10 s leaves room for a loaded machine.
	testenv.EventuallySaw(t, 10*time.Second, "instance B to refuse the session logged out on A", func() (bool, string) {
		sess, ok := b.Srv.Sessions.Check(onB.cookie(handlers.SessionCookie))
		return !ok, fmt.Sprintf("it accepts the session of user %d", sess.UserID)
	})
	if status, _ := onB.me(); status != 401 {
		t.Errorf("after logout on A, /api/me on B = %d, want 401", status)
	}
}

func TestCSRF(t *testing.T) {
	s := startLive(t, liveOpts{})
	b := newBrowser(t, s.URL)
	b.register("chen", passwordOf("chen"))
	good := b.csrf

	other := newBrowser(t, s.URL)
	other.getCSRF() // a genuine token, but another browser's

	for name, token := range map[string]string{
		"missing":                          "",
		"wrong":                            "not-a-token",
		"another browser's token":          other.csrf,
		"forged to match a planted cookie": base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32)),
	} {
		t.Run(name, func(t *testing.T) {
			if strings.HasPrefix(name, "forged") {
				b.setCookie(handlers.CSRFCookie, token)
				defer b.setCookie(handlers.CSRFCookie, good)
			}
			b.csrf, b.noAutoCSRF = token, true
			r := b.call("POST", "/api/auth/logout", nil)
			if r.Status != 403 || r.code(t) != "csrf" {
				t.Errorf("logout with a %s CSRF token: %d %s, want 403 csrf", name, r.Status, r.Body)
			}
		})
	}
	b.csrf, b.noAutoCSRF = good, false
	if status, _ := b.me(); status != 200 {
		t.Fatalf("a refused logout ended the session anyway: %d", status)
	}
	if r := b.call("POST", "/api/auth/logout", nil); r.Status != 204 {
		t.Errorf("logout with the right token: %d %s", r.Status, r.Body)
	}
}

func TestRoles(t *testing.T) {
	s := startLive(t, liveOpts{})
	shopper := newBrowser(t, s.URL)
	shopperID := shopper.register("shopper1", passwordOf("shopper"))
	admin := newBrowser(t, s.URL)
	adminID := admin.register("boss", passwordOf("boss"))
	if _, err := models.SetRole(context.Background(), s.DB, models.Actor{ID: adminID, Username: "boss"}, adminID, models.RoleAdmin, time.Now()); err != nil {
		t.Fatal(err)
	}
	admin.getCSRF()
	if r := admin.call("POST", "/api/auth/login", map[string]string{"username": "boss", "password": passwordOf("boss")}); r.Status != 200 {
		t.Fatal(r.Status)
	}
	nobody := newBrowser(t, s.URL)
	nobody.getCSRF()

	roleBody := map[string]string{"role": "merchant"}
	for _, tt := range []struct {
		who          *browser
		method, path string
		body         any
		status       int
		code         string
	}{
		{nobody, "GET", "/api/merchant/activities", nil, 401, "unauthenticated"},
		{shopper, "GET", "/api/merchant/activities", nil, 403, "forbidden"},
		{admin, "GET", "/api/merchant/activities", nil, 403, "forbidden"},
		{nobody, "POST", "/api/admin/users/1/role", roleBody, 401, "unauthenticated"},
		{shopper, "POST", "/api/admin/users/1/role", roleBody, 403, "forbidden"},
		{nobody, "GET", "/api/me", nil, 401, "unauthenticated"},
		{admin, "POST", "/api/admin/users/99999/role", roleBody, 404, "not_found"},
		{admin, "POST", "/api/admin/users/1/role", map[string]string{"role": "root"}, 400, "bad_request"},
	} {
		if r := tt.who.call(tt.method, tt.path, tt.body); r.Status != tt.status || r.code(t) != tt.code {
			t.Errorf("%s %s: %d %s, want %d %s", tt.method, tt.path, r.Status, r.Body, tt.status, tt.code)
		}
	}

	// An admin makes the shopper a merchant: the shopper's own session has the new role at once.
	r := admin.call("POST", "/api/admin/users/"+itoa(shopperID)+"/role", roleBody)
	if r.Status != 200 || r.json(t)["role"] != "merchant" || r.json(t)["username"] != "shopper1" {
		t.Fatalf("role change: %d %s", r.Status, r.Body)
	}
	if r := shopper.call("GET", "/api/merchant/activities", nil); r.Status != 200 {
		t.Errorf("the new merchant's session on a merchant route: %d %s", r.Status, r.Body)
	}
}

func TestLoginFailuresAreSlowed(t *testing.T) {
	s := startLive(t, liveOpts{})
	newBrowser(t, s.URL).register("target", "the real password")
	attacker := newBrowser(t, s.URL)
	for i := 1; i <= 5; i++ {
		if r := attacker.call("POST", "/api/auth/login", map[string]string{"username": "target", "password": "guess"}); r.Status != 401 {
			t.Fatalf("failure %d: %d %s, want 401", i, r.Status, r.Body)
		}
	}
	r := attacker.call("POST", "/api/auth/login", map[string]string{"username": "target", "password": "the real password"})
	if r.Status != 429 || r.code(t) != "rate_limited" || r.Header.Get("Retry-After") == "" {
		t.Errorf("after five failures: %d %s (Retry-After %q), want 429 rate_limited with Retry-After",
			r.Status, r.Body, r.Header.Get("Retry-After"))
	}
	// Another username from elsewhere is not slowed by it.
	other := newBrowser(t, s.URL)
	if r := other.call("POST", "/api/auth/login", map[string]string{"username": "someone", "password": "guess"}); r.Status != 401 {
		t.Errorf("another username: %d, want 401", r.Status)
	}
}

// decodeQR reads the text inside a data:image/png;base64 QR code, as a phone's camera would.
func decodeQR(t *testing.T, dataURL string) string {
	t.Helper()
	const prefix = "data:image/png;base64,"
	if !strings.HasPrefix(dataURL, prefix) {
		t.Fatalf("image is not a PNG data URL: %.40q", dataURL)
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(dataURL, prefix))
	if err != nil {
		t.Fatal(err)
	}
	img, _, err := image.Decode(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	bmp, err := gozxing.NewBinaryBitmapFromImage(img)
	if err != nil {
		t.Fatal(err)
	}
	res, err := gozxingqr.NewQRCodeReader().Decode(bmp, nil)
	if err != nil {
		// gozxing's finder misses about 1 in 90 clean, valid codes (36 of 3,000
		// random pay URLs; TRY_HARDER and a wider margin do not help), where a
		// phone reads them from another frame. Read the code as the whole image
		// then: it still has to be a valid QR code holding the text.
		pure := map[gozxing.DecodeHintType]interface{}{gozxing.DecodeHintType_PURE_BARCODE: true}
		if res, err = gozxingqr.NewQRCodeReader().Decode(bmp, pure); err != nil {
			t.Fatalf("the QR code does not decode: %v", err)
		}
	}
	return res.GetText()
}

// newQR has the PC browser ask for a code and returns its id, checking the image holds the phone's URL.
func newQR(t *testing.T, s *liveServer, pc *browser) string {
	t.Helper()
	r := pc.call("POST", "/api/qr/login", nil)
	if r.Status != 201 {
		t.Fatalf("POST /api/qr/login: %d %s", r.Status, r.Body)
	}
	j := r.json(t)
	id := j["qr_id"].(string)
	if len(id) < 32 {
		t.Errorf("qr_id %q is shorter than 128 bits in hex", id)
	}
	if _, err := time.Parse(time.RFC3339, j["expires_at"].(string)); err != nil {
		t.Errorf("expires_at: %v", err)
	}
	if got, want := decodeQR(t, j["image"].(string)), s.Cfg.BaseURL+"/m/qr/"+id; got != want {
		t.Errorf("the QR code holds %q, want %q", got, want)
	}
	return id
}

func TestQRLoginFlow(t *testing.T) {
	s := startLive(t, liveOpts{})
	phone := newBrowser(t, s.URL)
	phoneUser := phone.register("phone_owner", passwordOf("phone"))

	pc := newBrowser(t, s.URL)
	id := newQR(t, s, pc)
	if r := pc.call("GET", "/api/qr/login/"+id, nil); r.Status != 200 || r.json(t)["state"] != "pending" {
		t.Fatalf("PC poll before scanning: %d %s", r.Status, r.Body)
	}

	// The phone follows the URL inside the QR code: its page, then the scan its script makes.
	page := phone.call("GET", "/m/qr/"+id, nil)
	if page.Status != 200 || !bytes.Contains(page.Body, []byte("phone_owner")) {
		t.Fatalf("the phone's page: %d", page.Status)
	}
	r := phone.call("POST", "/api/qr/login/"+id+"/scan", nil)
	if r.Status != 200 || r.json(t)["state"] != "scanned" {
		t.Fatalf("scan: %d %s", r.Status, r.Body)
	}
	pcInfo := r.json(t)["pc"].(map[string]any)
	if pcInfo["ip"] != "127.0.0.1" || pcInfo["user_agent"] == "" || pcInfo["created_at"] == "" {
		t.Errorf("the phone is not shown where the PC is: %v", pcInfo)
	}
	if r := pc.call("GET", "/api/qr/login/"+id, nil); r.json(t)["state"] != "scanned" {
		t.Errorf("PC poll after scanning: %s", r.Body)
	}
	if r := phone.call("POST", "/api/qr/login/"+id+"/confirm", map[string]string{"code": qrNumber(t, pc, id)}); r.Status != 200 || r.json(t)["state"] != "confirmed" {
		t.Fatalf("confirm: %d %s", r.Status, r.Body)
	}

	r = pc.call("GET", "/api/qr/login/"+id, nil)
	user, _ := r.json(t)["user"].(map[string]any)
	if r.Status != 200 || r.json(t)["state"] != "confirmed" || user == nil || int64(user["id"].(float64)) != phoneUser {
		t.Fatalf("PC poll after confirm: %d %s", r.Status, r.Body)
	}
	if status, name := pc.me(); status != 200 || name != "phone_owner" {
		t.Errorf("the PC's /api/me = %d %q, want the phone's user", status, name)
	}

	// The code logs in one browser, once: a second read starts no second session.
	again := pc.call("GET", "/api/qr/login/"+id, nil)
	if again.json(t)["user"] != nil || again.Header.Get("Set-Cookie") != "" && strings.Contains(again.Header.Get("Set-Cookie"), handlers.SessionCookie) {
		t.Errorf("a second read of the confirmed code logged in again: %s", again.Body)
	}
}

func TestQRLoginRefusals(t *testing.T) {
	s := startLive(t, liveOpts{})
	phone := newBrowser(t, s.URL)
	phone.register("owner", passwordOf("owner"))
	otherPhone := newBrowser(t, s.URL)
	otherPhone.register("intruder", passwordOf("intruder"))
	pc := newBrowser(t, s.URL)
	third := newBrowser(t, s.URL)
	expectState := func(b *browser, id, action string) {
		t.Helper()
		r := b.call("POST", "/api/qr/login/"+id+"/"+action, nil)
		if r.Status != 409 || r.code(t) != "qr_state" {
			t.Errorf("%s: %d %s, want 409 qr_state", action, r.Status, r.Body)
		}
	}

	id := newQR(t, s, pc)
	if r := third.call("GET", "/api/qr/login/"+id, nil); r.Status != 404 {
		t.Errorf("a third browser polling: %d, want 404", r.Status)
	}
	if r := third.call("GET", "/api/qr/login/00000000000000000000000000000000", nil); r.Status != 404 {
		t.Errorf("an unknown code: %d, want 404", r.Status)
	}
	if r := pc.call("GET", "/api/qr/login/not-a-code", nil); r.Status != 404 {
		t.Errorf("a malformed code: %d, want 404", r.Status)
	}
	anon := newBrowser(t, s.URL)
	anon.getCSRF()
	if r := anon.call("POST", "/api/qr/login/"+id+"/scan", nil); r.Status != 401 {
		t.Errorf("scanning without logging in: %d, want 401", r.Status)
	}
	if r := anon.call("GET", "/m/qr/"+id, nil); r.Status != 302 || !strings.Contains(r.Header.Get("Location"), "/login?next=") {
		t.Errorf("the phone page without a session should send to log in first: %d %s", r.Status, r.Header.Get("Location"))
	}
	expectState(phone, id, "confirm") // confirming without scanning
	if r := phone.call("POST", "/api/qr/login/"+id+"/scan", nil); r.Status != 200 {
		t.Fatalf("scan: %d", r.Status)
	}
	expectState(otherPhone, id, "scan")    // scanned once
	expectState(otherPhone, id, "confirm") // confirmed only by the session that scanned
	if r := phone.call("POST", "/api/qr/login/"+id+"/confirm", map[string]string{"code": qrNumber(t, pc, id)}); r.Status != 200 {
		t.Fatalf("confirm: %d", r.Status)
	}
	expectState(phone, id, "confirm") // a second confirm
	if r := third.call("GET", "/api/qr/login/"+id, nil); r.Status != 404 {
		t.Errorf("a third browser polling a confirmed code: %d, want 404", r.Status)
	}
	if status, _ := third.me(); status != 401 {
		t.Error("a third browser got logged in")
	}

	// Cancelled on the phone: the PC is told, and the code can no longer be confirmed.
	cancelled := newQR(t, s, pc)
	phone.call("POST", "/api/qr/login/"+cancelled+"/scan", nil)
	if r := phone.call("POST", "/api/qr/login/"+cancelled+"/cancel", nil); r.Status != 200 || r.json(t)["state"] != "cancelled" {
		t.Fatalf("cancel: %d %s", r.Status, r.Body)
	}
	expectState(phone, cancelled, "confirm")
	if r := pc.call("GET", "/api/qr/login/"+cancelled, nil); r.json(t)["state"] != "cancelled" {
		t.Errorf("PC poll of a cancelled code: %s", r.Body)
	}

	// Expired: the clock moves past QR_TTL.
	expired := newQR(t, s, pc)
	scannedThenExpired := newQR(t, s, pc)
	phone.call("POST", "/api/qr/login/"+scannedThenExpired+"/scan", nil)
	s.Clock.Advance(testConfig().QRTTL + time.Second)
	expectState(phone, expired, "scan")
	expectState(phone, scannedThenExpired, "confirm")
	if r := pc.call("GET", "/api/qr/login/"+expired, nil); r.json(t)["state"] != "expired" {
		t.Errorf("PC poll of an expired code: %s", r.Body)
	}
	if status, _ := pc.me(); status != 401 {
		t.Error("the PC got logged in by a refused code")
	}
}

// countingHook counts the commands sent to Redis.
type countingHook struct{ n atomic.Int64 }

func (h *countingHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *countingHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { h.n.Add(1); return next(ctx, cmd) }
}
func (h *countingHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { h.n.Add(int64(len(cmds))); return next(ctx, cmds) }
}

// TestSessionCheckMakesNoRedisCall: the session and CSRF checks that guard the buy endpoint read memory
// only; a state-changing request behind them reaches its handler without a Redis command.
func TestSessionCheckMakesNoRedisCall(t *testing.T) {
	var seen atomic.Int64
	s := startLive(t, liveOpts{noBackground: true, setup: func(srv *Server) {
		srv.Fiber.Post("/api/test/guarded", handlers.RequireUser, func(c *fiber.Ctx) error {
			sess, _ := handlers.SessionOf(c)
			seen.Store(sess.UserID)
			return c.SendStatus(fiber.StatusAccepted)
		})
	}})
	hook := &countingHook{}
	s.Redis.AddHook(hook)
	b := newBrowser(t, s.URL)
	id := b.register("buyer", passwordOf("buyer"))

	before := hook.n.Load()
	for range 20 {
		if r := b.call("POST", "/api/test/guarded", nil); r.Status != 202 {
			t.Fatalf("guarded request: %d %s", r.Status, r.Body)
		}
	}
	if n := hook.n.Load() - before; n != 0 {
		t.Errorf("20 guarded requests sent %d Redis commands, want 0", n)
	}
	if seen.Load() != id {
		t.Errorf("the handler saw user %d, want %d", seen.Load(), id)
	}
	anon := newBrowser(t, s.URL)
	if r := anon.call("POST", "/api/test/guarded", nil); r.Status != 401 {
		t.Errorf("without a session: %d, want 401", r.Status)
	}
}

func TestInstancesWithoutNodeIDLeaseDifferentOnes(t *testing.T) {
	rdb := testenv.Redis(t)
	cfg := testConfig() // NODE_ID unset
	seen := map[int64]bool{}
	for range 3 {
		n, err := leaseNode(context.Background(), cfg, rdb)
		if err != nil {
			t.Fatal(err)
		}
		if seen[n] || n < 0 || n > 1023 {
			t.Fatalf("leased node %d twice or out of range (%v)", n, seen)
		}
		seen[n] = true
	}
	cfg.NodeID = 7
	if n, _ := leaseNode(context.Background(), cfg, rdb); n != 7 {
		t.Errorf("an explicit NODE_ID=7 gave node %d", n)
	}
}
