package stock_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"seckill/auth"
	"seckill/internal/testenv"
	"seckill/jobs"
	"seckill/stock"
)

// A Redis Cluster of three masters, each with a replica, and buyers buying without pause while the
// master of the item's slot is killed (SIGKILL): every buyer told queued (a 202 with the replica's
// acknowledgement) has the order in the stream of the promoted replica and, once the order consumer
// drained it, in PostgreSQL; no unit is sold beyond stock,
// and the buys after the promotion succeed: taken, and unconfirmed (WAITed for on the new master, which
// has no replica until the dead one comes back as its replica).
func TestWaitedBuysThroughAClusterFailover(t *testing.T) {
	ctx := context.Background()
	db := testenv.Postgres(t)
	const stockTotal = 1_000_000
	_, item := testenv.Sale(t, db, stockTotal, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	buyers := testenv.Users(t, db, "failover", 30_000) // more than the buys of a run: the consumer writes their orders
	cl := testenv.StartCluster(t, 3, 1)
	cc := cl.Client(t)
	ledger := testenv.Ledger(cc, time.Now)
	ledger.WaitReplicas(1, 100*time.Millisecond)
	if left, err := ledger.Preheat(ctx, jobs.DBBooks{DB: db}, item.ID); err != nil || left != stockTotal {
		t.Fatalf("preheat: %d left, %v", left, err)
	}
	keys := stock.KeysOf(item.ID)
	// The master that serves the item's slot: the one that does not answer MOVED.
	victim := -1
	for i, n := range cl.Masters {
		if err := n.Client.Exists(ctx, keys.Sale).Err(); err == nil {
			victim = i
		}
	}
	if victim < 0 {
		t.Fatal("no master of the cluster serves the item's slot")
	}

	type answer struct {
		user               int64
		started, answered  time.Time
		confirmed, soldOut bool
		err                error
	}
	var (
		mu      sync.Mutex
		answers []answer
		next    atomic.Int64
		after   atomic.Int64 // buys taken that started after the promotion
		stop    = make(chan struct{})
		wg      sync.WaitGroup
	)
	var promotedAt atomic.Int64
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				i := next.Add(1) - 1
				if i >= int64(len(buyers)) {
					return
				}
				a := answer{user: buyers[i].ID, started: time.Now()}
				tok, _ := auth.RandomToken(16)
				if a.err = ledger.IssuePath(ctx, item.ID, a.user, tok); a.err == nil {
					a.soldOut, a.confirmed, a.err = ledger.TakeConfirmed(ctx, item.ID, a.user, tok, "SKF"+strconv.FormatInt(a.user, 10))
				}
				a.answered = time.Now()
				if a.err != nil {
					time.Sleep(20 * time.Millisecond) // a buyer whose buy failed tries again a little later
				}
				if p := promotedAt.Load(); p != 0 && a.err == nil && a.started.UnixNano() > p {
					after.Add(1)
				}
				mu.Lock()
				answers = append(answers, a)
				mu.Unlock()
			}
		}()
	}
	time.Sleep(500 * time.Millisecond) // buys before the kill
	killed := time.Now()
	promoted := cl.KillMaster(t, victim)
	t.Logf("the replica promoted %v after the kill", cl.WaitPromoted(t, promoted, 30*time.Second, killed))
	promotedAt.Store(time.Now().UnixNano())
	testenv.EventuallySaw(t, 20*time.Second, "buys taken on the promoted master", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		saw := ""
		if n := len(answers); n > 0 {
			saw = fmt.Sprintf("the last buy: user %d, confirmed %v, %v", answers[n-1].user, answers[n-1].confirmed, answers[n-1].err)
		}
		return after.Load() >= 50, saw
	})
	close(stop)
	wg.Wait()

	var queued, unconfirmed, failed int
	var first time.Time
	for _, a := range answers {
		switch {
		case a.err != nil:
			failed++
		case a.soldOut:
			t.Errorf("buyer %d told sold out, with %d units", a.user, stockTotal)
		case a.confirmed:
			queued++
		default:
			unconfirmed++
		}
		if a.err == nil && a.started.After(killed) && (first.IsZero() || a.answered.Before(first)) {
			first = a.answered
		}
	}
	t.Logf("%d buys: %d queued, %d unconfirmed, %d failed; the first taken after the kill %v after it",
		len(answers), queued, unconfirmed, failed, first.Sub(killed))

	// The books on the promoted master: each queued buyer's order message, and no unit beyond stock.
	msgs, err := promoted.Client.XRange(ctx, keys.Stream, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	inStream := map[string]int{}
	for _, m := range msgs {
		inStream[m.Values["user_id"].(string)]++
	}
	for _, a := range answers {
		if a.err == nil && a.confirmed && inStream[strconv.FormatInt(a.user, 10)] != 1 {
			t.Errorf("buyer %d was told queued and has %d order messages on the promoted master", a.user, inStream[strconv.FormatInt(a.user, 10)])
		}
	}
	left, err := promoted.Client.HGet(ctx, keys.Sale, "left").Int64()
	if err != nil {
		t.Fatal(err)
	}
	if sold := stockTotal - left; sold != int64(len(msgs)) || left < 0 {
		t.Errorf("the promoted master sold %d units (%d left) for %d order messages", sold, left, len(msgs))
	}

	// The order consumer drains the promoted stream into PostgreSQL: every queued buyer has an order.
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	consumer := &jobs.OrderConsumer{DB: db, Ledger: ledger, Flags: stock.NewFlags(ledger, cc, quiet), Name: "failover", Log: quiet,
		PayTimeout: 15 * time.Minute, Block: 50 * time.Millisecond, Discover: 20 * time.Millisecond}
	go func() { defer close(done); _ = consumer.Run(cctx) }()
	testenv.EventuallySaw(t, 40*time.Second, "the queue drained", func() (bool, string) {
		n, err := ledger.Backlog(ctx, item.ID)
		return err == nil && n == 0, fmt.Sprintf("%d left, %v", n, err)
	})
	cancel()
	<-done
	var ordered []int64
	if err := db.Raw("SELECT user_id FROM orders WHERE item_id = ?", item.ID).Scan(&ordered).Error; err != nil {
		t.Fatal(err)
	}
	hasOrder := map[int64]int{}
	for _, u := range ordered {
		hasOrder[u]++
	}
	missing := 0
	for _, a := range answers {
		if a.err == nil && a.confirmed && hasOrder[a.user] != 1 {
			missing++
		}
	}
	t.Logf("%d orders written; %d queued buyers without exactly one", len(ordered), missing)
	if missing > 0 {
		t.Errorf("%d buyers told queued have no order (or more than one) after the drain", missing)
	}
	if int64(len(ordered)) > stockTotal-left {
		t.Errorf("%d orders for %d units sold", len(ordered), stockTotal-left)
	}
}
