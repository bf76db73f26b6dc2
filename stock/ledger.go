// Package stock is the Redis side of a sale: every key of an item, the Lua scripts that take and give
// back stock, the purchase paths, the buyers' results and the order streams. All keys of one item share
// the hash tag {item:ID}, so each script touches one slot and the same code runs on a Redis Cluster.
package stock

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/errs"
)

// Ledger is an item's stock in Redis.
type Ledger struct {
	rdb    redis.UniversalClient
	now    func() time.Time
	shards sync.Map // item id → its shard count, fixed once its sale is loaded

	single     bool // group commit off: every take and path its own script call
	takeGroups groups[takeReq]
	pathGroups groups[pathReq]
	calls      atomic.Int64
	takes      atomic.Int64
	wait       waitState // the replicas each take batch waits for (wait.go)
	failover   *Failover // holds the takes after a failover until the books are checked (failover.go)
	journal    journal   // the takes answered lately, taken again after a failover (journal.go)
	// The takes answered unconfirmed whose results have not settled (unconfirmed.go).
	unconfirmed unconfirmedTakes
	breaks      atomic.Int64 // the client's connections that broke (breaks.go)
}

// NewLedger returns the ledger on rdb, with the app's clock (sale windows and paths are checked against it).
func NewLedger(rdb redis.UniversalClient, now func() time.Time) *Ledger {
	return &Ledger{rdb: rdb, now: now}
}

// PathTTL is how long a purchase path is valid.
const PathTTL = 60 * time.Second

// streamsKey lists the items that have an order stream, for the consumers to find.
const streamsKey = "sk:streams"

// Keys are the Redis keys of one stock shard of an item. An item has one shard unless its merchant
// splits it (items.stock_shards); every shard is a whole ledger of its own, in a slot of its own.
type Keys struct {
	Sale, Buyers, Results, Stream string
	Loans, Received               string // units lent to other shards, and loans received from them
	// Paths holds the shard's purchase paths, one field per buyer (user id → 'token:expiry ms', or the
	// answer a used path got: '!order:answer:left'). One hash rather than a key per buyer lets a batch
	// read and use up its buyers' paths in one command each; the hash lives a minute past the validity
	// of the last path written into it, and every path also carries its own expiry.
	Paths string
	item  string
}

// KeysOf returns the keys of item id's first shard, the only one of an item that is not split.
func KeysOf(id int64) Keys { return ShardKeys(id, 0) }

// ShardKeys returns the keys of shard i of item id, all under one hash tag so that each shard's scripts
// touch one slot (see shardTag for where the shards' slots lie).
func ShardKeys(id int64, i int) Keys {
	tag := "sk:{" + shardTag(id, i) + "}:"
	return Keys{Sale: tag + "sale", Buyers: tag + "buyers", Results: tag + "results", Stream: tag + "orders",
		Loans: tag + "loans", Received: tag + "received", Paths: tag + "paths", item: tag}
}

// HomeShard is the shard that holds a user's mark, path, result and order messages for an item of n
// shards: one place per user, so one-per-user holds across shards.
func HomeShard(userID int64, n int) int {
	if n <= 1 {
		return 0
	}
	return int(uint64(userID) % uint64(n))
}

var (
	//go:embed take.lua
	takeLua string
	//go:embed path.lua
	pathLua string
	//go:embed preheat.lua
	preheatLua string
	//go:embed settle.lua
	settleLua string
	//go:embed restock.lua
	restockLua string
	//go:embed lend.lua
	lendLua string
	//go:embed credit.lua
	creditLua string

	takeScript    = lua(takeLua)
	pathScript    = redis.NewScript(pathLua)
	preheatScript = redis.NewScript(preheatLua)
	settleScript  = lua(settleLua)
	restockScript = redis.NewScript(restockLua)
	lendScript    = redis.NewScript(lendLua)
	creditScript  = redis.NewScript(creditLua)
)

