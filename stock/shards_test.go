package stock_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"seckill/auth"
	"seckill/errs"
	"seckill/internal/testenv"
	"seckill/jobs"
	"seckill/models"
	"seckill/stock"
)

// clock is a settable clock for the ledger.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

type shardRig struct {
	db     *gorm.DB
	rdb    *redis.Client
	ledger *stock.Ledger
	clock  *clock
	item   models.Item
}

// newShardRig makes a running sale of one item of stockTotal units split over n shards, preheated.
func newShardRig(t testing.TB, stockTotal int64, n int) *shardRig {
	t.Helper()
	r := &shardRig{db: testenv.Postgres(t), rdb: testenv.Redis(t), clock: &clock{t: time.Now()}}
	r.ledger = testenv.Ledger(r.rdb, r.clock.now)
	_, r.item = testenv.Sale(t, r.db, stockTotal, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	if err := r.db.Model(&r.item).Update("stock_shards", n).Error; err != nil {
		t.Fatal(err)
	}
	left, err := r.ledger.Preheat(context.Background(), jobs.DBBooks{DB: r.db}, r.item.ID)
	if err != nil || left != stockTotal {
		t.Fatalf("preheat: %d left, %v; want %d", left, err, stockTotal)
	}
	return r
}

// buy takes a unit for the user through a fresh path, as the buy endpoint does.
func (r *shardRig) buy(userID int64, orderNo string) error {
	ctx := context.Background()
	tok, _ := auth.RandomToken(16)
	if err := r.ledger.IssuePath(ctx, r.item.ID, userID, tok); err != nil {
		return err
	}
	_, err := r.ledger.Take(ctx, r.item.ID, userID, tok, orderNo)
	return err
}

// shardLeft reads each shard's count.
func (r *shardRig) shardLeft(t *testing.T, n int) []int64 {
	t.Helper()
	out := make([]int64, n)
	for i := range out {
		v, err := r.rdb.HGet(context.Background(), stock.ShardKeys(r.item.ID, i).Sale, "left").Int64()
		if err != nil {
			t.Fatalf("shard %d: %v", i, err)
		}
		out[i] = v
	}
	return out
}

// queued reads every order message of every shard: user → order numbers.
func (r *shardRig) queued(t *testing.T, n int) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for i := range n {
		msgs, err := r.rdb.XRange(context.Background(), stock.ShardKeys(r.item.ID, i).Stream, "-", "+").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			u := m.Values["user_id"].(string)
			out[u] = append(out[u], m.Values["order_no"].(string))
		}
	}
	return out
}

func TestShardedPreheatSplitsStock(t *testing.T) {
	r := newShardRig(t, 10, 4)
	if got := r.shardLeft(t, 4); fmt.Sprint(got) != "[3 3 2 2]" {
		t.Errorf("shards hold %v, want [3 3 2 2]", got)
	}
	if n, _ := r.ledger.Shards(context.Background(), r.item.ID); n != 4 {
		t.Errorf("the ledger sees %d shards, want 4", n)
	}
	// Every shard is in a slot of its own, so that a cluster can put them on different masters.
	slots := map[string]bool{}
	for i := range 4 {
		k := stock.ShardKeys(r.item.ID, i)
		slots[k.Sale[:len(k.Sale)-len("sale")]] = true
	}
	if len(slots) != 4 {
		t.Errorf("shards share hash tags: %v", slots)
	}
}

// A crowd four times the stock, in parallel: every unit is sold once, to one buyer each, and nothing is
// left in any shard.
func TestShardedRushSellsEveryUnitOnce(t *testing.T) {
	testenv.Long(t)
	const stockTotal, shards, buyers = 100, 4, 400
	r := newShardRig(t, stockTotal, shards)
	var queued, soldOut atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, buyers)
	for u := range buyers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := r.buy(int64(1000+u), fmt.Sprintf("SK%d", u))
			switch {
			case err == nil:
				queued.Add(1)
			case errs.Is(err, errs.SoldOut):
				soldOut.Add(1)
			default:
				errc <- err
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Errorf("unexpected answer: %v", err)
	}
	if queued.Load() != stockTotal || soldOut.Load() != buyers-stockTotal {
		t.Errorf("%d queued and %d sold out, want %d and %d", queued.Load(), soldOut.Load(), stockTotal, buyers-stockTotal)
	}
	if got := r.shardLeft(t, shards); fmt.Sprint(got) != "[0 0 0 0]" {
		t.Errorf("shards hold %v after the rush, want all empty", got)
	}
	q := r.queued(t, shards)
	if len(q) != stockTotal {
		t.Errorf("%d buyers queued, want %d", len(q), stockTotal)
	}
	for u, orders := range q {
		if len(orders) != 1 {
			t.Errorf("user %s queued %d orders", u, len(orders))
		}
	}
	if n, _ := r.ledger.InTransit(context.Background(), r.item.ID); n != 0 {
		t.Errorf("%d units still in transit between shards", n)
	}
}

