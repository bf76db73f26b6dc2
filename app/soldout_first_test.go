package app

import (
	"context"
	"testing"
	"time"

	"seckill/internal/testenv"
)

// Once an item is known sold out, its path and buy are answered 409 sold_out before any other check:
// a stranger with no session and no CSRF token hears it, in its own language, and OnSale tells nginx.
// An item on sale keeps every check, and stock coming back reopens the item.
func TestSoldOutIsAnsweredBeforeTheChecks(t *testing.T) {
	s := startLive(t, liveOpts{noBackground: true})
	now := s.Clock.Now()
	_, gone := testenv.Sale(t, s.DB, 1, now.Add(-time.Minute), now.Add(time.Hour))
	_, open := testenv.Sale(t, s.DB, 5, now.Add(-time.Minute), now.Add(time.Hour))
	s.Srv.Flags.MarkSoldOut(context.Background(), gone.ID)

	stranger := newBrowser(t, s.URL)
	stranger.noAutoCSRF = true
	for _, tc := range []struct {
		name, path, lang, message string
	}{
		{"path, English", "/api/items/" + itoa(gone.ID) + "/path", "", "sold out"},
		{"buy, English", "/api/items/" + itoa(gone.ID) + "/buy/not-even-a-path", "en-GB,en;q=0.9", "sold out"},
		{"path, Chinese", "/api/items/" + itoa(gone.ID) + "/path", "zh-CN,zh;q=0.9", "已售罄。"},
		{"buy, Chinese", "/api/items/" + itoa(gone.ID) + "/buy/" + "0123456789abcdef0123456789abcdef", "zh", "已售罄。"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := stranger.in(t).send("POST", tc.path, []byte(`{}`), map[string]string{"Accept-Language": tc.lang})
			if r.Status != 409 {
				t.Fatalf("POST %s with no session nor CSRF token: %d %s, want 409 sold_out", tc.path, r.Status, r.Body)
			}
			code, msg := errorOf(t, r)
			if code != "sold_out" || msg != tc.message {
				t.Errorf("POST %s: %s %q, want sold_out %q", tc.path, code, msg, tc.message)
			}
		})
	}

	t.Run("an item on sale keeps its checks", func(t *testing.T) {
		r := stranger.in(t).send("POST", "/api/items/"+itoa(open.ID)+"/path", []byte(`{}`), nil)
		if code, _ := errorOf(t, r); r.Status != 403 || code != "csrf" {
			t.Errorf("POST path of an item on sale with no CSRF token: %d %s, want 403 csrf", r.Status, r.Body)
		}
	})

	onSale := func(t *testing.T, itemID int64) int {
		t.Helper()
		r := stranger.in(t).send("GET", "/api/items/"+itoa(itemID)+"/on-sale", nil, nil)
		if cc := r.Header.Get("Cache-Control"); cc != "public, max-age=1" {
			t.Errorf("on-sale's Cache-Control %q, want public, max-age=1", cc)
		}
		if r.Header.Get("Set-Cookie") != "" {
			t.Errorf("on-sale sets a cookie: %q", r.Header.Get("Set-Cookie"))
		}
		return r.Status
	}
	t.Run("on-sale tells the edge", func(t *testing.T) {
		if st := onSale(t, gone.ID); st != 403 {
			t.Errorf("on-sale of the sold-out item: %d, want 403", st)
		}
		if st := onSale(t, open.ID); st != 204 {
			t.Errorf("on-sale of the item on sale: %d, want 204", st)
		}
		if st := onSale(t, 987654321); st != 204 {
			t.Errorf("on-sale of an unknown item: %d, want 204 (the instance answers not_found itself)", st)
		}
	})

	t.Run("stock back reopens it", func(t *testing.T) {
		s.Srv.Flags.Restocked(context.Background(), gone.ID)
		if st := onSale(t, gone.ID); st != 204 {
			t.Errorf("on-sale after stock came back: %d, want 204", st)
		}
		r := stranger.in(t).send("POST", "/api/items/"+itoa(gone.ID)+"/path", []byte(`{}`), nil)
		if code, _ := errorOf(t, r); r.Status != 403 || code != "csrf" {
			t.Errorf("POST path with no CSRF token after stock came back: %d %s, want 403 csrf", r.Status, r.Body)
		}
	})
}
