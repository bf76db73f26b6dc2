package stock

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/errs"
)

// After a failover the books are checked before selling again (issue 36). Redis replicates
// asynchronously: the promoted replica may lack the last writes of the master it replaces (takes whose
// buyers were never answered, or answered unconfirmed), and may lack what the order consumer wrote
// since (a buyer's result, the mark that stops a second buy), while PostgreSQL has those orders. Sold
// from as it is, it could sell a unit the database cannot back, or sell a buyer twice. So every instance
// holds its buys from the moment it sees a new master until it has checked the new master's books against
// the database: each shard's stock capped at what the database can back less the orders still queued,
// every buyer the database knows marked again with their result. Then it sells again by itself.
//
// How a new master is seen: two ways, because one alone is late or blind.
//   - A failover client (Sentinel) dials the new master: a dial hook on the shop's client sees the
//     connection's address change, holds at once, and refuses the connection while the books are checked
//     (go-redis dials again with a backoff, so a buy that caused the dial either waits for the check or is
//     answered 503). This is what makes the hold come before the first buy on the new master: every
//     command there needs a connection dialed there, and none is given out unchecked. A poll alone could
//     not: a buy may reach the new master in the half second before the next look.
//   - A look every Interval at each master's run_id (INFO server), on a client the hold does not refuse
//     (the order consumer's): it sees what the hook cannot, a cluster's replica promoted (a cluster client
//     keeps connections to every node) or a master restarted at the same address, and it is the loop that
//     checks the books and lifts the hold.
//
// The hold answers buyers 503 with Retry-After (ErrFailover): never sold out, never failed.
//
// Every instance lifts its hold only when every other live instance has checked too (the meeting,
// meet.lua): each instance replays only its own journal, and one with nothing to replay would otherwise
// sell again at once, perhaps the very units another instance's journal is about to take again for buyers
// it answered on the old master. Each look, an instance says on Redis that it is alive and which masters
// (their run_ids: a generation) it has checked; a held instance sells again once no instance seen in the
// last MeetWindow has failed to check the generation it checked. The window is wide (15 s): the times the
// new master has are the ones replicated from the old master before it died, which are at least
// Sentinel's down-after old, so that every instance alive then is waited for, even one whose own look is
// still stuck on the old master (frozen: its reads wait out their timeout). An instance that is not held
// counts as checked for the masters it sees: it has sold on them all along. So that an instance started
// since is seen too, a hold lasts at least 1.5 Intervals; so that a dead or stuck instance cannot stop
// the shop, an instance that checked sells again MeetWithin later whoever is missing (logged and counted:
// seckill_redis_failover_unmet_total). A dead instance costs the others that much, once.

// ErrFailover answers a buy while the books are checked after a failover: try again in a second.
var ErrFailover = failoverError()

func failoverError() *errs.Error {
	e := errs.Say(errs.NotReady, "redis_failover")
	e.RetryAfter = time.Second
	return e
}

// ErrNoReplicas answers a buy the master refused for want of a replica (min-replicas-to-write: it is cut
// off from its replica, or it is a promoted master whose replica is not back yet): nothing was taken.
var ErrNoReplicas = noReplicasError()

func noReplicasError() *errs.Error {
	e := errs.Say(errs.NotReady, "redis_no_replicas")
	e.RetryAfter = time.Second
	return e
}

// refusedForReplicas turns Redis's NOREPLICAS refusal into ErrNoReplicas; any other error as it is.
func refusedForReplicas(err error) error {
	if err != nil && redis.HasErrorPrefix(err, "NOREPLICAS") {
		return ErrNoReplicas
	}
	return err
}

//go:embed lower.lua
var lowerLua string

var lowerScript = redis.NewScript(lowerLua)

//go:embed meet.lua
var meetLua string

var meetScript = redis.NewScript(meetLua)

// The meeting's keys, in one hash slot (on a cluster, on whichever master holds it).
const (
	meetInstances = "sk:{failover}:instances"
	meetChecked   = "sk:{failover}:checked:" // and the generation
)

const (
	// MeetWindow is how recently an instance must have looked to be waited for: beyond the time from
	// its last look on the old master to the promotion (down-after, the election) with room to spare.
	MeetWindow = 15 * time.Second
	// meetKeep is how long a generation's checked set is kept.
	meetKeep = 10 * time.Minute
)

