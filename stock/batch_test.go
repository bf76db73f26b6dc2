package stock_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/auth"
	"seckill/errs"
	"seckill/internal/testenv"
	"seckill/jobs"
	"seckill/stock"
)

// batchScene is one item's shard in a state with every kind of buyer the take script tells apart, made
// the same way on as many items as asked: what a batch answers can be compared with one take at a time.
type batchScene struct {
	r      *shardRig
	buyers []stock.BatchBuyer
}

// newBatchScene makes a one-shard item of 4 units (or a 2-shard one, split) and its buyers, in order:
// a good path; a wrong token; no path at all; an expired path; a buyer who bought before; the same
// buyer twice with one path; a loan for a shard that has no path for its buyer; then good paths, more
// than the stock left; and one who bought before, once nothing is left.
func newBatchScene(t *testing.T, shards int) *batchScene {
	t.Helper()
	r := newShardRig(t, int64(4*shards), shards)
	ctx := context.Background()
	sc := &batchScene{r: r}
	users := func(i int) int64 { return int64(shards * (100 + i)) } // all on shard 0
	path := func(u int64) string {
		tok, _ := auth.RandomToken(16)
		if err := r.ledger.IssuePath(ctx, r.item.ID, u, tok); err != nil {
			t.Fatalf("path for %d: %v", u, err)
		}
		return tok
	}
	k := stock.ShardKeys(r.item.ID, 0)
	add := func(u int64, tok, loan string) {
		sc.buyers = append(sc.buyers, stock.BatchBuyer{UserID: u, Path: tok, OrderNo: fmt.Sprintf("SK%d-%d", u, len(sc.buyers)), Loan: loan})
	}
	// Two bought before the batch (one asks again while stock is left, the other once it is gone).
	early, late := users(0), users(12)
	for _, u := range []int64{early, late} {
		if _, err := r.ledger.Take(ctx, r.item.ID, u, path(u), fmt.Sprint("SKearly", u)); err != nil {
			t.Fatal(err)
		}
	}
	add(users(1), path(users(1)), "")
	path(users(2))
	add(users(2), "not-the-token", "")
	add(users(3), "never-issued", "")
	expired := users(4)
	r.rdb.HSet(ctx, k.Paths, expired, "tok:"+strconv.FormatInt(r.clock.now().Add(-time.Second).UnixMilli(), 10))
	add(expired, "tok", "")
	// A path as IssuePath would write it, which it refuses to a buyer who bought: a second tab's.
	r.rdb.HSet(ctx, k.Paths, early, "again:"+strconv.FormatInt(r.clock.now().Add(time.Minute).UnixMilli(), 10))
	add(early, "again", "")
	// Expiries of another length than now's are compared as numbers: one far off (year 5138), one long
	// past (2001).
	far, past := users(13), users(14)
	r.rdb.HSet(ctx, k.Paths, far, "far:99999999999999", past, "past:999999999999")
	add(far, "far", "")
	add(past, "past", "")
	twice, tok := users(5), path(users(5))
	add(twice, tok, "")
	add(twice, tok, "")
	add(users(6), "never-issued", "a-loan") // refused, and its loan lands all the same
	add(users(6), "never-issued", "a-loan") // the same loan again: lands once
	for i := 7; i < 12; i++ {
		add(users(i), path(users(i)), "")
	}
	r.rdb.HSet(ctx, k.Paths, late, "again:"+strconv.FormatInt(r.clock.now().Add(time.Minute).UnixMilli(), 10))
	add(late, "again", "") // bought before, asks when nothing is left: already bought, not sold out
	return sc
}

// state is what the shard holds after the takes, in the item's own terms: left, the buyers, the order
// messages (user and order number, in order), the loans received, and which buyers' paths remain.
func (sc *batchScene) state(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	k := stock.ShardKeys(sc.r.item.ID, 0)
	left, _ := sc.r.rdb.HGet(ctx, k.Sale, "left").Result()
	buyers, _ := sc.r.rdb.SMembers(ctx, k.Buyers).Result()
	sort.Strings(buyers)
	received, _ := sc.r.rdb.SMembers(ctx, k.Received).Result()
	msgs, _ := sc.r.rdb.XRange(ctx, k.Stream, "-", "+").Result()
	var queued []string
	for _, m := range msgs {
		queued = append(queued, fmt.Sprint(m.Values["user_id"], "/", m.Values["order_no"]))
	}
	var paths []int64
	for _, b := range sc.buyers {
		// A used path is gone, or holds the answer it got ('!…'): either way it is not left.
		if p, err := sc.r.rdb.HGet(ctx, k.Paths, strconv.FormatInt(b.UserID, 10)).Result(); err == nil && !strings.HasPrefix(p, "!") {
			paths = append(paths, b.UserID)
		}
	}
	return fmt.Sprintf("left %s, buyers %v, received %v, queued %v, paths left %v", left, buyers, received, queued, paths)
}

