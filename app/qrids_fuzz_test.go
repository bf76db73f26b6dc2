package app

import (
	"context"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"seckill/handlers"
)

// fzQRKeyCounter counts the Redis commands that name a login code's key.
type fzQRKeyCounter struct{ n atomic.Int64 }

func (h *fzQRKeyCounter) count(cmd redis.Cmder) {
	for _, a := range cmd.Args() {
		if s, ok := a.(string); ok && strings.HasPrefix(s, "qr:{") {
			h.n.Add(1)
			return
		}
	}
}

func (h *fzQRKeyCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *fzQRKeyCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.count(cmd)
		return next(ctx, cmd)
	}
}
func (h *fzQRKeyCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			h.count(cmd)
		}
		return next(ctx, cmds)
	}
}

// fzQRIDForm is the documented form of a login code's id: 32 hex digits.
func fzQRIDForm(id string) bool {
	if len(id) != 32 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if b := id[i]; !('0' <= b && b <= '9' || 'a' <= b && b <= 'f' || 'A' <= b && b <= 'F') {
			return false
		}
	}
	return true
}

// FuzzQRLoginIDs sends a fuzzed login code id in the path of every QR login route: the PC's poll and the
// phone's scan, confirm and cancel. No such code exists, so each answers 404 not_found; and only an id of
// the documented form (32 hex digits) may cost a Redis command on a code's key.
func FuzzQRLoginIDs(f *testing.F) {
	for _, s := range []string{
		"0123456789abcdef0123456789abcdef", "0123456789ABCDEF0123456789abcdef", "0123456789abcdef0123456789abcde",
		"0123456789abcdef0123456789abcdef0", "0123456789abcdef0123456789abcdeg", "*", "}{", "qr:{x}", "%", "%2F",
		"a/b", "a?b", "a#b", "\x00", "0123456789abcdef0123456789abcd\r\n", "é", "1", "-1", strings.Repeat("f", 64),
	} {
		f.Add(s)
	}
	counter := &fzQRKeyCounter{}
	s := startFuzzServer(f, counter)
	pc := s.browser(f, "a PC", "")
	pc.setCookie(handlers.QRBindCookie, "0123456789abcdef0123456789abcdef")
	f.Fuzz(func(t *testing.T, id string) {
		if id == "" || id == "." || id == ".." || len(id) > 200 {
			t.Skip("not a path segment of its own, or longer than any id")
		}
		seg := url.PathEscape(id)
		requests := []struct {
			as           *browser
			method, path string
		}{
			{pc, "GET", "/api/qr/login/" + seg},
			{s.shopper, "POST", "/api/qr/login/" + seg + "/scan"},
			{s.shopper, "POST", "/api/qr/login/" + seg + "/confirm"},
			{s.shopper, "POST", "/api/qr/login/" + seg + "/cancel"},
		}
		for _, rq := range requests {
			what := rq.method + " " + rq.path + " as " + rq.as.name
			before := counter.n.Load()
			r := rq.as.in(t).send(rq.method, rq.path, nil, nil)
			sent := counter.n.Load() - before
			fzCheckContract(t, what, []byte(id), r)
			if r.Status != 404 {
				t.Fatalf("%s: %d %s, want 404 not_found", what, r.Status, r.Body)
			}
			if form := fzQRIDForm(id); form != (sent > 0) {
				t.Fatalf("%s: id of the documented form %v, and %d Redis commands on a code's key", what, form, sent)
			}
		}
	})
}
