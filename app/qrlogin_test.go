package app

import (
	"bytes"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"seckill/handlers"
	"seckill/internal/geo/geotest"
)

var twoDigits = regexp.MustCompile(`^[0-9]{2}$`)

// qrNumber is the number the PC's login page shows once a phone has scanned its code: what the person
// picks on the phone.
func qrNumber(t *testing.T, pc *browser, id string) string {
	t.Helper()
	r := pc.call("GET", "/api/qr/login/"+id, nil)
	j := r.json(t)
	n, _ := j["code"].(string)
	if r.Status != 200 || j["state"] != "scanned" || !twoDigits.MatchString(n) {
		t.Fatalf("the PC's poll of a scanned code: %d %s, want state scanned with a number of two digits", r.Status, r.Body)
	}
	return n
}

// qrChoice selects the phone page's choice showing the number n.
func qrChoice(n string) string {
	return `//div[contains(@class, "qr-choices")]//label[normalize-space(.) = "` + n + `"]`
}

// behind makes b's requests come from address ip, as a trusted proxy in front of the app says in X-Real-IP.
func behind(b *browser, ip string) *browser {
	b.c.Transport = realIP{ip: ip}
	return b
}

type realIP struct{ ip string }

func (r realIP) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("X-Real-IP", r.ip)
	return http.DefaultTransport.RoundTrip(req)
}

// scanned has the PC make a code and the phone scan it; it returns the code's id and the scan's answer.
func scanned(t *testing.T, s *liveServer, pc, phone *browser) (string, map[string]any) {
	t.Helper()
	id := newQR(t, s, pc)
	r := phone.call("POST", "/api/qr/login/"+id+"/scan", nil)
	if r.Status != 200 {
		t.Fatalf("scan: %d %s", r.Status, r.Body)
	}
	return id, r.json(t)
}

// TestQRLoginNeedsTheComputersNumber: the phone confirms a login only with the number the computer shows
// once the phone has scanned (here both are on one network, so the phone is offered three numbers). A confirm with no number, or another, logs nobody in and kills the code, so
// a page that relays a QR code it took from this site gets one blind try; the right number logs the
// computer in.
func TestQRLoginNeedsTheComputersNumber(t *testing.T) {
	s := startLive(t, liveOpts{})
	phone := newBrowser(t, s.URL)
	phone.register("number_owner", "number password")

	// The number is nowhere before a phone scans: not in the answer that made the code, not in a poll.
	pc := newBrowser(t, s.URL)
	id := newQR(t, s, pc)
	if r := pc.call("GET", "/api/qr/login/"+id, nil); r.json(t)["state"] != "pending" || r.json(t)["code"] != nil {
		t.Errorf("the PC's poll before a scan: %s, want pending with no number", r.Body)
	}

	tests := []struct {
		name string
		body func(right string, choices []string) any
	}{
		{"no body", func(string, []string) any { return nil }},
		{"no number", func(string, []string) any { return map[string]any{} }},
		{"an empty number", func(string, []string) any { return map[string]string{"code": ""} }},
		{"another of the choices", func(right string, choices []string) any {
			for _, c := range choices {
				if c != right {
					return map[string]string{"code": c}
				}
			}
			return nil
		}},
		{"the number as a JSON number", func(right string, _ []string) any { return map[string]any{"code": 42} }},
		{"the number with more after it", func(right string, _ []string) any { return map[string]string{"code": right + "0"} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pc := newBrowser(t, s.URL)
			id, scan := scanned(t, s, pc, phone)
			if _, told := scan["code"]; told {
				t.Fatalf("the scan answer tells the phone the number: %v", scan)
			}
			var choices []string
			list, _ := scan["choices"].([]any)
			for _, c := range list {
				c, _ := c.(string)
				choices = append(choices, c)
			}
			poll := pc.call("GET", "/api/qr/login/"+id, nil).json(t)
			right, _ := poll["code"].(string)
			if len(choices) != 3 || !slices.Contains(choices, right) || !slices.IsSorted(choices) || !twoDigits.MatchString(right) {
				t.Errorf("the phone's choices %v: want 3 in order, one of them the PC's number %q (the PC's poll: %v)", choices, right, poll)
			}
			body := tt.body(right, choices)
			r := phone.call("POST", "/api/qr/login/"+id+"/confirm", body)
			if r.Status != 400 || r.code(t) != "bad_code" {
				t.Errorf("confirm with %s: %d %s, want 400 bad_code", tt.name, r.Status, r.Body)
			}
			if p := pc.call("GET", "/api/qr/login/"+id, nil); p.json(t)["state"] != "cancelled" || p.json(t)["user"] != nil {
				t.Errorf("the PC's poll after a wrong number: %s, want cancelled", p.Body)
			}
			// One try: the right number now finds the code dead.
			if r := phone.call("POST", "/api/qr/login/"+id+"/confirm", map[string]string{"code": right}); r.Status != 409 || r.code(t) != "qr_state" {
				t.Errorf("the right number after a wrong one: %d %s, want 409 qr_state", r.Status, r.Body)
			}
			pc.call("GET", "/api/qr/login/"+id, nil)
			if status, name := pc.me(); status != 401 {
				t.Errorf("the PC is logged in as %q after a wrong number", name)
			}
		})
	}

	phone.call("POST", "/api/qr/login/"+id+"/scan", nil)
	right := qrNumber(t, pc, id)
	if r := phone.call("POST", "/api/qr/login/"+id+"/confirm", map[string]string{"code": right}); r.Status != 200 || r.json(t)["state"] != "confirmed" {
		t.Fatalf("confirm with the PC's number: %d %s", r.Status, r.Body)
	}
	if r := pc.call("GET", "/api/qr/login/"+id, nil); r.json(t)["state"] != "confirmed" || r.json(t)["code"] != nil {
		t.Errorf("the PC's poll after the confirm: %s, want confirmed (and the number no longer shown)", r.Body)
	}
	if status, name := pc.me(); status != 200 || name != "number_owner" {
		t.Errorf("the PC's /api/me = %d %q after the right number, want the phone's user", status, name)
	}
}