// Every buyer lives in shard 0, which holds a quarter of the stock: the rest is borrowed from the other
// shards, one unit a buy, and the item sells out exactly at its stock.
func TestShardedBuyersBorrowFromOtherShards(t *testing.T) {
	const stockTotal, shards = 40, 4
	r := newShardRig(t, stockTotal, shards)
	var users []int64
	for u := int64(4000); len(users) < 100; u += shards { // HomeShard(u, 4) == 0
		users = append(users, u)
	}
	var queued atomic.Int64
	var wg sync.WaitGroup
	for i, u := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.buy(u, fmt.Sprintf("SKb%d", i)); err == nil {
				queued.Add(1)
			} else if !errs.Is(err, errs.SoldOut) {
				t.Errorf("user %d: %v", u, err)
			}
		}()
	}
	wg.Wait()
	if queued.Load() != stockTotal {
		t.Errorf("%d queued, want all %d units", queued.Load(), stockTotal)
	}
	q := r.queued(t, shards)
	if len(q) != stockTotal {
		t.Errorf("%d buyers queued, want %d", len(q), stockTotal)
	}
	// Every order sits in the buyers' home shard, where their marks and results are.
	msgs, _ := r.rdb.XLen(context.Background(), stock.ShardKeys(r.item.ID, 0).Stream).Result()
	if msgs != stockTotal {
		t.Errorf("shard 0's stream holds %d orders, want %d", msgs, stockTotal)
	}
	if left, _, _ := r.ledger.Left(context.Background(), r.item.ID); left != 0 {
		t.Errorf("%d left, want 0", left)
	}
	// A buyer who bought cannot buy again, though their shard is empty and they would borrow.
	var bought int64
	for u := range q {
		fmt.Sscan(u, &bought)
		break
	}
	if err := r.buy(bought, "SKagain"); !errs.Is(err, errs.AlreadyBought) {
		t.Errorf("a second buy answered %v, want already_bought", err)
	}
	res, err := r.ledger.ResultOf(context.Background(), r.item.ID, bought)
	if err != nil || res.Status != stock.ResultQueued {
		t.Errorf("the buyer's result is %+v, %v; want queued", res, err)
	}
	res, _ = r.ledger.ResultOf(context.Background(), r.item.ID, 99999)
	if res.Status != stock.ResultSoldOut {
		t.Errorf("a latecomer's result is %+v, want sold_out", res)
	}
}