// A batch of buyers with every kind of refusal mixed in answers each of them as one take at a time
// does, in order, and leaves the shard as they do: split or not.
func TestBatchAnswersAsOneTakeAtATime(t *testing.T) {
	testenv.Long(t)
	for _, shards := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d shards", shards), func(t *testing.T) {
			ctx := context.Background()
			one, all := newBatchScene(t, shards), newBatchScene(t, shards)
			// One at a time, by the take as it was before batches (testdata/take_one.lua).
			src, err := os.ReadFile("testdata/take_one.lua")
			if err != nil {
				t.Fatal(err)
			}
			takeOne := stock.Script(string(src))
			k := stock.ShardKeys(one.r.item.ID, 0)
			var want, got [][2]string
			for _, b := range one.buyers {
				a, err := takeOne.Run(ctx, one.r.rdb, []string{k.Sale, k.Buyers, k.Paths, k.Stream, k.Received},
					b.UserID, b.Path, one.r.clock.now().UnixMilli(), b.OrderNo, b.Loan).StringSlice()
				if err != nil {
					t.Fatal(err)
				}
				if len(a) == 1 {
					a = append(a, "")
				}
				want = append(want, [2]string{a[0], a[1]})
			}
			got, err = all.r.ledger.TakeBatch(ctx, all.r.item.ID, 0, all.buyers)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("the batch answered\n%v\none at a time\n%v", got, want)
			}
			// Every kind of answer is in the scene, so that the comparison covers each rule.
			kinds := map[string]bool{}
			for _, a := range want {
				kinds[a[0]] = true
			}
			wantKinds := []string{"queued", "invalid_path", "already_bought", "sold_out"}
			if shards > 1 {
				wantKinds[3] = "empty"
			}
			for _, k := range wantKinds {
				if !kinds[k] {
					t.Errorf("no buyer was answered %s: %v", k, want)
				}
			}
			// The order numbers differ between the scenes only by the item: compare the shards' states.
			if g, w := all.state(t), one.state(t); g != w {
				t.Errorf("after the batch: %s\none at a time: %s", g, w)
			}
		})
	}
}

// A shard's paths hash lives a minute past the validity of the last path written into it: every path
// lengthens its life (a hash left without an expiry gets one), none shortens it.
func TestPathsHashLivesPastTheLastPath(t *testing.T) {
	r := newShardRig(t, 10, 1)
	ctx := context.Background()
	key := stock.ShardKeys(r.item.ID, 0).Paths
	issue := func(u int64) {
		t.Helper()
		tok, _ := auth.RandomToken(16)
		if err := r.ledger.IssuePath(ctx, r.item.ID, u, tok); err != nil {
			t.Fatal(err)
		}
	}
	lives := func() time.Duration { return r.rdb.PTTL(ctx, key).Val() }
	issue(1)
	if ttl := lives(); ttl <= stock.PathTTL || ttl > stock.PathTTL+time.Minute {
		t.Fatalf("after a path the hash lives %v, want the path's validity and a minute more", ttl)
	}
	r.rdb.Expire(ctx, key, 10*time.Minute)
	issue(2)
	if ttl := lives(); ttl < 9*time.Minute {
		t.Errorf("a path shortened the hash's life to %v", ttl)
	}
	r.rdb.Persist(ctx, key)
	issue(3)
	if ttl := lives(); ttl <= stock.PathTTL || ttl > stock.PathTTL+time.Minute {
		t.Errorf("a hash without an expiry lives %v after a path, want the path's validity and a minute more", ttl)
	}
}

