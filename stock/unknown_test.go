package stock_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/auth"
	"seckill/internal/testenv"
	"seckill/jobs"
	"seckill/stock"
)

// lostReplies runs every script on Redis and then loses its reply, as a connection that breaks after the
// master ran it (killed under it) does.
type lostReplies struct{}

func (lostReplies) DialHook(next redis.DialHook) redis.DialHook { return next }
func (lostReplies) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if !strings.HasPrefix(cmd.Name(), "eval") {
			return err
		}
		cmd.SetErr(io.EOF)
		return io.EOF
	}
}
func (lostReplies) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if !strings.HasPrefix(cmds[0].Name(), "eval") {
			return err
		}
		for _, c := range cmds {
			c.SetErr(io.EOF)
		}
		return io.EOF
	}
}

// A take whose reply is lost after it ran is not an error to try again (the path is used up: the retry
// would be told invalid_path while the buyer holds the unit) but unconfirmed, and its result settles;
// a take that never left (a dial refused) is an error: nothing was taken, try again.
func TestATakeWhoseReplyIsLostIsUnconfirmed(t *testing.T) {
	ctx := context.Background()
	db := testenv.Postgres(t)
	rdb, _ := testenv.RedisServer(t, "master")
	_, item := testenv.Sale(t, db, 3, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	ledger := testenv.Ledger(rdb, time.Now)
	if _, err := ledger.Preheat(ctx, jobs.DBBooks{DB: db}, item.ID); err != nil {
		t.Fatal(err)
	}
	users := testenv.Users(t, db, "lostreply", 3)
	tok, _ := auth.RandomToken(16)
	// A first buyer through a sound connection: the take script is loaded (a master killed under a
	// take had it, or the take's EVAL ran).
	if err := ledger.IssuePath(ctx, item.ID, users[2].ID, tok); err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.Take(ctx, item.ID, users[2].ID, tok, "SK-sound"); err != nil {
		t.Fatal(err)
	}
	if err := ledger.IssuePath(ctx, item.ID, users[0].ID, tok); err != nil {
		t.Fatal(err)
	}
	broken := redis.NewClient(&redis.Options{Addr: rdb.Options().Addr, MaxRetries: -1})
	defer broken.Close()
	broken.AddHook(lostReplies{})
	_, confirmed, err := testenv.Ledger(broken, time.Now).TakeConfirmed(ctx, item.ID, users[0].ID, tok, "SK-lost-reply")
	if err != nil || confirmed {
		t.Fatalf("a take whose reply was lost: confirmed %v, %v; want unconfirmed, no error", confirmed, err)
	}
	if r, err := ledger.ResultOf(ctx, item.ID, users[0].ID); err != nil || r.Status != stock.ResultQueued {
		t.Errorf("the buyer whose take ran reads %+v, %v; want queued", r, err)
	}

	gone := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t)), MaxRetries: -1})
	defer gone.Close()
	_, _, err = testenv.Ledger(gone, time.Now).TakeConfirmed(ctx, item.ID, users[1].ID, tok, "SK-never-sent")
	var op *net.OpError
	if err == nil {
		t.Errorf("a take that never reached Redis answered no error; want one (nothing taken: try again)")
	} else if !errors.As(err, &op) {
		t.Logf("dial error: %v", err)
	}
}

// neverRan loses every script before Redis runs it, with the same EOF: a master dead behind a proxy that
// accepted the connection.
type neverRan struct{ lostReplies }

func (neverRan) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !strings.HasPrefix(cmd.Name(), "eval") {
			return next(ctx, cmd)
		}
		cmd.SetErr(io.EOF)
		return io.EOF
	}
}

func (neverRan) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if !strings.HasPrefix(cmds[0].Name(), "eval") {
			return next(ctx, cmds)
		}
		for _, c := range cmds {
			c.SetErr(io.EOF)
		}
		return io.EOF
	}
}

// A buyer told unconfirmed because the master died under their take (which never ran there) gets the
// unit on the new master when the instance replays its journal after the failover: queued there, not
// "lost" half a minute later.
func TestATakeLostWithItsMasterIsTakenAgainAfterTheFailover(t *testing.T) {
	ctx := context.Background()
	db := testenv.Postgres(t)
	old, _ := testenv.RedisServer(t, "dead")
	promoted, _ := testenv.RedisServer(t, "promoted")
	_, item := testenv.Sale(t, db, 2, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	for _, rdb := range []*redis.Client{old, promoted} {
		if _, err := testenv.Ledger(rdb, time.Now).Preheat(ctx, jobs.DBBooks{DB: db}, item.ID); err != nil {
			t.Fatal(err)
		}
	}
	users := testenv.Users(t, db, "neverran", 1)
	tok, _ := auth.RandomToken(16)
	dying := redis.NewClient(&redis.Options{Addr: old.Options().Addr, MaxRetries: -1})
	defer dying.Close()
	dying.AddHook(neverRan{})
	ledger := testenv.Ledger(dying, time.Now)
	if err := testenv.Ledger(old, time.Now).IssuePath(ctx, item.ID, users[0].ID, tok); err != nil {
		t.Fatal(err)
	}
	_, confirmed, err := ledger.TakeConfirmed(ctx, item.ID, users[0].ID, tok, "SK-never-ran")
	if err != nil || confirmed {
		t.Fatalf("a take whose master died under it: confirmed %v, %v; want unconfirmed, no error", confirmed, err)
	}
	if r, _ := testenv.Ledger(old, time.Now).ResultOf(ctx, item.ID, users[0].ID); r.Status != stock.ResultNone {
		t.Fatalf("the take ran on the old master (%+v): the test proves nothing", r)
	}
	books := testenv.Ledger(promoted, time.Now)
	got, err := stock.ReplayOnto(ctx, ledger, books, jobs.DBBooks{DB: db})
	if err != nil || got != (stock.Replayed{Restored: 1}) {
		t.Fatalf("replay after the failover: %+v, %v; want the take restored", got, err)
	}
	if r, err := books.ResultOf(ctx, item.ID, users[0].ID); err != nil || r.Status != stock.ResultQueued {
		t.Errorf("the buyer reads %+v, %v on the new master; want queued", r, err)
	}
}
