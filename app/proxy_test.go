package app

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"seckill/auth"
	"seckill/handlers"
	"seckill/internal/testenv"
)

// TestTrustedProxiesSetTheClientAddress serves the real app, reached from 127.0.0.1 as nginx reaches it,
// and spends a per-address limit (QR codes made without a session) under one X-Real-IP: the next address
// in the header has a budget of its own only when 127.0.0.1 is a trusted proxy. The access log shows
// the address that counted.
func TestTrustedProxiesSetTheClientAddress(t *testing.T) {
	tests := []struct {
		name    string
		proxies string // TRUSTED_PROXIES
		trusted bool   // whether this test's connections (from 127.0.0.1) come from a trusted proxy
	}{
		{"from a trusted proxy", "127.0.0.1", true},
		{"from a trusted range", "10.0.0.0/8,127.0.0.0/8", true},
		{"from an address not trusted", "192.0.2.1", false},
		{"with no proxy trusted", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := LoadConfig(envOf(map[string]string{"TRUSTED_PROXIES": tt.proxies}))
			if err != nil {
				t.Fatal(err)
			}
			cfg.BcryptCost, cfg.SessionSecret = 4, goodSecret
			var logs bytes.Buffer
			log := newLogger(Config{}, &safeWriter{w: &logs})
			srv, err := NewServer(context.Background(), cfg, Deps{DB: testenv.Postgres(t), Redis: testenv.Redis(t), Log: log, Now: time.Now})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { srv.Close() })
			base := startServer(t, srv.Fiber)

			token, _ := auth.NewCSRF(cfg.SessionSecret).Token()
			newQR := func(realIP string) int {
				t.Helper()
				req, _ := http.NewRequest("POST", base+"/api/qr/login", nil)
				req.Header.Set(handlers.CSRFHeader, token)
				req.Header.Set("Cookie", handlers.CSRFCookie+"="+token)
				if realIP != "" {
					req.Header.Set("X-Real-IP", realIP)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				return resp.StatusCode
			}

			// spend makes codes under one X-Real-IP until the limit refuses one, and counts those made.
			spend := func(realIP string) int {
				t.Helper()
				made := 0
				for ; made < 100 && newQR(realIP) == 201; made++ {
				}
				if made == 100 {
					t.Fatalf("made 100 QR codes under X-Real-IP %q and none was refused", realIP)
				}
				return made
			}

			budget := spend("203.0.113.7")
			if budget == 0 {
				t.Fatal("the first QR code from a fresh address was refused")
			}
			// Another shopper behind the proxy has a budget of its own only when the proxy is trusted.
			want := 429
			if tt.trusted {
				want = 201
			}
			if got := newQR("203.0.113.8"); got != want {
				t.Errorf("X-Real-IP of another address: %d, want %d", got, want)
			}
			// A header that holds no address counts as the connection's own address, as a missing one does:
			// a fresh budget of 20 behind a trusted proxy, none left otherwise. (A spend that lasts over 3 s
			// gains a code the limit gave back meanwhile: hence "at least" and "at most one".)
			got := spend("not an address")
			if tt.trusted && got < 20 || !tt.trusted && got > 1 {
				t.Errorf("made %d QR codes under an X-Real-IP that is no address (the first address made %d)", got, budget)
			}
			if got := newQR(""); got != 429 {
				t.Errorf("no X-Real-IP after the proxy's own address is spent: %d, want 429", got)
			}

			wantIP := "ip=127.0.0.1 "
			if tt.trusted {
				wantIP = "ip=203.0.113.7 "
			}
			if !strings.Contains(logs.String(), wantIP) {
				t.Errorf("the access log does not show %q:\n%s", wantIP, firstLines(logs.String(), 3))
			}
		})
	}
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}
