package auth_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/auth"
	"seckill/errs"
	"seckill/internal/testenv"
)

// fzCommandCounter counts the commands a client sends.
type fzCommandCounter struct{ n atomic.Int64 }

func (h *fzCommandCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *fzCommandCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}
func (h *fzCommandCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// fzIsQRID is the documented form of a login code's id: 32 hex digits.
func fzIsQRID(id string) bool {
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

// FuzzQRID: an id from a request that is not 32 hex digits never reaches Redis and is not found, at
// every step (poll, scan, confirm, cancel); one of that form does reach Redis and, unknown, is not found
// either. A real code stays pending through all of it.
func FuzzQRID(f *testing.F) {
	rdb := testenv.Redis(f)
	counter := &fzCommandCounter{}
	rdb.AddHook(counter)
	now := time.Date(2026, 11, 11, 10, 0, 0, 0, time.UTC)
	// The code's clock stands still, but Redis expires its keys in real time: a day outlives any fuzz run.
	q := auth.NewQRLogin(rdb, 24*time.Hour, func() time.Time { return now })
	ctx := context.Background()
	const bind = "0123456789abcdef0123456789abcdef"
	code, err := q.Create(ctx, bind, auth.PC{IP: "127.0.0.1", UserAgent: "fuzz", CreatedAt: now})
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{
		"", "0123456789abcdef0123456789abcdef", "0123456789ABCDEF0123456789ABCDEF", "0123456789abcdef0123456789abcde",
		"0123456789abcdef0123456789abcdef0", "0123456789abcdef0123456789abcdeg", "0123456789abcdef0123456789abc}{x",
		"*", "qr:{*}", "}", "0123456789abcdef0123456789abcd\r\n", strings.Repeat("é", 16), "%30%31", "..",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		steps := []struct {
			name string
			run  func() error
		}{
			{"poll", func() error { _, err := q.Poll(ctx, id, bind); return err }},
			{"scan", func() error { _, err := q.Scan(ctx, id, "phone-session", 1); return err }},
			{"confirm", func() error { return q.Confirm(ctx, id, "phone-session", "00") }},
			{"cancel", func() error { return q.Cancel(ctx, id, "phone-session") }},
		}
		for _, st := range steps {
			if id == code.ID {
				break // the fuzzer cannot know it, but a real code is not what this checks
			}
			before := counter.n.Load()
			err := st.run()
			sent := counter.n.Load() - before
			if !errs.Is(err, errs.NotFound) {
				t.Fatalf("%s %q: %v, want not_found", st.name, id, err)
			}
			if form := fzIsQRID(id); form && sent == 0 || !form && sent != 0 {
				t.Fatalf("%s %q (documented form: %v) sent %d Redis commands", st.name, id, form, sent)
			}
		}
		if p, err := q.Poll(ctx, code.ID, bind); err != nil || p.State != auth.QRPending {
			t.Fatalf("the real code is %q (%v) after id %q, want pending", p.State, err, id)
		}
	})
}
