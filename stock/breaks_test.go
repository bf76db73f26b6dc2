package stock_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/auth"
	"seckill/internal/testenv"
	"seckill/jobs"
	"seckill/stock"
)

// dyingMaster stands between a client and Redis and dies as a master does under a take: it passes every
// command on until the first script call, which it swallows (the master died before it ran it), breaks
// the connection and refuses every connection after (the master is gone, no replica promoted yet).
type dyingMaster struct {
	ln   net.Listener
	to   string
	once sync.Once
}

func startDyingMaster(t *testing.T, to string) *dyingMaster {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := &dyingMaster{ln: ln, to: to}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go d.serve(c)
		}
	}()
	return d
}

func (d *dyingMaster) serve(c net.Conn) {
	defer c.Close()
	r, err := net.Dial("tcp", d.to)
	if err != nil {
		return
	}
	defer r.Close()
	go func() { _, _ = io.Copy(c, r) }()
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		if err != nil {
			return
		}
		if bytes.Contains(bytes.ToLower(buf[:n]), []byte("eval")) {
			d.once.Do(func() { _ = d.ln.Close() })
			return
		}
		if _, err := r.Write(buf[:n]); err != nil {
			return
		}
	}
}

// A take sent to a master that died under it, whose client then found no master to dial (go-redis
// retried it by itself and answered the refused dial), is not answered "nothing was taken, try again":
// the take may have run. The buyer is answered unconfirmed, and the journal has the take for the replay
// after the failover (the outside review's H1). With and without WAIT.
func TestATakeWhoseMasterDiedThenRefusedIsUnconfirmed(t *testing.T) {
	for _, waits := range []int{0, 1} {
		t.Run(map[int]string{0: "without WAIT", 1: "with WAIT"}[waits], func(t *testing.T) {
			ctx := context.Background()
			db := testenv.Postgres(t)
			rdb, _ := testenv.RedisServer(t, "master")
			_, item := testenv.Sale(t, db, 2, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
			sound := testenv.Ledger(rdb, time.Now)
			if _, err := sound.Preheat(ctx, jobs.DBBooks{DB: db}, item.ID); err != nil {
				t.Fatal(err)
			}
			users := testenv.Users(t, db, "diedunder", 1)
			tok, _ := auth.RandomToken(16)
			if err := sound.IssuePath(ctx, item.ID, users[0].ID, tok); err != nil {
				t.Fatal(err)
			}
			proxy := startDyingMaster(t, rdb.Options().Addr)
			c := redis.NewClient(&redis.Options{Addr: proxy.ln.Addr().String()})
			defer c.Close()
			ledger := testenv.Ledger(c, time.Now)
			c.AddHook(ledger.ConnHook())
			if waits > 0 {
				ledger.WaitReplicas(waits, 100*time.Millisecond)
			}
			_, confirmed, err := ledger.TakeConfirmed(ctx, item.ID, users[0].ID, tok, "SK-died-under")
			if err != nil || confirmed {
				t.Fatalf("a take whose master died under it: confirmed %v, %v; want unconfirmed, no error (it may have run)", confirmed, err)
			}
			if told, open, _ := ledger.UnconfirmedStats(); told != 1 || open != 1 {
				t.Errorf("unconfirmed: %d told, %d open; want 1 and 1, to be settled", told, open)
			}
			// The take never ran there; Redis is "the new master" now: the replay takes it.
			if got, err := stock.ReplayOnto(ctx, ledger, sound, jobs.DBBooks{DB: db}); err != nil || got != (stock.Replayed{Restored: 1}) {
				t.Errorf("replay: %+v, %v; want the take restored", got, err)
			}
			if r, err := sound.ResultOf(ctx, item.ID, users[0].ID); err != nil || r.Status != stock.ResultQueued {
				t.Errorf("the buyer reads %+v, %v; want queued", r, err)
			}
		})
	}
}
