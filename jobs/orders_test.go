package jobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"

	"seckill/auth"
	"seckill/internal/faultnet"
	"seckill/internal/testenv"
	"seckill/models"
	"seckill/stock"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

type rig struct {
	db     *gorm.DB
	rdb    *redis.Client
	ledger *stock.Ledger
	flags  *stock.Flags
	item   models.Item
	users  []models.User
}

// newRig makes a running sale of one item with stockTotal units, preheated, and n buyers.
func newRig(t *testing.T, stockTotal int64, n int) *rig { return newShardedRig(t, stockTotal, n, 1) }

// newShardedRig is newRig with the item's stock split over shards.
func newShardedRig(t *testing.T, stockTotal int64, n, shards int) *rig {
	t.Helper()
	r := &rig{db: testenv.Postgres(t), rdb: testenv.Redis(t)}
	r.ledger = testenv.Ledger(r.rdb, time.Now)
	r.flags = stock.NewFlags(r.ledger, r.rdb, quiet)
	_, r.item = testenv.Sale(t, r.db, stockTotal, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	if shards > 1 {
		if err := r.db.Model(&r.item).Update("stock_shards", shards).Error; err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.ledger.Preheat(context.Background(), DBBooks{DB: r.db}, r.item.ID); err != nil {
		t.Fatal(err)
	}
	r.users = testenv.Users(t, r.db, "buyer", n)
	return r
}

// buy takes one unit for user u through a fresh path, as the buy endpoint does.
func (r *rig) buy(t *testing.T, u models.User) error {
	t.Helper()
	ctx := context.Background()
	tok, _ := auth.RandomToken(16)
	if err := r.ledger.IssuePath(ctx, r.item.ID, u.ID, tok); err != nil {
		return err
	}
	_, err := r.ledger.Take(ctx, r.item.ID, u.ID, tok, fmt.Sprintf("SK%d-%d", r.item.ID, u.ID))
	return err
}

func (r *rig) consumer(db *gorm.DB, name string) *OrderConsumer {
	return &OrderConsumer{DB: db, Ledger: r.ledger, Flags: r.flags, Name: name, Log: quiet, PayTimeout: 15 * time.Minute,
		Batch: 50, Block: 50 * time.Millisecond, ClaimIdle: time.Minute, Discover: 20 * time.Millisecond}
}

// run runs c until the returned stop is called.
func run(c *OrderConsumer) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Run(ctx) }()
	return func() { cancel(); <-done }
}

// waitDrained waits until the item's stream has nothing queued or unacknowledged.
func (r *rig) waitDrained(t *testing.T, within time.Duration) {
	t.Helper()
	testenv.EventuallySaw(t, within, "the queue to drain", func() (bool, string) {
		n, err := r.ledger.Backlog(context.Background(), r.item.ID)
		return err == nil && n == 0, fmt.Sprintf("%d left, %v", n, err)
	})
}

// audit checks the invariants between PostgreSQL and Redis for the item once the queue has drained:
// want orders, each with its purchase and stock log row, no user twice, stock_sold and Redis agreeing.
func (r *rig) audit(t *testing.T, want int64) {
	t.Helper()
	ctx := context.Background()
	count := func(q string, args ...any) int64 {
		var n int64
		if err := r.db.Raw(q, args...).Scan(&n).Error; err != nil {
			t.Fatal(err)
		}
		return n
	}
	id := r.item.ID
	if n := count("SELECT count(*) FROM orders WHERE item_id = ?", id); n != want {
		t.Errorf("%d orders, want %d", n, want)
	}
	if n := count("SELECT count(*) FROM purchases WHERE item_id = ?", id); n != want {
		t.Errorf("%d purchase rows, want %d", n, want)
	}
	if n := count("SELECT count(*) FROM stock_logs WHERE item_id = ? AND kind = 'sell'", id); n != want {
		t.Errorf("%d stock log rows, want %d", n, want)
	}
	if n := count("SELECT count(*) FROM (SELECT user_id FROM orders WHERE item_id = ? GROUP BY user_id HAVING count(*) > 1) d", id); n != 0 {
		t.Errorf("%d users hold two orders", n)
	}
	if n := count("SELECT stock_sold FROM items WHERE id = ?", id); n != want {
		t.Errorf("stock_sold %d, want %d", n, want)
	}
	left, _, err := r.ledger.Left(ctx, id)
	if err != nil || left != r.item.StockTotal-want {
		t.Errorf("Redis stock left %d (%v), want %d", left, err, r.item.StockTotal-want)
	}
	// Every order's buyer sees success with that order.
	var orders []models.Order
	r.db.Where("item_id = ?", id).Find(&orders)
	for _, o := range orders {
		res, err := r.ledger.ResultOf(ctx, id, o.UserID)
		if err != nil || res.Status != stock.ResultSuccess || res.OrderNo != o.OrderNo {
			t.Errorf("user %d's result %+v (%v), want success with %s", o.UserID, res, err, o.OrderNo)
		}
	}
}