// Failover watches the Redis masters and holds the sell ledger's buys after one changed, until the books
// are checked. One per instance; Run is its loop.
type Failover struct {
	sell     *Ledger // the shop's ledger: its takes are held
	books    *Ledger // on a client the hold does not refuse: reads the masters, checks the books
	src      Books
	log      *slog.Logger
	Interval time.Duration // how often the masters are looked at (default 250 ms)
	// MeetWithin bounds how long an instance that checked the books waits for the others (default 3 s).
	MeetWithin time.Duration

	held   atomic.Bool
	since  atomic.Int64 // when the hold began (unix ns)
	master atomic.Pointer[string]
	seen   atomic.Int64 // failovers seen
	last   atomic.Int64 // the last hold's length (ns)
	// The journal's takes replayed after failovers (journal.go): taken again on the new master, and
	// promises found broken (no unit left to take again).
	restored, lost atomic.Int64
	unmet          atomic.Int64 // holds lifted after MeetWithin with an instance still missing

	id        string            // this instance at the meeting
	runIDs    map[string]string // each master's run_id at the last look (Run's goroutine only)
	checked   string            // the generation of masters whose books this instance checked (Run's)
	checkedAt time.Time         // when
	checkedIn int64             // in which hold (its since)
}

// NewFailover makes the watch of sell's masters; books is a ledger on a second client of the same Redis,
// which the hold does not refuse; src is the database's word on every sale.
func NewFailover(sell, books *Ledger, src Books, log *slog.Logger) *Failover {
	f := &Failover{sell: sell, books: books, src: src, log: log, Interval: 250 * time.Millisecond,
		MeetWithin: 3 * time.Second, id: rand.Text()}
	sell.failover = f
	return f
}

// Held answers ErrFailover while buys are held, else nil. Nil-safe: a ledger without a watch never holds.
func (f *Failover) Held() error {
	if f != nil && f.held.Load() {
		return ErrFailover
	}
	return nil
}

// Stats answers the failovers seen since start, the last hold's length, and whether buys are held now.
func (f *Failover) Stats() (seen int64, lastHold time.Duration, held bool) {
	return f.seen.Load(), time.Duration(f.last.Load()), f.held.Load()
}

// hold starts a hold, once however many see the change.
func (f *Failover) hold(why string, args ...any) {
	if f.held.CompareAndSwap(false, true) {
		f.since.Store(time.Now().UnixNano())
		f.seen.Add(1)
		f.log.Warn("Redis failover: buys held until the books are checked: "+why, args...)
	}
}

// DialHook is a go-redis hook for the shop's failover client: a connection to another master than the
// last holds buys, and no connection is given out while they are held.
func (f *Failover) DialHook() redis.Hook { return dialHook{f} }

type dialHook struct{ f *Failover }

var _ redis.Hook = dialHook{}

func (h dialHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		cn, err := next(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		to := cn.RemoteAddr().String()
		for {
			was := h.f.master.Load()
			if was != nil && *was == to {
				break
			}
			if h.f.master.CompareAndSwap(was, &to) {
				if was != nil {
					h.f.hold("the master's address changed", "from", *was, "to", to)
				}
				break
			}
		}
		if h.f.held.Load() {
			_ = cn.Close()
			return nil, ErrFailover
		}
		return cn, nil
	}
}