// TestQRLoginShowsWhereTheComputerIs: the phone's scan answer carries the computer's address (as the
// trusted proxy saw it), its city when GEOIP_DB names a location database (in the phone's language), and
// whether the computer is on the phone's network: IPv4 by /24, IPv6 by /64, one of each never. Only a
// phone on the computer's network is offered numbers to tap; elsewhere it must type the number.
func TestQRLoginShowsWhereTheComputerIs(t *testing.T) {
	db := filepath.Join(t.TempDir(), "cities.mmdb")
	err := geotest.Write(db, map[string]geotest.Place{
		"203.0.113.0/24": {CityEN: "Paris", CityZH: "巴黎", CountryEN: "France", CountryZH: "法国"},
		"2001:db8::/32":  {CityEN: "Hangzhou", CityZH: "杭州", CountryEN: "China", CountryZH: "中国"},
	})
	if err != nil {
		t.Fatal(err)
	}
	withDB := startLive(t, liveOpts{noBackground: true, tune: func(c *Config) { c.TrustedProxies, c.GeoIPDB = "127.0.0.1", db }})
	withoutDB := startLive(t, liveOpts{noBackground: true, tune: func(c *Config) { c.TrustedProxies = "127.0.0.1" }})
	tests := []struct {
		name      string
		s         *liveServer
		pcIP      string
		phoneIP   string
		lang      string
		city      string
		sameNet   bool
		wantWords string // the warning the phone's page carries, in its language
	}{
		{"one address", withDB, "203.0.113.7", "203.0.113.7", "en", "Paris, France", true, ""},
		{"one IPv4 /24", withDB, "203.0.113.7", "203.0.113.200", "en", "Paris, France", true, ""},
		{"another IPv4 network", withDB, "203.0.113.7", "198.51.100.9", "en", "Paris, France", false, "This computer is not on the same network as your phone"},
		{"another network, in Chinese", withDB, "203.0.113.7", "198.51.100.9", "zh", "法国 巴黎", false, "这台电脑与您的手机不在同一网络"},
		{"one IPv6 /64", withDB, "2001:db8:1:2::10", "2001:db8:1:2:aaaa:bbbb:cccc:dddd", "en", "Hangzhou, China", true, ""},
		{"another IPv6 /64", withDB, "2001:db8:1:2::10", "2001:db8:1:3::10", "en", "Hangzhou, China", false, ""},
		{"IPv6 and IPv4", withDB, "2001:db8:1:2::10", "203.0.113.7", "en", "Hangzhou, China", false, ""},
		{"an address the database does not know", withDB, "192.0.2.1", "198.51.100.9", "en", "", false, ""},
		{"no database", withoutDB, "203.0.113.7", "198.51.100.9", "en", "", false, ""},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			phone := behind(newBrowser(t, tt.s.URL), tt.phoneIP)
			phone.register("where_"+itoa(int64(i)), "where password")
			phone.setCookie(handlers.LangCookie, tt.lang)
			pc := behind(newBrowser(t, tt.s.URL), tt.pcIP)
			id, scan := scanned(t, tt.s, pc, phone)
			info := scan["pc"].(map[string]any)
			city, _ := info["city"].(string)
			if info["ip"] != tt.pcIP || city != tt.city {
				t.Errorf("the phone is shown the PC at %v in %q, want %s in %q", info["ip"], city, tt.pcIP, tt.city)
			}
			if scan["same_network"] != tt.sameNet || scan["phone_ip"] != tt.phoneIP {
				t.Errorf("same_network %v (phone at %v), want %v", scan["same_network"], scan["phone_ip"], tt.sameNet)
			}
			// Three numbers to tap on one network; elsewhere none: the person types the number.
			if choices, _ := scan["choices"].([]any); len(choices) != 3 && tt.sameNet || choices != nil && !tt.sameNet {
				t.Errorf("the phone is offered the choices %v (same network: %v)", scan["choices"], tt.sameNet)
			}
			if tt.wantWords != "" {
				page := phone.call("GET", "/m/qr/"+id, nil)
				if !bytes.Contains(page.Body, []byte(tt.wantWords)) {
					t.Errorf("the phone's page does not have the warning %q", tt.wantWords)
				}
			}
		})
	}
}