func TestConsumerPlacesEveryQueuedOrderOnce(t *testing.T) {
	r := newRig(t, 100, 150)
	for _, u := range r.users {
		_ = r.buy(t, u) // the last 50 find it sold out
	}
	r.drainWithTwo(t)
	r.audit(t, 100)
}

// drainWithTwo runs two instances' consumers, sharing the streams, until nothing is queued.
func (r *rig) drainWithTwo(t *testing.T) {
	t.Helper()
	stopA := run(r.consumer(r.db, "a"))
	stopB := run(r.consumer(r.db, "b"))
	r.waitDrained(t, 30*time.Second)
	stopA()
	stopB()
}

// A hot item split over four shards, bought by a crowd in parallel: every shard's stream drains, each
// unit is one order, and every buyer's result, read from their home shard, is their order.
func TestShardedSaleDrainsEveryShard(t *testing.T) {
	r := newShardedRig(t, 60, 200, 4)
	var wg sync.WaitGroup
	var queued atomic.Int64
	for _, u := range r.users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r.buy(t, u) == nil {
				queued.Add(1)
			}
		}()
	}
	wg.Wait()
	if queued.Load() != 60 {
		t.Fatalf("%d queued, want 60", queued.Load())
	}
	r.drainWithTwo(t)
	r.audit(t, 60)
	for i := range 4 {
		if n, _ := r.rdb.XLen(context.Background(), stock.ShardKeys(r.item.ID, i).Stream).Result(); n != 0 {
			t.Errorf("shard %d's stream holds %d", i, n)
		}
	}
}

