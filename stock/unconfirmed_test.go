package stock_test

import (
	"context"
	"net"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/auth"
	"seckill/errs"
	"seckill/internal/testenv"
	"seckill/jobs"
	"seckill/models"
	"seckill/stock"
)

// followingClient is a client that dials whichever address master holds now: the shop's view of a
// failover (a Sentinel client asks the sentinels; here the test says).
func followingClient(t *testing.T, master *atomic.Value) *redis.Client {
	c := redis.NewClient(&redis.Options{Dialer: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, master.Load().(string))
	}})
	t.Cleanup(func() { c.Close() })
	return c
}

// An unconfirmed buyer is told "your result will say", and docs/api.md says the result reads queued until
// the order is settled. In the one case unconfirmed is for (the master lost before its replica had the
// take, the replica promoted) the promoted master knows nothing of the buyer: the result read none for
// ever (review of issue 36, finding 2). The ledger that told them remembers the take, and once it is old
// enough that no consumer can still write its order, finds it lost: the buyer reads failed, reason lost,
// and may buy again. A take that Redis still holds is not touched.
func TestRev36UnconfirmedBuyerLostInAFailoverIsNeverToldFailed(t *testing.T) {
	p := testenv.StartReplicaPair(t)
	ctx := context.Background()
	var master atomic.Value
	master.Store(p.Master.Options().Addr)
	r := &shardRig{db: testenv.Postgres(t), rdb: p.Master, clock: &clock{t: time.Now()}}
	r.ledger = testenv.Ledger(followingClient(t, &master), r.clock.now)
	r.ledger.WaitReplicas(1, 100*time.Millisecond)
	_, r.item = testenv.Sale(t, r.db, 10, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	if left, err := r.ledger.Preheat(ctx, jobs.DBBooks{DB: r.db}, r.item.ID); err != nil || left != 10 {
		t.Fatalf("preheat: %d left, %v", left, err)
	}
	exists := func(ctx context.Context, orderNo string) (bool, error) {
		_, err := models.OrderByNo(ctx, r.db, orderNo)
		if errs.Code(err) == errs.NotFound {
			return false, nil
		}
		return err == nil, err
	}
	if a := r.buyAll(t, usersFrom(1, 1)); a[0].err != nil || !a[0].confirmed {
		t.Fatalf("first buyer: %+v", a[0])
	}
	// The replica is cut off (a partition: here it stops replicating; a SIGSTOP would not do, as the
	// stream it was sent waits in its socket for it), buyer 2 buys, the master dies, and the replica,
	// which never got buyer 2's take, is promoted.
	if err := p.Replica.SlaveOf(ctx, "no", "one").Err(); err != nil {
		t.Fatal(err)
	}
	a := r.buyAll(t, usersFrom(2, 1))[0]
	if a.err != nil || a.confirmed {
		t.Fatalf("buyer 2, replica cut off: %+v, want unconfirmed", a)
	}
	if told, open, _ := r.ledger.UnconfirmedStats(); told != 1 || open != 1 {
		t.Errorf("%d told unconfirmed, %d open; want 1 and 1", told, open)
	}
	// While the master holds the take, the buyer is queued, and the take is not touched however old.
	r.clock.add(stock.UnconfirmedGrace)
	if lost, settled, err := r.ledger.SettleUnconfirmed(ctx, exists); err != nil || lost != 0 || settled != 0 {
		t.Fatalf("before the failover: %d lost, %d settled, %v; want none (the buyer is queued)", lost, settled, err)
	}
	if res, err := r.ledger.ResultOf(ctx, r.item.ID, 2); err != nil || res.Status != stock.ResultQueued {
		t.Fatalf("buyer 2 before the failover: %+v, %v; want queued", res, err)
	}

	pid, _ := strconv.Atoi(infoField(t, p.Master, "server", "process_id"))
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	master.Store(p.Replica.Options().Addr)
	testenv.Eventually(t, 10*time.Second, "the ledger on the promoted replica", func() bool {
		_, err := r.ledger.ResultOf(ctx, r.item.ID, 2)
		return err == nil
	})
	lost, _, err := r.ledger.SettleUnconfirmed(ctx, exists)
	if err != nil || lost != 1 {
		t.Errorf("after the failover: %d found lost, %v; want buyer 2's take", lost, err)
	}
	res, err := r.ledger.ResultOf(ctx, r.item.ID, 2)
	t.Logf("buyer 2's result on the promoted replica: %+v, %v", res, err)
	if err != nil || res.Status != stock.ResultFailed || res.Reason != stock.ResultLost {
		t.Errorf("the unconfirmed buyer's result after the failover is %+v (%v), want failed, reason lost", res, err)
	}
	if res, _ := r.ledger.ResultOf(ctx, r.item.ID, 1); res.Status != stock.ResultQueued {
		t.Errorf("buyer 1 (confirmed) reads %+v on the promoted replica, want queued", res)
	}
	if _, open, lost := r.ledger.UnconfirmedStats(); open != 0 || lost != 1 {
		t.Errorf("%d open, %d lost after settling; want 0 and 1", open, lost)
	}
	// Nothing was taken from buyer 2: they buy again (unconfirmed: the promoted master has no replica).
	tok, _ := auth.RandomToken(16)
	if err := r.ledger.IssuePath(ctx, r.item.ID, 2, tok); err != nil {
		t.Fatalf("buyer 2's new path: %v", err)
	}
	if _, _, err := r.ledger.TakeConfirmed(ctx, r.item.ID, 2, tok, "SKW2b"); err != nil {
		t.Fatalf("buyer 2 buys again: %v", err)
	}
	if res, _ := r.ledger.ResultOf(ctx, r.item.ID, 2); res.Status != stock.ResultQueued {
		t.Errorf("buyer 2 after buying again reads %+v, want queued", res)
	}
}