// Restock gives the unit of a cancelled order back on sale, once per order, and answers the stock left
// in the shard it went to (-1: the sale is not loaded; -2: this order's unit came back before). The
// shard is named by the order number, so that every retry asks the same one.
func (l *Ledger) Restock(ctx context.Context, itemID int64, orderNo string) (int64, error) {
	n, err := l.Shards(ctx, itemID)
	if err != nil {
		return 0, err
	}
	h := fnv.New32a()
	h.Write([]byte(orderNo))
	k := ShardKeys(itemID, int(h.Sum32()%uint32(n)))
	left, err := restockScript.Run(ctx, l.rdb, []string{k.Sale, k.item + "restocked"}, orderNo).Int64()
	if err != nil {
		return 0, fmt.Errorf("restock item %d: %w", itemID, err)
	}
	return left, nil
}

// shardsKey maps each item whose sale was loaded to its shard count, in a key of its own: the count
// must be known even when the Redis master of one of the item's shards lost its data.
const shardsKey = "sk:shards"

// Shards answers how many stock shards an item's loaded sale has, from memory after the first time: a
// loaded sale's count never changes (an approved item cannot be edited). A sale that is not loaded
// answers 1 and is asked again next time.
func (l *Ledger) Shards(ctx context.Context, itemID int64) (int, error) {
	n, _, err := l.ShardsKnown(ctx, itemID)
	return n, err
}

// ShardsKnown is Shards, and whether Redis knew the count (false: the sale is not loaded, or Redis lost
// what it knew, and 1 is a guess that the caller may check against the database).
func (l *Ledger) ShardsKnown(ctx context.Context, itemID int64) (int, bool, error) {
	if n, ok := l.shards.Load(itemID); ok {
		return n.(int), true, nil
	}
	var count *redis.StringCmd
	var first *redis.SliceCmd
	_, err := l.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		count = p.HGet(ctx, shardsKey, strconv.FormatInt(itemID, 10))
		first = p.HMGet(ctx, KeysOf(itemID).Sale, "left", "shards") // each shard's hash says it too
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return 0, false, fmt.Errorf("shards of item %d: %w", itemID, err)
	}
	n, err := count.Int()
	if err != nil || n < 1 {
		v := first.Val()
		if len(v) < 2 || v[0] == nil {
			return 1, false, nil
		}
		n = 1 // a sale loaded before shards existed
		if f, ok := v[1].(string); ok {
			if p, err := strconv.Atoi(f); err == nil && p > 1 {
				n = p
			}
		}
	}
	l.SetShards(itemID, n)
	return n, true, nil
}

// known reports whether the item's shard count is known: its sale is loaded, or the catalog has it. Only
// such an item's shards get a batch group kept for them: an id that names no sale (a buy's address is
// anyone's to make up) is sent alone, and leaves nothing behind in memory.
func (l *Ledger) known(itemID int64) bool {
	_, ok := l.shards.Load(itemID)
	return ok
}

// SetShards records an item's shard count, known from the database (stock_shards).
func (l *Ledger) SetShards(itemID int64, n int) { l.shards.Store(itemID, max(n, 1)) }

// SetShardsIfUnknown is Remember for callers on a hot path (the catalog knows every item's count): it writes
// only the first time.
func (l *Ledger) SetShardsIfUnknown(itemID int64, n int) {
	if _, ok := l.shards.Load(itemID); !ok {
		l.shards.LoadOrStore(itemID, max(n, 1))
	}
}

// Sale is what preheating loads for an item.
type Sale struct {
	ItemID, ActivityID int64
	StartsAt, EndsAt   time.Time
	PriceCents         int64
	StockTotal         int64
	StockLeft          int64            // stock_total minus the orders that are not cancelled
	Shards             int              // stock shards (1: not split)
	Buyers             map[int64]string // user → order number of everyone with a purchase of the item, cancelled or not: one per user holds for the sale
}