// The same buyer with the same path from two tabs at once: one order, however the shards are.
func TestShardedSamePathTwiceIsOneOrder(t *testing.T) {
	r := newShardRig(t, 8, 4)
	ctx := context.Background()
	const user = 4000 // home shard 0
	// Empty the home shard so that both attempts borrow.
	for i := range 2 {
		if err := r.buy(int64(4004+4*i), fmt.Sprintf("SKfill%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	tok, _ := auth.RandomToken(16)
	if err := r.ledger.IssuePath(ctx, r.item.ID, user, tok); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	answers := make([]error, 8)
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, answers[i] = r.ledger.Take(ctx, r.item.ID, user, tok, fmt.Sprintf("SKtab%d", i))
		}()
	}
	wg.Wait()
	ok := 0
	for _, err := range answers {
		switch {
		case err == nil:
			ok++
		case errs.Is(err, errs.InvalidPath), errs.Is(err, errs.AlreadyBought):
		default:
			t.Errorf("unexpected answer %v", err)
		}
	}
	if ok != 1 {
		t.Errorf("%d of 8 tabs queued an order, want 1", ok)
	}
	// Units the refused tabs borrowed stay on sale: 8 − 2 fillers − 1 = 5, wherever they landed.
	settle := func() {
		r.clock.add(time.Minute)
		if _, err := r.ledger.Preheat(ctx, jobs.DBBooks{DB: r.db}, r.item.ID); err != nil {
			t.Fatal(err)
		}
	}
	settle()
	if left, _, _ := r.ledger.Left(ctx, r.item.ID); left != 5 {
		t.Errorf("%d left, want 5", left)
	}
}

// A buy that borrowed a unit and vanished before using it: the unit is in transit until the preheat
// round credits it to the borrower, once.
func TestShardedLoanOfAVanishedBuyIsCredited(t *testing.T) {
	r := newShardRig(t, 4, 2)
	ctx := context.Background()
	// Empty shard 0 (users with even ids), then a path for another shard-0 buyer.
	for i, u := range []int64{10, 12} {
		if err := r.buy(u, fmt.Sprintf("SKf%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	// The buy borrows from shard 1 and dies before its take: simulated by lending alone.
	k := stock.ShardKeys(r.item.ID, 1)
	lend := redis.NewScript(`redis.call('HINCRBY', KEYS[1], 'left', -1) redis.call('HSET', KEYS[2], ARGV[1], ARGV[2]) return 1`)
	if err := lend.Run(ctx, r.rdb, []string{k.Sale, k.Loans}, "SKdead:0", fmt.Sprintf("0:%d", r.clock.now().UnixMilli())).Err(); err != nil {
		t.Fatal(err)
	}
	if n, _ := r.ledger.InTransit(ctx, r.item.ID); n != 1 {
		t.Fatalf("%d in transit, want 1", n)
	}
	if left, _, _ := r.ledger.Left(ctx, r.item.ID); left != 1 {
		t.Fatalf("%d left while the unit is in transit, want 1", left)
	}
	// Within the grace the loan is left to its buy; after it, preheat credits it to shard 0, once.
	if _, err := r.ledger.Preheat(ctx, jobs.DBBooks{DB: r.db}, r.item.ID); err != nil {
		t.Fatal(err)
	}
	if n, _ := r.ledger.InTransit(ctx, r.item.ID); n != 1 {
		t.Errorf("the loan was credited within its grace")
	}
	r.clock.add(10 * time.Second)
	for range 2 {
		if _, err := r.ledger.Preheat(ctx, jobs.DBBooks{DB: r.db}, r.item.ID); err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := r.ledger.InTransit(ctx, r.item.ID); n != 0 {
		t.Errorf("%d in transit after the round, want 0", n)
	}
	if got := r.shardLeft(t, 2); fmt.Sprint(got) != "[1 1]" {
		t.Errorf("shards hold %v, want [1 1]", got)
	}
	// The credited unit sells to a shard-0 buyer.
	if err := r.buy(14, "SKlast0"); err != nil {
		t.Errorf("the credited unit did not sell: %v", err)
	}
}

// A shard lost with its Redis master (restarted empty) is rebuilt from what the database knows, less
// what the other shards still hold, queue or lent: never more than the item's stock.
func TestShardedLostShardIsRebuiltWithoutOverselling(t *testing.T) {
	r := newShardRig(t, 40, 4) // 10 a shard
	ctx := context.Background()
	for i := range 8 { // eight buyers of shard 1: queued there, not in the database yet
		if err := r.buy(int64(1+4*i), fmt.Sprintf("SKq%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	k := stock.ShardKeys(r.item.ID, 2)
	for i := range 3 { // three buyers of shard 2, whose marks and orders are lost with it
		if err := r.buy(int64(2+4*i), fmt.Sprintf("SKl%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.rdb.Del(ctx, k.Sale, k.Buyers, k.Results, k.Stream, k.Loans, k.Received).Err(); err != nil {
		t.Fatal(err)
	}
	left, err := r.ledger.Preheat(ctx, jobs.DBBooks{DB: r.db}, r.item.ID)
	if err != nil {
		t.Fatal(err)
	}
	// Shards 0 and 3 hold 10 each, shard 1 holds 2 and queues 8: 30 of the 40 are accounted for.
	if got := r.shardLeft(t, 4); fmt.Sprint(got) != "[10 2 10 10]" {
		t.Errorf("shards hold %v, want [10 2 10 10]", got)
	}
	if left != 32 {
		t.Errorf("preheat answered %d left, want 32", left)
	}
	backlog, _ := r.ledger.Backlog(ctx, r.item.ID)
	if left+backlog > 40 {
		t.Errorf("%d left + %d queued is more than the stock", left, backlog)
	}
}

// A cancelled order's unit comes back to one shard, once, however often the job asks.
func TestShardedRestockOnce(t *testing.T) {
	r := newShardRig(t, 4, 4)
	ctx := context.Background()
	for i := range 4 {
		if err := r.buy(int64(100+i), fmt.Sprintf("SKr%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		if _, err := r.ledger.Restock(ctx, r.item.ID, "SKr2"); err != nil {
			t.Fatal(err)
		}
	}
	if left, _, _ := r.ledger.Left(ctx, r.item.ID); left != 1 {
		t.Errorf("%d left after restocking one order three times, want 1", left)
	}
	// The buyer of that order may not buy again; a newcomer gets the unit, whichever shard it is in.
	if err := r.buy(102, "SKr2again"); !errs.Is(err, errs.AlreadyBought) {
		t.Errorf("the cancelled order's buyer: %v, want already_bought", err)
	}
	if err := r.buy(200, "SKnew"); err != nil {
		t.Errorf("a newcomer could not buy the restocked unit: %v", err)
	}
}

func TestItemShardsAreValidated(t *testing.T) {
	for _, tc := range []struct {
		shards int
		stock  int64
		field  string
	}{{-1, 10, "stock_shards"}, {65, 100, "stock_shards"}, {5, 4, "stock_shards"}, {0, 10, ""}, {64, 64, ""}} {
		in := models.ItemInput{Name: "x", OriginalPriceCents: 100, SeckillPriceCents: 50, Stock: tc.stock, StockShards: tc.shards}
		err := in.Validate(time.Now())
		var e *errs.Error
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%d shards of %d: %v", tc.shards, tc.stock, err)
		case tc.field == "" && in.StockShards < 1:
			t.Errorf("%d shards became %d, want at least 1", tc.shards, in.StockShards)
		case tc.field != "" && (!errors.As(err, &e) || e.Fields[tc.field] == ""):
			t.Errorf("%d shards of %d: %v, want an error on %s", tc.shards, tc.stock, err, tc.field)
		}
	}
}

// Shards lie far apart on the cluster's slot ring, so that a cluster's masters (each a contiguous range
// of slots) share an item's shards out rather than one master taking them all.
func TestShardsSpreadOverTheSlotRing(t *testing.T) {
	if got := stock.Slot("item:1"); got != 13307 { // redis-cli CLUSTER KEYSLOT "{item:1}" answers 13307
		t.Fatalf("slot of item:1 is %d, want Redis's 13307", got)
	}
	for id := int64(1); id <= 200; id++ {
		for _, n := range []int{2, 3, 4, 8} {
			thirds := map[int]bool{} // three masters, each a third of the ring
			for i := range n {
				k := stock.ShardKeys(id, i).Sale
				tag := k[strings.Index(k, "{")+1 : strings.Index(k, "}")]
				thirds[stock.Slot(tag)*3/16384] = true
			}
			if want := min(n, 3) - 1; len(thirds) < want || (n == 2 && len(thirds) != 2) {
				t.Errorf("item %d's %d shards lie on %d of three equal slot ranges", id, n, len(thirds))
			}
		}
	}
}

// A rebuild after a lost shard counts a loan the borrower already received once, in the borrower's
// stock or queue, not a second time: the lost shard gets back every unit it can.
func TestShardedRebuildCountsDeliveredLoansOnce(t *testing.T) {
	r := newShardRig(t, 40, 4) // [10 10 10 10]
	ctx := context.Background()
	for i := range 20 { // twenty buyers of shard 0: ten of its own units, ten borrowed
		if err := r.buy(int64(4000+4*i), fmt.Sprintf("SKh%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	k := stock.ShardKeys(r.item.ID, 2)
	r.rdb.Del(ctx, k.Sale, k.Buyers, k.Results, k.Stream, k.Loans, k.Received)
	if _, err := r.ledger.Preheat(ctx, jobs.DBBooks{DB: r.db}, r.item.ID); err != nil {
		t.Fatal(err)
	}
	left, _, _ := r.ledger.Left(ctx, r.item.ID)
	backlog, _ := r.ledger.Backlog(ctx, r.item.ID)
	if left != 20 || backlog != 20 {
		t.Errorf("after the rebuild %d left (shards %v) and %d queued, want 20 and 20", left, r.shardLeft(t, 4), backlog)
	}
	// Settled loans are deleted a while later; the books still add up.
	r.clock.add(10 * time.Second)
	if _, err := r.ledger.Preheat(ctx, jobs.DBBooks{DB: r.db}, r.item.ID); err != nil {
		t.Fatal(err)
	}
	r.clock.add(2 * time.Minute)
	if _, err := r.ledger.Preheat(ctx, jobs.DBBooks{DB: r.db}, r.item.ID); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		if n, _ := r.rdb.HLen(ctx, stock.ShardKeys(r.item.ID, i).Loans).Result(); n != 0 {
			t.Errorf("shard %d still records %d settled loans", i, n)
		}
	}
	if left, _, _ := r.ledger.Left(ctx, r.item.ID); left != 20 {
		t.Errorf("%d left after the loans were settled, want 20", left)
	}
}

// Preheating reads the shards one by one while units move between them; it must never take a real
// unit away for a count that only looks too high.
func TestShardedPreheatNeverTakesARealUnit(t *testing.T) {
	r := newShardRig(t, 4, 2) // [2 2]
	ctx := context.Background()
	for i, u := range []int64{11, 13} { // shard 1 sells out, and the orders reach the database
		if err := r.buy(u, fmt.Sprintf("SKo%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	r.db.Exec("UPDATE items SET stock_sold = 2 WHERE id = ?", r.item.ID)
	k0, k1 := stock.ShardKeys(r.item.ID, 0), stock.ShardKeys(r.item.ID, 1)
	r.rdb.Del(ctx, k1.Stream)
	var fired atomic.Bool
	r.rdb.AddHook(afterScriptOn{key: k0.Sale, fn: func() {
		if !fired.CompareAndSwap(false, true) {
			return
		}
		// Right after preheat read shard 0: a buyer of shard 1 fires one path from two tabs; both
		// borrow from shard 0 (shard 1 is empty), one buys, and the other is refused after its unit
		// was credited to shard 1.
		tok, _ := auth.RandomToken(16)
		if err := r.ledger.IssuePath(ctx, r.item.ID, 15, tok); err != nil {
			t.Error(err)
		}
		k := stock.ShardKeys(r.item.ID, 1)
		lend := redis.NewScript(`redis.call('HINCRBY', KEYS[1], 'left', -1) redis.call('HSET', KEYS[2], ARGV[1], ARGV[2]) return 1`)
		take := redis.NewScript(takeLua(t))
		now := r.clock.now().UnixMilli()
		for _, tab := range []string{"a", "b"} {
			lend.Run(ctx, r.rdb, []string{k0.Sale, k0.Loans}, "SK"+tab+":0", fmt.Sprintf("1:%d", now))
		}
		for _, tab := range []string{"a", "b"} {
			take.Run(ctx, r.rdb, []string{k.Sale, k.Buyers, k.Stream, k.Received, k.Paths}, now, 15, tok, "SK"+tab, "SK"+tab+":0")
		}
	}})
	if _, err := r.ledger.Preheat(ctx, jobs.DBBooks{DB: r.db}, r.item.ID); err != nil {
		t.Fatal(err)
	}
	left, _, _ := r.ledger.Left(ctx, r.item.ID)
	backlog, _ := r.ledger.Backlog(ctx, r.item.ID)
	transit, _ := r.ledger.InTransit(ctx, r.item.ID)
	if !fired.Load() || backlog != 1 {
		t.Fatalf("the two tabs did not race the preheat (fired %v, %d queued)", fired.Load(), backlog)
	}
	if left+backlog+transit+2 != 4 {
		t.Errorf("%d left + %d queued + %d in transit + 2 sold = %d, want 4", left, backlog, transit, left+backlog+transit+2)
	}
}

func takeLua(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("take.lua")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// afterScriptOn runs fn after every script whose first key is key (the preheat script on one shard).
type afterScriptOn struct {
	key string
	fn  func()
}

func (h afterScriptOn) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h afterScriptOn) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h afterScriptOn) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		a := cmd.Args()
		if name := strings.ToLower(fmt.Sprint(a[0])); (name == "evalsha" || name == "eval") && len(a) > 3 && fmt.Sprint(a[3]) == h.key {
			h.fn()
		}
		return err
	}
}

// When every shard is empty the path is used up by the sold-out answer, as a one-shard sale's is.
func TestShardedSoldOutUsesThePathUp(t *testing.T) {
	r := newShardRig(t, 2, 2)
	ctx := context.Background()
	for i, u := range []int64{20, 21} {
		if err := r.buy(u, fmt.Sprintf("SKs%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	// The path was issued while a unit was left; it comes to the buy after the item sold out.
	tok, _ := auth.RandomToken(16)
	k := stock.ShardKeys(r.item.ID, 0)
	r.rdb.HSet(ctx, k.Paths, 22, fmt.Sprintf("%s:%d", tok, r.clock.now().Add(time.Minute).UnixMilli()))
	if _, err := r.ledger.Take(ctx, r.item.ID, 22, tok, "SKlate"); !errs.Is(err, errs.SoldOut) {
		t.Fatalf("a buy after the sell-out answered %v, want sold_out", err)
	}
	if _, err := r.ledger.Take(ctx, r.item.ID, 22, tok, "SKlate2"); !errs.Is(err, errs.InvalidPath) {
		t.Errorf("the same path again answered %v, want invalid_path", err)
	}
}

// A shard lost with its master is not an empty one: while it waits for its rebuild, a buyer whose home
// shard has sold out is told to try again, not that the item is sold out, and keeps the path; once the
// shard is rebuilt, the same path buys a unit from it.
func TestShardedLostShardIsNotSoldOut(t *testing.T) {
	r := newShardRig(t, 8, 4) // 2 a shard
	ctx := context.Background()
	// Shards 0, 1 and 3 sell out to their own buyers (user id mod 4 is the home shard).
	for _, u := range []int64{4, 8, 1, 5, 3, 7} {
		if err := r.buy(u, fmt.Sprintf("SK%d", u)); err != nil {
			t.Fatal(err)
		}
	}
	k := stock.ShardKeys(r.item.ID, 2) // shard 2 still holds 2 units, and is lost with its master
	if err := r.rdb.Del(ctx, k.Sale, k.Buyers, k.Results, k.Stream, k.Loans, k.Received).Err(); err != nil {
		t.Fatal(err)
	}

	tok, _ := auth.RandomToken(16)
	if err := r.ledger.IssuePath(ctx, r.item.ID, 12, tok); !errs.Is(err, errs.NotFound) {
		t.Fatalf("a path while a shard is lost: %v, want not_found (the caller rebuilds from the database)", err)
	}
	// A buyer who got a path before the loss tries to buy.
	if _, err := r.rdb.HSet(ctx, stock.ShardKeys(r.item.ID, 0).Paths, 12, tok+":"+strconv.FormatInt(r.clock.now().Add(time.Minute).UnixMilli(), 10)).Result(); err != nil {
		t.Fatal(err)
	}
	soldOut, err := r.ledger.Take(ctx, r.item.ID, 12, tok, "SK12")
	if soldOut || !errs.Is(err, errs.NotReady) {
		t.Fatalf("a buy while a shard is lost: sold out %v, %v; want not_ready", soldOut, err)
	}
	if left, complete, err := r.ledger.Left(ctx, r.item.ID); err != nil || complete || left != 0 {
		t.Errorf("stock left: %d, complete %v, %v; want 0 from an incomplete count", left, complete, err)
	}
	if res, _ := r.ledger.ResultOf(ctx, r.item.ID, 12); res.Status == stock.ResultSoldOut {
		t.Error("the buyer's result says sold out while a shard is lost")
	}

	if _, err := r.ledger.Preheat(ctx, jobs.DBBooks{DB: r.db}, r.item.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ledger.Take(ctx, r.item.ID, 12, tok, "SK12"); err != nil {
		t.Fatalf("the same path once shard 2 is rebuilt: %v", err)
	}
	if got := r.shardLeft(t, 4); fmt.Sprint(got) != "[0 0 1 0]" {
		t.Errorf("shards hold %v, want [0 0 1 0]: the buy borrowed one of the rebuilt shard's 2", got)
	}
}

// The list of items whose order streams the consumers follow lives in one key; lost on its own (its
// master restarted empty, the shards elsewhere survived), the next preheat round writes it again.
func TestPreheatRestoresTheFollowedItems(t *testing.T) {
	r := newShardRig(t, 8, 4)
	ctx := context.Background()
	if err := r.rdb.Del(ctx, "sk:streams", "sk:shards").Err(); err != nil {
		t.Fatal(err)
	}
	if items, _ := r.ledger.Streams(ctx); len(items) != 0 {
		t.Fatalf("followed after the loss: %v", items)
	}
	if _, err := r.ledger.Preheat(ctx, jobs.DBBooks{DB: r.db}, r.item.ID); err != nil {
		t.Fatal(err)
	}
	if items, _ := r.ledger.Streams(ctx); len(items) != 1 || items[0] != r.item.ID {
		t.Errorf("followed after a preheat round: %v, want [%d]", items, r.item.ID)
	}
	fresh := testenv.Ledger(r.rdb, r.clock.now)
	if n, known, err := fresh.ShardsKnown(ctx, r.item.ID); n != 4 || !known || err != nil {
		t.Errorf("a fresh process reads %d shards (known %v, %v), want 4", n, known, err)
	}
}
