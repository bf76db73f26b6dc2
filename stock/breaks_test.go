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
	"gorm.io/gorm"

	"seckill/auth"
	"seckill/internal/testenv"
	"seckill/jobs"
	"seckill/models"
	"seckill/stock"
)

// dyingMaster stands between a client and Redis and dies as a master does under a take: it passes every
// command on until the first script call, which it swallows (the master died before it ran it), breaks
// the connection and refuses every connection after (the master is gone, no replica promoted yet).
// A frozen one (SIGSTOP) swallows the script call and never answers, nor closes.
type dyingMaster struct {
	ln     net.Listener
	to     string
	once   sync.Once
	freeze bool
	sent   chan struct{} // closed when the script call arrived
}

func startDyingMaster(t *testing.T, to string, freeze bool) *dyingMaster {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := &dyingMaster{ln: ln, to: to, freeze: freeze, sent: make(chan struct{})}
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
			d.once.Do(func() {
				_ = d.ln.Close()
				close(d.sent)
			})
			if d.freeze {
				_, _ = io.Copy(io.Discard, c) // until the client closes it
			}
			return
		}
		if _, err := r.Write(buf[:n]); err != nil {
			return
		}
	}
}

// buyerOnSale loads a sale of two units on rdb and gives one buyer (named after name) a purchase path
// there: the item, the buyer (users[0]) and the path.
func buyerOnSale(t *testing.T, db *gorm.DB, rdb *redis.Client, name string) (models.Item, []models.User, string) {
	t.Helper()
	ctx := context.Background()
	_, item := testenv.Sale(t, db, 2, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	ledger := testenv.Ledger(rdb, time.Now)
	if _, err := ledger.Preheat(ctx, jobs.DBBooks{DB: db}, item.ID); err != nil {
		t.Fatal(err)
	}
	users := testenv.Users(t, db, name, 1)
	tok, _ := auth.RandomToken(16)
	if err := ledger.IssuePath(ctx, item.ID, users[0].ID, tok); err != nil {
		t.Fatal(err)
	}
	return item, users, tok
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
			item, users, tok := buyerOnSale(t, db, rdb, "diedunder")
			sound := testenv.Ledger(rdb, time.Now)
			proxy := startDyingMaster(t, rdb.Options().Addr, false)
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

// connsOf remembers the connections a client dials.
type connsOf struct {
	mu    sync.Mutex
	conns []net.Conn
}

func (h *connsOf) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		cn, err := next(ctx, network, addr)
		if err == nil {
			h.mu.Lock()
			h.conns = append(h.conns, cn)
			h.mu.Unlock()
		}
		return cn, err
	}
}
func (*connsOf) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (*connsOf) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h *connsOf) closeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.conns {
		_ = c.Close()
	}
}

// A master frozen under a take (SIGSTOP) answers nothing; when Sentinel names a new master, go-redis's
// failover client closes its connections to the old one under the waiting take, whose read then ends
// "use of closed network connection", and the dial again is held or refused. That buyer's take may have
// run too: unconfirmed, not "nothing was taken, try again" (the second review's finding).
func TestATakeWhoseConnectionWasClosedUnderItIsUnconfirmed(t *testing.T) {
	ctx := context.Background()
	db := testenv.Postgres(t)
	rdb, _ := testenv.RedisServer(t, "frozen")
	item, users, tok := buyerOnSale(t, db, rdb, "closedunder")
	proxy := startDyingMaster(t, rdb.Options().Addr, true)
	c := redis.NewClient(&redis.Options{Addr: proxy.ln.Addr().String(), ReadTimeout: time.Minute})
	defer c.Close()
	ledger := testenv.Ledger(c, time.Now)
	conns := &connsOf{}
	c.AddHook(conns)
	c.AddHook(ledger.ConnHook())
	ledger.WaitReplicas(1, 100*time.Millisecond)
	type answer struct {
		confirmed bool
		err       error
	}
	done := make(chan answer, 1)
	go func() {
		_, confirmed, err := ledger.TakeConfirmed(ctx, item.ID, users[0].ID, tok, "SK-closed-under")
		done <- answer{confirmed, err}
	}()
	select {
	case <-proxy.sent:
	case <-time.After(30 * time.Second):
		t.Fatal("the take never reached the master")
	}
	conns.closeAll() // as go-redis's failover client does when the sentinels name a new master
	a := <-done
	if a.err != nil || a.confirmed {
		t.Fatalf("a take whose connection was closed under it: confirmed %v, %v; want unconfirmed, no error (it may have run)", a.confirmed, a.err)
	}
	if told, open, _ := ledger.UnconfirmedStats(); told != 1 || open != 1 {
		t.Errorf("unconfirmed: %d told, %d open; want 1 and 1", told, open)
	}
}