func (dialHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (dialHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// Run looks at the masters every Interval, holds buys when one changed, and checks the books and lifts
// the hold, until ctx ends.
func (f *Failover) Run(ctx context.Context) error {
	t := time.NewTicker(f.Interval)
	defer t.Stop()
	for {
		f.look(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// look is one round of Run.
func (f *Failover) look(ctx context.Context) {
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ids, err := runIDs(lctx, f.books.rdb)
	if err != nil {
		return // Redis away: nothing can be sold meanwhile either; the next look asks again
	}
	if f.runIDs != nil {
		for addr, id := range ids {
			if f.runIDs[addr] != id {
				f.hold("a master's run_id changed", "master", addr, "run_id", id, "was", f.runIDs[addr])
			}
		}
	}
	f.runIDs = ids
	gen := generation(ids)
	if !f.held.Load() {
		f.checked = gen
		_, _ = f.meet(lctx, gen, true) // alive, selling on these masters; the next look says it again
		return
	}
	if f.checked != gen || f.checkedIn != f.since.Load() {
		// Alive first, so that the others wait for this instance while it checks.
		_, _ = f.meet(lctx, gen, false)
		if err := f.check(lctx); err != nil {
			if ctx.Err() == nil {
				f.log.Warn("Redis failover: the books could not be checked yet; buys stay held", "err", err)
			}
			return
		}
		f.checked, f.checkedAt, f.checkedIn = gen, time.Now(), f.since.Load()
	}
	// Wait for the others until the next look.
	for until := time.Now().Add(f.Interval); ; {
		waiting, err := f.meet(lctx, gen, true)
		held := time.Duration(time.Now().UnixNano() - f.since.Load())
		switch {
		case err == nil && len(waiting) == 0 && held >= f.Interval*3/2:
			f.lift(held, "books checked by every instance, buys resume")
			return
		case time.Since(f.checkedAt) >= f.MeetWithin:
			f.unmet.Add(1)
			f.log.Warn("Redis failover: buys resume though other instances have not checked the books (dead or stuck?)",
				"waiting_for", waiting, "err", err)
			f.lift(held, "books checked, buys resume")
			return
		case !time.Now().Before(until):
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// lift ends the hold, which lasted held.
func (f *Failover) lift(held time.Duration, msg string) {
	f.last.Store(int64(held))
	f.held.Store(false)
	f.log.Info("Redis failover: "+msg, "held", held)
}

// meet says at the meeting that this instance is alive and, if checked, that it checked the books of the
// masters of generation gen; it answers the live instances that have not.
func (f *Failover) meet(ctx context.Context, gen string, checked bool) ([]string, error) {
	flag := "0"
	if checked {
		flag = "1"
	}
	return meetScript.Run(ctx, f.books.rdb, []string{meetInstances, meetChecked + gen},
		f.id, flag, MeetWindow.Milliseconds(), meetKeep.Milliseconds()).StringSlice()
}

// generation names the masters of run_ids: the same for every instance that sees the same masters.
func generation(ids map[string]string) string {
	addrs := make([]string, 0, len(ids))
	for a := range ids {
		addrs = append(addrs, a)
	}
	slices.Sort(addrs)
	h := sha256.New()
	for _, a := range addrs {
		fmt.Fprintf(h, "%s=%s;", a, ids[a])
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// check checks the books of every sale with an order stream against the database.
func (f *Failover) check(ctx context.Context) error {
	ids, err := f.books.Streams(ctx)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := f.books.Recheck(ctx, f.src, id); err != nil && !errs.Is(err, errs.NotFound) {
			return fmt.Errorf("item %d: %w", id, err)
		}
	}
	// Then the takes this instance answered lately, which the new master may lack: after the recheck,
	// so that a buyer the database knows is marked already and left alone, and before selling, so that
	// the unit a journalled buyer was promised is still there to take again.
	r, err := f.books.replay(ctx, &f.sell.journal, f.src, time.Duration(time.Now().UnixNano()-f.since.Load()))
	f.restored.Add(int64(r.Restored))
	f.lost.Add(int64(r.Lost))
	if r.Restored > 0 {
		f.log.Warn("Redis failover: takes the new master lacked were taken again from this instance's journal", "restored", r.Restored, "kept", r.Kept)
	}
	if r.Lost > 0 {
		f.log.Error("Redis failover: takes answered to buyers could not be taken again on the new master (no unit left, or the sale is not on sale): their buyers are told their buy was lost", "lost", r.Lost)
	}
	return err
}

// Replays answers the journal's takes taken again on new masters, and those found lost, since start.
func (f *Failover) Replays() (restored, lost int64) { return f.restored.Load(), f.lost.Load() }

// Unmet answers how many holds were lifted after MeetWithin with another instance still not checked.
func (f *Failover) Unmet() int64 { return f.unmet.Load() }

// runIDs answers each master's run_id (INFO server), by address; a single Redis's (or a failover
// client's master's) under "".
func runIDs(ctx context.Context, rdb redis.UniversalClient) (map[string]string, error) {
	runID := func(ctx context.Context, c redis.Cmdable) (string, error) {
		info, err := c.Info(ctx, "server").Result()
		if err != nil {
			return "", err
		}
		for _, line := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "run_id:"); ok {
				return v, nil
			}
		}
		return "", errors.New("INFO server has no run_id")
	}
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		id, err := runID(ctx, rdb)
		return map[string]string{"": id}, err
	}
	var mu sync.Mutex
	out := map[string]string{}
	err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		id, err := runID(ctx, c)
		mu.Lock()
		out[c.Options().Addr] = id
		mu.Unlock()
		return err
	})
	return out, err
}

// Recheck checks one sale's books in Redis against the database after Redis may have lost writes: a sale
// Redis holds is refreshed as the preheat does (a shard lost is loaded again), every buyer the database knows
// is marked a buyer again with their result, and the stock left is lowered to what the database can back
// less the orders still queued. It never raises a count: a unit Redis holds too few is found by the
// reconciliation, a unit too many could be sold twice.
func (l *Ledger) Recheck(ctx context.Context, books Books, itemID int64) error {
	cmds, err := l.eachShard(ctx, itemID, "left")
	if err != nil {
		return err
	}
	loaded := false
	for _, c := range cmds {
		if err := c.Err(); err == nil {
			loaded = true
		} else if !errors.Is(err, redis.Nil) {
			return fmt.Errorf("stock left of item %d: %w", itemID, err)
		}
	}
	if !loaded {
		// Nothing of the sale is in Redis (it expired after the sale, or the new master never had it):
		// nothing can be sold from it. A buy finds it not loaded, and the loader loads it whole from the
		// database, buyers first (catalog.Loader), if it is still on sale.
		return nil
	}
	if _, err := l.Preheat(ctx, books, itemID); err != nil {
		return err
	}
	n, err := l.Shards(ctx, itemID)
	if err != nil {
		return err
	}
	// The order streams first, the database after: an order written meanwhile is in both, and counted
	// once when the database's sale and buyers are read at one moment (SnapshotBooks: an order is in the
	// buyers exactly when it is in the count sold), or twice otherwise, which lowers the cap by a unit
	// (never sells beyond it). A message the consumer has written and deleted before the streams are read
	// is in the database already, by then.
	msgs, err := l.queuedMessages(ctx, itemID, n)
	if err != nil {
		return err
	}
	sale, buyers, err := saleAndBuyers(ctx, books, itemID)
	if err != nil {
		return err
	}
	if err := l.remark(ctx, itemID, n, buyers); err != nil {
		return err
	}
	var queued int64
	for _, o := range msgs {
		if o.Bad == nil && buyers[o.UserID] == o.OrderNo {
			continue // its order is in the database already: counted in the stock sold
		}
		queued++
	}
	transit, err := l.InTransit(ctx, itemID)
	if err != nil {
		return err
	}
	left, _, err := l.Left(ctx, itemID)
	if err != nil {
		return err
	}
	excess := left - max(sale.StockLeft-queued-transit, 0)
	for i := 0; i < n && excess > 0; i++ {
		took, err := lowerScript.Run(ctx, l.rdb, []string{ShardKeys(itemID, i).Sale}, excess).Int64()
		if err != nil {
			return fmt.Errorf("lower the stock of item %d: %w", itemID, err)
		}
		excess -= took
	}
	return nil
}

// remark marks every buyer the database knows a buyer again, in their home shard, with their result
// where Redis has none.
func (l *Ledger) remark(ctx context.Context, itemID int64, n int, buyers map[int64]string) error {
	const chunk = 1000
	var batch []int64
	flush := func() error {
		_, err := l.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, uid := range batch {
				k := ShardKeys(itemID, HomeShard(uid, n))
				p.SAdd(ctx, k.Buyers, uid)
				p.HSetNX(ctx, k.Results, strconv.FormatInt(uid, 10), SuccessValue(buyers[uid]))
			}
			return nil
		})
		batch = batch[:0]
		if err != nil {
			return fmt.Errorf("mark the buyers of item %d: %w", itemID, err)
		}
		return nil
	}
	for uid := range buyers {
		batch = append(batch, uid)
		if len(batch) == chunk {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// queuedMessages reads the item's order messages in every shard's stream: those the consumer has not
// settled (and deleted) yet, whose orders the database may or may not hold (an acknowledgement lost with
// the old master).
func (l *Ledger) queuedMessages(ctx context.Context, itemID int64, n int) ([]OrderMessage, error) {
	var out []OrderMessage
	for i := range n {
		st := Stream{ItemID: itemID, Shard: i}
		msgs, err := l.rdb.XRange(ctx, st.key(), "-", "+").Result()
		if err != nil {
			return nil, fmt.Errorf("orders queued for item %d: %w", itemID, err)
		}
		for _, m := range msgs {
			out = append(out, parseOrder(st, m))
		}
	}
	return out, nil
}

// saleAndBuyers reads the sale and its buyers at one moment where books can (SnapshotBooks), else the
// buyers first and the sale after (an order written in between is then counted sold and queued: twice).
func saleAndBuyers(ctx context.Context, books Books, itemID int64) (Sale, map[int64]string, error) {
	if sb, ok := books.(SnapshotBooks); ok {
		return sb.SaleAndBuyers(ctx, itemID)
	}
	buyers, err := books.Buyers(ctx, itemID)
	if err != nil {
		return Sale{}, nil, err
	}
	sale, err := books.Sale(ctx, itemID)
	return sale, buyers, err
}