// A batch that Redis refuses answers every buyer in it with an error and takes nothing: a key of the
// wrong type, found before anything is written, and a connection that is gone.
func TestRefusedBatchTakesNothing(t *testing.T) {
	ctx := context.Background()
	sc := newBatchScene(t, 1)
	before := sc.state(t)
	k := stock.ShardKeys(sc.r.item.ID, 0)
	// The order stream is not a stream: the batch would write the other keys first if it wrote as it
	// decided.
	sc.r.rdb.Del(ctx, k.Stream)
	sc.r.rdb.Set(ctx, k.Stream, "not a stream", 0)
	if _, err := sc.r.ledger.TakeBatch(ctx, sc.r.item.ID, 0, sc.buyers); err == nil {
		t.Fatal("a batch with a broken stream key was taken")
	}
	sc.r.rdb.Del(ctx, k.Stream)
	after := sc.state(t)
	// The stream held the early buyer's message: gone with the key, so compare all but that.
	if trim(after) != trim(before) {
		t.Errorf("a refused batch changed the shard:\nbefore %s\nafter  %s", before, after)
	}

	// Through the ledger, as buys: every buyer of a batch on a closed connection gets an error.
	gone := testenv.Redis(t)
	ledger := testenv.Ledger(gone, sc.r.clock.now)
	ledger.SetShards(sc.r.item.ID, 1)
	gone.Close()
	var wg sync.WaitGroup
	for _, b := range sc.buyers {
		wg.Go(func() {
			if _, err := ledger.Take(ctx, sc.r.item.ID, b.UserID, b.Path, b.OrderNo); err == nil || errs.Code(err) != errs.Internal {
				t.Errorf("buyer %d on a closed connection: %v, want a failure", b.UserID, err)
			}
		})
	}
	wg.Wait()
	if g := sc.state(t); trim(g) != trim(before) {
		t.Errorf("buys on a closed connection changed the shard: %s", g)
	}
}

