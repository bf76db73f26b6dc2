package jobs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/internal/testenv"
	"seckill/models"
	"seckill/stock"
)

// After a Sentinel failover the new master may lack what the old one had (issue 36): here its consumer
// group (created on the old master and lost), a buyer's mark and a few units taken, while the stream
// holds again an order the database has already (its acknowledgement lost). The books checked (Recheck)
// mark the buyer again and cap the stock at what the database backs less what is queued; the consumer
// recreates its group and places every queued order once: no order lost, none doubled.
func TestConsumerResumesOnANewMasterThatLacksItsGroup(t *testing.T) {
	g := testenv.StartSentinelGroup(t)
	rdb := redis.NewFailoverClient(g.FailoverOptions(t))
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()
	r := &rig{db: testenv.Postgres(t), rdb: rdb}
	r.ledger = testenv.Ledger(rdb, time.Now)
	r.flags = stock.NewFlags(r.ledger, rdb, quiet)
	_, r.item = testenv.Sale(t, r.db, 20, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	if _, err := r.ledger.Preheat(ctx, DBBooks{DB: r.db}, r.item.ID); err != nil {
		t.Fatal(err)
	}
	r.users = testenv.Users(t, r.db, "promoted", 13)

	// Six orders placed on the old master, six more queued there and not consumed when it dies.
	for _, u := range r.users[:6] {
		if err := r.buy(t, u); err != nil {
			t.Fatal(err)
		}
	}
	stop := run(r.consumer(r.db, "old"))
	r.waitDrained(t, 30*time.Second)
	stop()
	for _, u := range r.users[6:12] {
		if err := r.buy(t, u); err != nil {
			t.Fatal(err)
		}
	}
	master, err := g.Master(ctx)
	if err != nil {
		t.Fatal(err)
	}
	direct := redis.NewClient(&redis.Options{Addr: master})
	defer direct.Close()
	testenv.Eventually(t, 10*time.Second, "the replica has the queued orders", func() bool { return testenv.ReplicaAcknowledges(ctx, direct) })

	old := g.KillMaster(t)
	promoted := g.WaitNewMaster(t, old, 30*time.Second)
	nm := redis.NewClient(&redis.Options{Addr: promoted})
	defer nm.Close()
	k := stock.KeysOf(r.item.ID)
	var first models.Order
	if err := r.db.Where("item_id = ? AND user_id = ?", r.item.ID, r.users[0].ID).First(&first).Error; err != nil {
		t.Fatal(err)
	}
	// What the promoted replica lacks: the group, user 0's mark and result, three units taken; and an
	// order the database holds already, queued again.
	if err := nm.XGroupDestroy(ctx, k.Stream, stock.Group).Err(); err != nil {
		t.Fatal(err)
	}
	uid0 := strconv.FormatInt(r.users[0].ID, 10)
	nm.SRem(ctx, k.Buyers, uid0)
	nm.HDel(ctx, k.Results, uid0)
	nm.HIncrBy(ctx, k.Sale, "left", 3)
	if err := nm.XAdd(ctx, &redis.XAddArgs{Stream: k.Stream, Values: stock.OrderMessage{
		OrderNo: first.OrderNo, UserID: r.users[0].ID, PriceCents: first.PriceCents, ActivityID: first.ActivityID, At: time.Now(),
	}.Fields()}).Err(); err != nil {
		t.Fatal(err)
	}

	// The books checked through the failover client, which follows the promotion.
	testenv.EventuallySaw(t, 30*time.Second, "the books checked on the new master", func() (bool, string) {
		err := r.ledger.Recheck(ctx, DBBooks{DB: r.db}, r.item.ID)
		return err == nil, fmt.Sprint(err)
	})
	// 20 units, 6 orders in the database, 6 queued (the seventh message is an order the database has).
	if left, _, err := r.ledger.Left(ctx, r.item.ID); err != nil || left != 8 {
		t.Errorf("stock left after the check: %d (%v), want 8", left, err)
	}
	if err := r.buy(t, r.users[0]); !errors.Is(err, stock.ErrAlreadyBought) {
		t.Errorf("user 0 buying again on the new master: %v, want already bought", err)
	}

	stop = run(r.consumer(r.db, "new"))
	r.waitDrained(t, 30*time.Second)
	stop()
	if err := r.buy(t, r.users[12]); err != nil {
		t.Errorf("a buy after the failover: %v", err)
	}
	stop = run(r.consumer(r.db, "new"))
	r.waitDrained(t, 30*time.Second)
	stop()
	r.audit(t, 13)
}