// A consumer that starts while the Redis master of shard 0 has lost its data, and with it what Redis
// knew of the item's shards, still follows every other shard's queue, by the database's count.
func TestFreshConsumerFollowsEveryShardWhenShardZeroIsLost(t *testing.T) {
	r := newShardedRig(t, 40, 16, 4)
	for _, u := range r.users {
		if err := r.buy(t, u); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	k := stock.ShardKeys(r.item.ID, 0)
	r.rdb.Del(ctx, k.Sale, k.Buyers, k.Results, k.Stream, k.Loans, k.Received, "sk:shards")
	c := r.consumer(r.db, "fresh")
	c.Ledger = testenv.Ledger(r.rdb, time.Now) // a process that just started: nothing in memory
	stop := run(c)
	var orders int64
	testenv.EventuallySaw(t, 20*time.Second, "the 12 orders of shards 1-3", func() (bool, string) {
		r.db.Raw("SELECT count(*) FROM orders WHERE item_id = ?", r.item.ID).Scan(&orders)
		return orders >= 12, fmt.Sprintf("%d orders", orders)
	})
	time.Sleep(10 * c.Discover) // queues empty: the consumer asks whether the sale is over, and must hear no
	stop()
	if orders != 12 { // shards 1 to 3 queued 12 orders; shard 0's 4 were lost with it
		t.Errorf("%d orders placed from shards 1-3, want 12", orders)
	}
	if items, _ := r.ledger.Streams(ctx); len(items) != 1 {
		t.Errorf("the item is no longer followed: %v", items)
	}
}

func TestConsumerStoppedBetweenCommitAndAck(t *testing.T) {
	r := newRig(t, 100, 100)
	for _, u := range r.users {
		if err := r.buy(t, u); err != nil {
			t.Fatal(err)
		}
	}
	c := r.consumer(r.db, "crashy")
	ctx, cancel := context.WithCancel(context.Background())
	var commits atomic.Int32
	c.afterCommit = func(int64) {
		if commits.Add(1) == 1 {
			cancel() // the process dies after its first commit, before acknowledging
		}
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Run(ctx) }()
	<-done
	if n, _ := r.ledger.Backlog(context.Background(), r.item.ID); n != 100 {
		t.Fatalf("after the crash %d messages are unacknowledged, want all 100", n)
	}
	var placed int64
	r.db.Model(&models.Order{}).Where("item_id = ?", r.item.ID).Count(&placed)
	if placed == 0 {
		t.Fatal("the first batch was not committed before the crash")
	}

	// The same consumer starts again: it reads its pending messages first.
	again := r.consumer(r.db, "crashy")
	stop := run(again)
	r.waitDrained(t, 30*time.Second)
	stop()
	r.audit(t, 100)
}

func TestDuplicatedMessageMakesOneOrder(t *testing.T) {
	r := newRig(t, 10, 1)
	u := r.users[0]
	if err := r.buy(t, u); err != nil {
		t.Fatal(err)
	}
	// The same order message delivered a second time (a producer retry, a replayed stream).
	ctx := context.Background()
	k := stock.KeysOf(r.item.ID)
	msgs, err := r.rdb.XRange(ctx, k.Stream, "-", "+").Result()
	if err != nil || len(msgs) != 1 {
		t.Fatalf("stream: %v %v", msgs, err)
	}
	r.rdb.XAdd(ctx, &redis.XAddArgs{Stream: k.Stream, Values: msgs[0].Values})

	stop := run(r.consumer(r.db, "c"))
	r.waitDrained(t, 10*time.Second)
	stop()
	// Redis took one unit; the database holds one order.
	r.audit(t, 1)
}

func TestDeadConsumersMessagesAreClaimed(t *testing.T) {
	r := newRig(t, 20, 20)
	for _, u := range r.users {
		if err := r.buy(t, u); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	if err := r.ledger.EnsureGroup(ctx, stock.Stream{ItemID: r.item.ID}); err != nil {
		t.Fatal(err)
	}
	// A consumer reads every message and dies without acknowledging any.
	got, err := r.ledger.Read(ctx, stock.Stream{ItemID: r.item.ID}, "dead", false, 100, 0)
	if err != nil || len(got) != 20 {
		t.Fatalf("the dead consumer read %d, %v", len(got), err)
	}
	c := r.consumer(r.db, "survivor")
	c.ClaimIdle = 100 * time.Millisecond
	stop := run(c)
	r.waitDrained(t, 30*time.Second)
	stop()
	r.audit(t, 20)
}

func TestMessageThatCanNeverSucceedGivesStockBack(t *testing.T) {
	r := newRig(t, 5, 2)
	ctx := context.Background()
	if err := r.buy(t, r.users[0]); err != nil {
		t.Fatal(err)
	}
	// A corrupt message for user 1, as if its unit had been taken: left 3, user marked.
	k := stock.KeysOf(r.item.ID)
	r.rdb.HIncrBy(ctx, k.Sale, "left", -1)
	r.rdb.SAdd(ctx, k.Buyers, r.users[1].ID)
	r.rdb.XAdd(ctx, &redis.XAddArgs{Stream: k.Stream, Values: map[string]any{"order_no": "SKbad", "user_id": r.users[1].ID, "price": "not a number"}})

	stop := run(r.consumer(r.db, "c"))
	r.waitDrained(t, 10*time.Second)
	stop()
	res, _ := r.ledger.ResultOf(ctx, r.item.ID, r.users[1].ID)
	if res.Status != stock.ResultFailed || res.Message == "" {
		t.Errorf("the corrupt order's buyer sees %+v, want failed with a message", res)
	}
	r.audit(t, 1) // one order, and Redis back at 4 left
	if err := r.buy(t, r.users[1]); err != nil {
		t.Fatalf("the buyer whose order failed cannot buy again: %v", err)
	}
	if res, _ := r.ledger.ResultOf(ctx, r.item.ID, r.users[1].ID); res.Status != stock.ResultQueued {
		t.Errorf("after buying again the buyer sees %+v, want queued", res)
	}
}

func TestPostgresAwayDuringTheSale(t *testing.T) {
	r := newRig(t, 60, 60)
	// The consumer reaches PostgreSQL through a proxy the test controls.
	u, _ := url.Parse(testenv.PostgresSchema(t))
	schemaDB := r.db
	var search string
	schemaDB.Raw("SHOW search_path").Scan(&search)
	p, err := faultnet.Listen("127.0.0.1:0", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	u.Host = p.Addr()
	q := u.Query()
	q.Set("search_path", search)
	q.Set("connect_timeout", "2")
	u.RawQuery = q.Encode()
	viaProxy, err := gorm.Open(postgres.Open(u.String()), testenv.GormConfig())
	if err != nil {
		t.Fatal(err)
	}
	if d, err := viaProxy.DB(); err == nil {
		defer d.Close()
	}

	stop := run(r.consumer(viaProxy, "c"))
	defer stop()
	for _, u := range r.users[:20] {
		if err := r.buy(t, u); err != nil {
			t.Fatal(err)
		}
	}
	r.waitDrained(t, 10*time.Second)

	p.Cut(true)
	for _, u := range r.users[20:] {
		if err := r.buy(t, u); err != nil { // buying goes on: PostgreSQL is not on the buy path
			t.Fatal(err)
		}
	}
	time.Sleep(500 * time.Millisecond) // the consumer fails and backs off meanwhile
	if n, _ := r.ledger.Backlog(context.Background(), r.item.ID); n != 40 {
		t.Errorf("while PostgreSQL is away %d orders wait, want 40", n)
	}
	p.Heal()
	r.waitDrained(t, 30*time.Second)
	r.audit(t, 60)
}

func TestRedisEmptiedAfterTheSaleStarted(t *testing.T) {
	r := newRig(t, 30, 60)
	for _, u := range r.users[:20] {
		if err := r.buy(t, u); err != nil {
			t.Fatal(err)
		}
	}
	stop := run(r.consumer(r.db, "c"))
	r.waitDrained(t, 10*time.Second)
	stop()

	ctx := context.Background()
	r.rdb.FlushDB(ctx) // Redis restarts with nothing
	p := &Preheat{DB: r.db, Ledger: r.ledger, Window: 10 * time.Minute, Now: time.Now, Log: quiet}
	if n, err := p.Once(ctx); err != nil || n != 1 {
		t.Fatalf("preheat after the flush: %d items, %v", n, err)
	}
	if left, _, _ := r.ledger.Left(ctx, r.item.ID); left != 10 {
		t.Fatalf("rebuilt stock left %d, want 10 (30 minus 20 orders)", left)
	}
	// Everyone tries again, the 20 who bought included: only 10 more can buy.
	var ok int
	for _, u := range r.users {
		if err := r.buy(t, u); err == nil {
			ok++
		}
	}
	if ok != 10 {
		t.Errorf("%d more units sold after the rebuild, want 10", ok)
	}
	// Preheating again during the sale never raises the count.
	if _, err := p.Once(ctx); err != nil {
		t.Fatal(err)
	}
	if left, _, _ := r.ledger.Left(ctx, r.item.ID); left != 0 {
		t.Errorf("a second preheat changed stock left to %d, want 0", left)
	}
	stop = run(r.consumer(r.db, "c"))
	r.waitDrained(t, 10*time.Second)
	stop()
	r.audit(t, 30)
}

func TestOneBadMessageDoesNotHoldUpTheQueue(t *testing.T) {
	r := newRig(t, 10, 3)
	ctx := context.Background()
	k := stock.KeysOf(r.item.ID)
	// Three queued orders as the take script writes them; two instances made the same order number
	// (as two instances sharing a NODE_ID could): the database can never hold both.
	for i, no := range []string{"SKsame", "SKsame", "SKother"} {
		r.rdb.HIncrBy(ctx, k.Sale, "left", -1)
		r.rdb.SAdd(ctx, k.Buyers, r.users[i].ID)
		m := stock.OrderMessage{OrderNo: no, UserID: r.users[i].ID, PriceCents: 990, ActivityID: r.item.ActivityID, At: time.Now()}
		r.rdb.XAdd(ctx, &redis.XAddArgs{Stream: k.Stream, Values: m.Fields()})
	}
	stop := run(r.consumer(r.db, "c"))
	r.waitDrained(t, 20*time.Second)
	stop()
	var n int64
	r.db.Model(&models.Order{}).Where("item_id = ?", r.item.ID).Count(&n)
	if n != 2 {
		t.Errorf("%d orders, want 2: the good order and one of the clashing pair", n)
	}
	if left, _, _ := r.ledger.Left(ctx, r.item.ID); left != 8 {
		t.Errorf("stock left %d, want 8: the refused order's unit goes back", left)
	}
	failed := 0
	for _, u := range r.users {
		if res, _ := r.ledger.ResultOf(ctx, r.item.ID, u.ID); res.Status == stock.ResultFailed {
			failed++
		}
	}
	if failed != 1 {
		t.Errorf("%d buyers see failed, want 1", failed)
	}
}

func TestSettlingTwiceGivesStockBackOnce(t *testing.T) {
	r := newRig(t, 5, 1)
	ctx := context.Background()
	if err := r.buy(t, r.users[0]); err != nil {
		t.Fatal(err)
	}
	if err := r.ledger.EnsureGroup(ctx, stock.Stream{ItemID: r.item.ID}); err != nil {
		t.Fatal(err)
	}
	msgs, err := r.ledger.Read(ctx, stock.Stream{ItemID: r.item.ID}, "c", false, 10, 0)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("read: %v %v", msgs, err)
	}
	give := stock.Settlement{GiveBack: true, Result: stock.FailedValue("test"), Rebuy: true}
	first, err := r.ledger.Settle(ctx, msgs[0], give)
	if err != nil || !first {
		t.Fatalf("first settle: %v %v", first, err)
	}
	again, err := r.ledger.Settle(ctx, msgs[0], give) // the message came again after its ack was lost
	if err != nil || again {
		t.Fatalf("second settle: %v %v, want nothing done", again, err)
	}
	if left, _, _ := r.ledger.Left(ctx, r.item.ID); left != 5 {
		t.Errorf("stock left %d, want 5: the unit came back once", left)
	}
}

func TestFinishedSalesLeaveTheConsumer(t *testing.T) {
	r := newRig(t, 5, 1)
	ctx := context.Background()
	if err := r.buy(t, r.users[0]); err != nil {
		t.Fatal(err)
	}
	c := r.consumer(r.db, "c")
	c.Linger = time.Millisecond
	c.Now = func() time.Time { return time.Now().Add(2 * time.Hour) } // the sale ended an hour ago
	stop := run(c)
	defer stop()
	testenv.EventuallySaw(t, 10*time.Second, "the ended, drained sale to be no longer followed", func() (bool, string) {
		items, err := r.ledger.Streams(ctx)
		return err == nil && len(items) == 0, fmt.Sprintf("followed %v (%v)", items, err)
	})
	r.audit(t, 1)

	// Its keys leave Redis a day after (the buyer's result is readable until then), and a unit given
	// back later (an order cancelled after the end) does not make a key that stays for ever.
	k := stock.KeysOf(r.item.ID)
	for _, key := range []string{k.Sale, k.Buyers, k.Results} {
		if ttl := r.rdb.TTL(ctx, key).Val(); ttl < 23*time.Hour || ttl > 24*time.Hour {
			t.Errorf("%s expires in %v, want a day", key, ttl)
		}
	}
	var no string
	r.db.Raw("SELECT order_no FROM orders WHERE item_id = ?", r.item.ID).Scan(&no)
	if left, err := r.ledger.Restock(ctx, r.item.ID, no); err != nil || left != 5 {
		t.Fatalf("restock after the sale was retired: %d %v", left, err)
	}
	keys, err := r.rdb.Keys(ctx, "sk:{item:"+strconv.FormatInt(r.item.ID, 10)+"}:*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range keys {
		if ttl := r.rdb.TTL(ctx, key).Val(); ttl < 0 {
			t.Errorf("%s stays for ever (TTL %v) after the sale was retired", key, ttl)
		}
	}
}

// A running sale Redis lost (a master restarted empty) is not retired by a consumer that finds it not
// loaded: once the preheat loads it again, none of its keys expires before the sale is over.
func TestLostSaleIsNotRetired(t *testing.T) {
	r := newRig(t, 5, 1)
	ctx := context.Background()
	if err := r.buy(t, r.users[0]); err != nil {
		t.Fatal(err)
	}
	c := r.consumer(r.db, "c")
	c.Linger, c.Keep = time.Millisecond, time.Minute
	stop := run(c)
	r.waitDrained(t, 10*time.Second)
	k := stock.KeysOf(r.item.ID)
	r.rdb.Del(ctx, k.Sale) // Redis lost the sale
	testenv.Eventually(t, 10*time.Second, "the consumer to stop following a sale Redis does not hold", func() bool {
		items, _ := r.ledger.Streams(ctx)
		return len(items) == 0
	})
	stop()
	if _, err := r.ledger.Preheat(ctx, DBBooks{DB: r.db}, r.item.ID); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{k.Sale, k.Buyers, k.Results, k.Stream} {
		if ttl := r.rdb.TTL(ctx, key).Val(); ttl != -1 {
			t.Errorf("%s of a running sale expires (TTL %v)", key, ttl)
		}
	}
}

func (r *rig) reconciler() *Reconcile {
	return &Reconcile{DB: r.db, Ledger: r.ledger, Runs: NewRuns(r.rdb, prometheus.NewRegistry(), time.Now), Now: time.Now, Log: quiet}
}

// rounds runs n reconciliation rounds.
func (r *Reconcile) rounds(t *testing.T, n int) {
	t.Helper()
	for range n {
		if err := r.Runs.Once(context.Background(), "reconcile", false, 0, r.round); err != nil {
			t.Fatal(err)
		}
	}
}

// One item whose Redis keys cannot be read (its master is away; here, a key of the wrong type) does not
// stop a preheat or reconciliation round from reaching the other items.
func TestRoundsGoOnPastAFailingItem(t *testing.T) {
	r := newRig(t, 10, 0)
	ctx := context.Background()
	_, other := testenv.Sale(t, r.db, 6, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	if _, err := r.ledger.Preheat(ctx, DBBooks{DB: r.db}, other.ID); err != nil {
		t.Fatal(err)
	}
	broken := stock.KeysOf(r.item.ID).Sale
	r.rdb.Del(ctx, broken)
	r.rdb.Set(ctx, broken, "not a hash", 0)
	ok := stock.KeysOf(other.ID)
	r.rdb.Del(ctx, ok.Sale, ok.Buyers) // the other item's shard is lost: the round must rebuild it

	pre := &Preheat{DB: r.db, Ledger: r.ledger, Window: time.Hour, Interval: time.Second, Now: time.Now, Log: quiet}
	n, err := pre.Once(ctx)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("item %d", r.item.ID)) {
		t.Errorf("the round's error: %v, want one naming item %d", err, r.item.ID)
	}
	if left, complete, err := r.ledger.Left(ctx, other.ID); n != 1 || left != 6 || !complete || err != nil {
		t.Errorf("after the round: %d items preheated, the other item holds %d (complete %v, %v); want 1 and 6", n, left, complete, err)
	}

	rec := r.reconciler()
	r.rdb.HIncrBy(ctx, ok.Sale, "left", -1) // a unit of the other item goes missing in Redis
	for range 2 {
		if err := rec.Runs.Once(ctx, ReconcileJob, false, 0, rec.round); err == nil {
			t.Error("a round that could not read an item reported no error")
		}
	}
	if m := rec.Mismatches(); len(m) != 1 || m[0].ItemID != other.ID || m[0].Difference != 1 {
		t.Errorf("mismatches %+v, want item %d one unit short", m, other.ID)
	}
}

// refuseAcks makes Redis refuse the consumer's acknowledgements a number of times, as a Redis still
// loading its append-only file after a restart answers (LOADING): everything else goes through.
type refuseAcks struct{ left atomic.Int32 }

func (h *refuseAcks) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *refuseAcks) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *refuseAcks) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			if c.Name() == "xack" && h.left.Add(-1) >= 0 {
				err := errors.New("LOADING Redis is loading the dataset in memory")
				for _, c := range cmds {
					c.SetErr(err)
				}
				return err
			}
		}
		return next(ctx, cmds)
	}
}