func trim(state string) string {
	i, j := indexOf(state, ", queued "), indexOf(state, ", paths left")
	return state[:i] + state[j:]
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

// A crowd of 5,000 buyers (some from two tabs) for 100 units, with group commit on and with it off, on
// one shard: the same books. Each way, every unit is queued once, to one buyer each, and nothing is left.
func TestCrowdBooksWithAndWithoutGroupCommit(t *testing.T) {
	testenv.Long(t)
	const stockTotal, buyers = 100, 5000
	books := map[bool]string{}
	for _, on := range []bool{true, false} {
		r := newShardRig(t, stockTotal, 1)
		r.ledger.GroupCommit(on)
		ctx := context.Background()
		paths := make([]string, buyers)
		var issue sync.WaitGroup
		for u := range paths { // at once: paths go in batches too
			paths[u], _ = auth.RandomToken(16)
			issue.Go(func() {
				if err := r.ledger.IssuePath(ctx, r.item.ID, int64(10_000+u), paths[u]); err != nil {
					t.Error(err)
				}
			})
		}
		issue.Wait()
		var mu sync.Mutex
		answers := map[string]int{}
		var wg sync.WaitGroup
		for u := range buyers {
			tabs := 1 + u%10/9 // one buyer in ten sends the same path twice
			for tab := range tabs {
				wg.Go(func() {
					_, err := r.ledger.Take(ctx, r.item.ID, int64(10_000+u), paths[u], fmt.Sprintf("SK%d-%d", u, tab))
					code := "queued"
					if err != nil {
						code = errs.Code(err)
					}
					mu.Lock()
					answers[code]++
					mu.Unlock()
				})
			}
		}
		wg.Wait()
		q := r.queued(t, 1)
		twice := 0
		for _, orders := range q {
			if len(orders) > 1 {
				twice++
			}
		}
		left := r.shardLeft(t, 1)[0]
		books[on] = fmt.Sprintf("%d queued answers, %d buyers queued, %d twice, %d left", answers["queued"], len(q), twice, left)
		if answers["queued"] != stockTotal || len(q) != stockTotal || twice != 0 || left != 0 {
			t.Errorf("group commit %v: %s; want %d queued, none twice, none left", on, books[on], stockTotal)
		}
		for code := range answers {
			switch code {
			case "queued", errs.SoldOut, errs.InvalidPath, errs.AlreadyBought:
			default:
				t.Errorf("group commit %v: %d answers %q", on, answers[code], code)
			}
		}
		calls, takes := r.ledger.BatchStats()
		if on && calls >= takes {
			t.Errorf("group commit on: %d script calls for %d takes: nothing went together", calls, takes)
		}
		if !on && calls != takes {
			t.Errorf("group commit off: %d script calls for %d takes", calls, takes)
		}
		if _, err := r.ledger.Preheat(ctx, jobs.DBBooks{DB: r.db}, r.item.ID); err != nil && !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
	}
	if books[true] != books[false] {
		t.Errorf("books with group commit %s; without %s", books[true], books[false])
	}
}

// Paths issued in one batch answer as one at a time does: a buyer who bought is refused, the others get
// paths they buy with; on a sold-out item, every one is refused.
func TestPathBatchAnswersAsOneAtATime(t *testing.T) {
	ctx := context.Background()
	run := func(batched bool) (answers []string, bought int) {
		r := newShardRig(t, 3, 1)
		users := []int64{501, 502, 503, 504, 505}
		if err := r.buy(users[0], "SKfirst"); err != nil {
			t.Fatal(err)
		}
		tokens := make([]string, len(users))
		for i := range tokens {
			tokens[i], _ = auth.RandomToken(16)
		}
		if batched {
			a, err := r.ledger.IssueBatch(ctx, r.item.ID, 0, users, tokens)
			if err != nil {
				t.Fatal(err)
			}
			answers = a
		} else {
			for i, u := range users {
				a, err := r.ledger.IssueBatch(ctx, r.item.ID, 0, []int64{u}, tokens[i:i+1])
				if err != nil {
					t.Fatal(err)
				}
				answers = append(answers, a[0])
			}
		}
		for i, u := range users {
			if answers[i] == "ok" {
				if _, err := r.ledger.Take(ctx, r.item.ID, u, tokens[i], fmt.Sprintf("SKp%d", i)); err == nil {
					bought++
				}
			}
		}
		// Sold out now: a batch is refused whole.
		more := []int64{601, 602}
		a, err := r.ledger.IssueBatch(ctx, r.item.ID, 0, more, []string{"x", "y"})
		if err != nil {
			t.Fatal(err)
		}
		return append(answers, a...), bought
	}
	one, oneBought := run(false)
	all, allBought := run(true)
	if fmt.Sprint(one) != fmt.Sprint(all) || oneBought != allBought {
		t.Errorf("batched %v (%d bought), one at a time %v (%d bought)", all, allBought, one, oneBought)
	}
	if want := "[already_bought ok ok ok ok sold_out sold_out]"; fmt.Sprint(all) != want || allBought != 2 {
		t.Errorf("answers %v, %d bought; want %s and 2 (3 units, one sold before)", all, allBought, want)
	}
}

// The Redis client resends a call whose reply came late: the same batch run twice answers each buyer the
// same both times and takes nothing the second time (a queued buyer is not told their path is invalid).
func TestBatchAskedAgainAnswersTheSame(t *testing.T) {
	ctx := context.Background()
	sc := newBatchScene(t, 1)
	first, err := sc.r.ledger.TakeBatch(ctx, sc.r.item.ID, 0, sc.buyers)
	if err != nil {
		t.Fatal(err)
	}
	after := sc.state(t)
	again, err := sc.r.ledger.TakeBatch(ctx, sc.r.item.ID, 0, sc.buyers)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(again) != fmt.Sprint(first) {
		t.Errorf("asked again, the batch answered\n%v\nthe first time\n%v", again, first)
	}
	if s := sc.state(t); s != after {
		t.Errorf("asked again, the batch changed the shard:\n%s\nafter the first time:\n%s", s, after)
	}
	// Another buy with a used path (another tab, another order number) is refused.
	for i, b := range sc.buyers {
		if first[i][0] != "queued" {
			continue
		}
		b.OrderNo += "-other"
		a, err := sc.r.ledger.TakeBatch(ctx, sc.r.item.ID, 0, []stock.BatchBuyer{b})
		if err != nil || a[0][0] != "invalid_path" {
			t.Errorf("another order with buyer %d's used path: %v %v, want invalid_path", b.UserID, a, err)
		}
		break
	}
}

// On a Redis that stopped answering, buyers waiting for their shard's batch leave at their own
// deadline, however many are in line: nobody waits for the batches before theirs to time out.
func TestBuyersLeaveAStalledShardAtTheirDeadline(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // accepts, reads, never answers
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(io.Discard, c) }()
		}
	}()
	rdb := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), ReadTimeout: 300 * time.Millisecond, MaxRetries: -1,
		PoolSize: 4, DisableIdentity: true, Protocol: 2})
	defer rdb.Close()
	ledger := testenv.Ledger(rdb, time.Now)
	ledger.SetShards(1, 1)
	const buyers = 1000 // eight batches' worth: waiting for each batch before theirs to time out would take 2.4 s
	var wg sync.WaitGroup
	var mu sync.Mutex
	var longest time.Duration
	for u := range buyers {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			start := time.Now()
			if _, err := ledger.Take(ctx, 1, int64(u), "tok", fmt.Sprint("SK", u)); err == nil {
				t.Errorf("buyer %d: a take on a Redis that never answers succeeded", u)
			}
			mu.Lock()
			longest = max(longest, time.Since(start))
			mu.Unlock()
		})
	}
	wg.Wait()
	// 500 ms each (300 for a batch on its way), and a little for the race detector.
	if longest > 1500*time.Millisecond {
		t.Errorf("the longest buyer waited %v with a deadline of 500 ms", longest)
	}
}