// The ledger's refusals, made once: the buy endpoint answers them thousands of times a second, and the
// handlers that decide the same things without Redis answer with these too.
var (
	ErrInvalidPath   = errs.Static(errs.InvalidPath, "this purchase link is not valid: get a new one")
	ErrNotStarted    = errs.Static(errs.NotStarted, "the sale has not started yet")
	ErrEnded         = errs.Static(errs.Ended, "the sale has ended")
	ErrSoldOut       = errs.Static(errs.SoldOut, "sold out")
	ErrAlreadyBought = errs.Static(errs.AlreadyBought, "you have already bought this item")
	ErrNotOnSale     = errs.Static(errs.NotFound, "this item is not on sale")
	// ErrPaused is the answer while an admin has paused the item's sale (catalog.Stops knows which).
	ErrPaused = errs.Static(errs.Paused, "this sale is paused by the shop's staff: buying waits until it resumes (a place in its line is kept)")
)

// reason turns a script's refusal into the contract's error.
func reason(code string) error {
	switch code {
	case errs.InvalidPath:
		return ErrInvalidPath
	case errs.NotStarted:
		return ErrNotStarted
	case errs.Ended:
		return ErrEnded
	case errs.SoldOut:
		return ErrSoldOut
	case errs.AlreadyBought:
		return ErrAlreadyBought
	case answerNotFound:
		return ErrNotOnSale
	}
	return fmt.Errorf("stock: unexpected answer %q", code)
}

// IssuePath gives the buyer a single-use purchase path for the item, valid for PathTTL, if the buyer may
// still buy it. The path lives in the buyer's home shard.
func (l *Ledger) IssuePath(ctx context.Context, itemID, userID int64, token string) error {
	n, err := l.Shards(ctx, itemID)
	if err != nil {
		return err
	}
	h := HomeShard(userID, n)
	run := func(anyStock bool) (string, error) { return l.issue(ctx, itemID, h, userID, token, anyStock) }
	res, err := run(false)
	if err == nil && res == answerEmpty {
		// The home shard is empty: the buy will borrow, if any other shard has stock.
		left, complete, lerr := l.Left(ctx, itemID)
		switch {
		case lerr != nil:
			err = lerr
		case left > 0:
			res, err = run(true)
		case complete:
			res = errs.SoldOut
		default:
			// A shard is not loaded (lost with its master): not sold out. The caller asks the database,
			// which rebuilds it, and tries again.
			res = answerNotFound
		}
	}
	if err != nil {
		return err
	}
	if res != answerOK {
		return reason(res)
	}
	return nil
}

// Take is the buy: it checks the path, the window, the buyer and the stock, and takes one unit and queues
// the order, all in one script on the buyer's home shard. Only when that shard is empty does it borrow a
// unit from another shard (a round trip there, and the script again). It reports whether the item is
// now known to be sold out, or the contract's reason.
func (l *Ledger) Take(ctx context.Context, itemID, userID int64, path, orderNo string) (soldOut bool, err error) {
	soldOut, _, err = l.TakeConfirmed(ctx, itemID, userID, path, orderNo)
	return soldOut, err
}