// Redis that fails the acknowledgement after the orders are committed (restarting, say) says nothing
// about the orders: they stay committed, their buyers' results say success once Redis answers, and no
// unit goes back on sale. (The chaos run found the consumer refusing such orders: it gave their units
// back and told their buyers they failed, while the orders stood in PostgreSQL.)
func TestRedisRefusingTheAckAfterTheCommitLosesNoOrder(t *testing.T) {
	r := newRig(t, 10, 10)
	for _, u := range r.users {
		if err := r.buy(t, u); err != nil {
			t.Fatal(err)
		}
	}
	flaky := redis.NewClient(r.rdb.Options())
	defer flaky.Close()
	refusals := &refuseAcks{}
	refusals.left.Store(4) // a batch, then its first order alone three times
	flaky.AddHook(refusals)
	c := r.consumer(r.db, "after_commit")
	c.Ledger = testenv.Ledger(flaky, time.Now)
	stop := run(c)
	r.waitDrained(t, 30*time.Second)
	stop()
	r.audit(t, 10)
	for _, u := range r.users {
		if res, err := r.ledger.ResultOf(context.Background(), r.item.ID, u.ID); err != nil || res.Status != stock.ResultSuccess {
			t.Errorf("buyer %d sees %+v (%v), want success", u.ID, res, err)
		}
	}
	if left, _, _ := r.ledger.Left(context.Background(), r.item.ID); left != 0 {
		t.Errorf("%d units back on sale after all 10 were ordered", left)
	}
}