// TakeConfirmed is Take, and whether the take is confirmed: true unless the ledger waits for replicas
// (WaitReplicas) and they did not acknowledge the take's batch in time. An unconfirmed take took its
// unit and queued its order on the master all the same; only a failover before the replicas caught up
// would lose it.
func (l *Ledger) TakeConfirmed(ctx context.Context, itemID, userID int64, path, orderNo string) (soldOut, confirmed bool, err error) {
	if err := l.failover.Held(); err != nil {
		return false, false, err
	}
	n, err := l.Shards(ctx, itemID)
	if err != nil {
		return false, false, err
	}
	h := HomeShard(userID, n)
	res, confirmed, err := l.take(ctx, itemID, h, userID, path, orderNo, "")
	loanConfirmed := true
	for try := 0; err == nil && res[0] == answerEmpty && try < n; try++ {
		var loan string
		if loan, loanConfirmed, err = l.borrow(ctx, itemID, n, h, orderNo, try); err != nil {
			break
		}
		if loan == "" {
			// No other shard lends: but units lent to this buyer's other tabs (refused, as their path was
			// used) landed on the home shard meanwhile. One more look there, then it is sold out.
			res, confirmed, err = l.take(ctx, itemID, h, userID, path, orderNo, "")
			break
		}
		res, confirmed, err = l.take(ctx, itemID, h, userID, path, orderNo, loan)
	}
	if err != nil && outcomeUnknown(err) {
		// The connection broke after the take was sent (the master killed under it, and asked again
		// in vain): it may have run, and a replica may have it. Not an error to try again (a take that ran
		// used the path up: a retry would be told invalid_path though the buyer holds the unit), but
		// unconfirmed, as a take its replicas did not acknowledge: the result settles, as an order or as
		// lost (unconfirmed.go), and says which. Journalled as well: if the master is gone (the usual
		// cause), the replay after the failover takes it again on the new one, so that the buyer gets the
		// unit they were told they may have, not a "lost" half a minute later.
		l.unconfirmed.add(itemID, userID, orderNo, l.now())
		l.journalTake(itemID, userID, h, orderNo, l.now())
		return false, false, nil
	}
	if err != nil {
		return false, false, refusedForReplicas(err)
	}
	switch res[0] {
	case ResultQueued:
		l.journalTake(itemID, userID, h, orderNo, l.now())
		// A unit lent by another shard is the buyer's only once the lender's replicas have the loan too
		// (on a cluster the lender is another master, whose writes the home shard's WAIT does not cover).
		if !confirmed || !loanConfirmed {
			l.unconfirmed.add(itemID, userID, orderNo, l.now())
		}
		return n == 1 && res[1] == "0", confirmed && loanConfirmed, nil
	case answerEmpty:
		// Every shard is empty: the path is used up by this answer, as a one-shard sale's is.
		if err := l.rdb.HDel(ctx, ShardKeys(itemID, h).Paths, strconv.FormatInt(userID, 10)).Err(); err != nil {
			return false, false, fmt.Errorf("take: %w", err)
		}
		return true, false, reason(errs.SoldOut)
	case errs.SoldOut:
		return true, false, reason(errs.SoldOut)
	}
	return false, false, reason(res[0])
}

// borrow tries the shards after h in turn for one unit lent to h, and answers the loan's id, or "" when
// every other shard is empty. A shard that fails (its master is away) or is not loaded (lost with its
// master, not rebuilt yet) is passed over; if no other shard lends, the item is not known to be sold
// out, and borrow fails with errStockUnknown.
//
// confirmed is false when the ledger waits for replicas (WaitReplicas) and the lender's did not
// acknowledge the loan in time: its unit left the lender on its master only.
func (l *Ledger) borrow(ctx context.Context, itemID int64, n, h int, orderNo string, try int) (loan string, confirmed bool, err error) {
	var unknown error
	id := orderNo + ":" + strconv.Itoa(try)
	for step := 1; step < n; step++ {
		s := (h + step) % n
		k := ShardKeys(itemID, s)
		keys, args := []string{k.Sale, k.Loans}, []any{id, h, l.now().UnixMilli()}
		var cmd *redis.Cmd
		var e error
		acked := true
		if l.waitsFor() > 0 {
			cmd, acked, e = l.runWaited(ctx, lendScript, keys, args)
		} else {
			cmd = lendScript.Run(ctx, l.rdb, keys, args...)
		}
		var got int64
		if e == nil {
			got, e = cmd.Int64()
		}
		switch {
		case e != nil:
			unknown = fmt.Errorf("shard %d: %w", s, e)
		case got == 1:
			return id, acked, nil
		case got < 0:
			unknown = fmt.Errorf("shard %d is not loaded", s)
		}
	}
	if unknown != nil {
		return "", false, fmt.Errorf("%w (borrow: %v)", errStockUnknown, unknown)
	}
	return "", true, nil
}

// Settlement is what to do with an order message that will not become a new order.
type Settlement struct {
	GiveBack bool   // the unit goes back on sale
	Result   string // the buyer's new result ('' keeps it)
	Rebuy    bool   // the buyer may buy again
}

// Settle acknowledges the message and applies s, once: a message settled before changes nothing again.
// It reports whether this call settled it. The unit goes back to the message's shard.
func (l *Ledger) Settle(ctx context.Context, m OrderMessage, s Settlement) (bool, error) {
	k := ShardKeys(m.ItemID, m.Shard)
	flag := func(b bool) string {
		if b {
			return "1"
		}
		return "0"
	}
	n, err := settleScript.Run(ctx, l.rdb, []string{k.Sale, k.Buyers, k.Results, k.Stream},
		m.ID, m.UserID, flag(s.GiveBack), s.Result, flag(s.Rebuy)).Int64()
	if err != nil {
		return false, fmt.Errorf("settle order message %s: %w", m.ID, err)
	}
	return n == 1, nil
}

// Left answers the stock left in Redis over the item's shards that answer, and whether that is every
// shard: false when the sale is not loaded, or a shard is lost with its master (and not rebuilt yet) or
// does not answer, when a count of 0 does not mean sold out. It fails only when no shard answers.
func (l *Ledger) Left(ctx context.Context, itemID int64) (left int64, complete bool, err error) {
	cmds, err := l.eachShard(ctx, itemID, "left")
	if err != nil {
		return 0, false, err
	}
	complete = true
	var failed error
	answered := false
	for _, c := range cmds {
		v, err := c.Int64()
		switch {
		case err == nil:
			left += v
			answered = true
		case errors.Is(err, redis.Nil):
			complete, answered = false, true
		default:
			complete, failed = false, err
		}
	}
	if !answered {
		return 0, false, fmt.Errorf("stock left of item %d: %w", itemID, failed)
	}
	return left, complete, nil
}

// eachShard reads one field of every shard's sale hash in one pipeline. Each answer is the caller's to
// read: redis.Nil for a shard not loaded, an error for a shard whose master did not answer.
func (l *Ledger) eachShard(ctx context.Context, itemID int64, field string) ([]*redis.StringCmd, error) {
	n, err := l.Shards(ctx, itemID)
	if err != nil {
		return nil, err
	}
	cmds := make([]*redis.StringCmd, n)
	_, _ = l.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range cmds {
			cmds[i] = p.HGet(ctx, ShardKeys(itemID, i).Sale, field)
		}
		return nil
	})
	return cmds, nil
}

// ResultOf reads a buyer's result: a marked buyer whose order is not settled yet is queued, and a buyer
// with none sees sold_out once the item is sold out.
func (l *Ledger) ResultOf(ctx context.Context, itemID, userID int64) (Result, error) {
	n, err := l.Shards(ctx, itemID)
	if err != nil {
		return Result{}, err
	}
	k := ShardKeys(itemID, HomeShard(userID, n))
	raw, marked, err := l.buyer(ctx, k, strconv.FormatInt(userID, 10))
	if err != nil {
		return Result{}, fmt.Errorf("result: %w", err)
	}
	settled := decodeResult(raw)
	// A failed buyer is no longer marked; marked again, it is a new attempt, queued.
	switch {
	case settled.Status == ResultSuccess:
		return settled, nil
	case marked:
		return Result{Status: ResultQueued}, nil
	case settled.Status == ResultFailed:
		return settled, nil
	}
	if left, complete, err := l.Left(ctx, itemID); err == nil && complete && left <= 0 {
		return Result{Status: ResultSoldOut}, nil
	}
	return Result{Status: ResultNone}, nil
}

// buyer reads a buyer's result as the results hash has it (decodeResult reads it) and whether they are
// marked a buyer, in one round trip.
func (l *Ledger) buyer(ctx context.Context, k Keys, uid string) (result string, marked bool, err error) {
	var res *redis.StringCmd
	var mark *redis.BoolCmd
	_, err = l.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		res = p.HGet(ctx, k.Results, uid)
		mark = p.SIsMember(ctx, k.Buyers, uid)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return "", false, err
	}
	return res.Val(), mark.Val(), nil
}
