package stock_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"seckill/internal/testenv"
	"seckill/jobs"
	"seckill/stock"
)

// newPairRoom is a queue sale on the pair's master whose ledger waits for replicas replicas within
// 100 ms; its room opened a minute ago and its sale starts in a minute.
func newPairRoom(t testing.TB, p *testenv.ReplicaPair, replicas int) *roomRig {
	t.Helper()
	now := time.Now()
	r := &roomRig{shardRig: &shardRig{db: testenv.Postgres(t), rdb: p.Master, clock: &clock{t: now}}}
	r.ledger = testenv.Ledger(r.rdb, r.clock.now)
	r.ledger.WaitReplicas(replicas, 100*time.Millisecond)
	r.line = stock.NewLine(r.ledger)
	_, r.item = testenv.Sale(t, r.db, 10, now.Add(time.Minute), now.Add(time.Hour))
	if _, err := r.ledger.Preheat(context.Background(), jobs.DBBooks{DB: r.db}, r.item.ID); err != nil {
		t.Fatal(err)
	}
	r.window = stock.Window{Opens: now.Add(-time.Minute), Starts: now.Add(time.Minute), Ends: now.Add(time.Hour)}
	return r
}

// A join of the waiting room is a promise too: with the replica up it is confirmed; with the replica
// frozen it is not (and not an error: the place is on the master, its ticket kept); thawed, the next
// join is confirmed again, and the shopper joined while it was frozen still holds their ticket.
func TestJoinIsConfirmedOnlyOnceAReplicaHasIt(t *testing.T) {
	p := testenv.StartReplicaPair(t)
	ctx := context.Background()
	r := newPairRoom(t, p, 1)
	t.Run("replica up", func(t *testing.T) {
		if j := r.join(t, 1); !j.Confirmed || j.Ticket == "" {
			t.Errorf("join with the replica up: %+v, want confirmed with a ticket", j)
		}
	})
	var frozen stock.Joined
	t.Run("replica frozen", func(t *testing.T) {
		p.Freeze(t)
		defer p.Thaw(t)
		frozen = r.join(t, 2)
		if frozen.Confirmed || frozen.Ticket == "" {
			t.Errorf("join with the replica frozen: %+v, want unconfirmed with a ticket", frozen)
		}
		if _, pl := r.place(t, 2); pl.Ticket != frozen.Ticket {
			t.Errorf("the unconfirmed join's ticket on the master is %q, want %q", pl.Ticket, frozen.Ticket)
		}
	})
	testenv.Eventually(t, 10*time.Second, "the replica caught up", func() bool { return testenv.ReplicaAcknowledges(ctx, p.Master) })
	t.Run("replica thawed", func(t *testing.T) {
		if j := r.join(t, 3); !j.Confirmed {
			t.Errorf("join with the replica back: %+v, want confirmed", j)
		}
		// Joining again keeps the place, and is now acknowledged.
		if j := r.join(t, 2); !j.Confirmed || j.Ticket != frozen.Ticket {
			t.Errorf("user 2 joins again: %+v, want confirmed with the ticket %q", j, frozen.Ticket)
		}
	})
}

// BenchmarkJoinWithWait measures what WAIT costs the waiting room's joins: a crowd joining a room on a
// master with a replica on this machine, without WAIT and with WAIT 1 after each join (joins are not
// batched: one WAIT a join). It reports joins a second and the p99 of a join. Run it alone, e.g.
// go test -run '^$' -bench JoinWithWait -benchtime 3000x ./stock
func BenchmarkJoinWithWait(b *testing.B) {
	p := testenv.StartReplicaPair(b)
	ctx := context.Background()
	for _, replicas := range []int{0, 1} {
		b.Run(fmt.Sprintf("replicas=%d", replicas), func(b *testing.B) {
			if err := p.Master.FlushAll(ctx).Err(); err != nil {
				b.Fatal(err)
			}
			r := newPairRoom(b, p, replicas)
			if _, err := r.line.Join(ctx, r.item.ID, 1, r.window); err != nil { // opens the room, loads the script
				b.Fatal(err)
			}
			lat := make([]time.Duration, b.N)
			var next, unconfirmed atomic.Int64
			b.SetParallelism(64 / max(runtime.GOMAXPROCS(0), 1))
			start := time.Now()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := next.Add(1) - 1
					t0 := time.Now()
					j, err := r.line.Join(ctx, r.item.ID, 2+i, r.window)
					lat[i] = time.Since(t0)
					if err != nil {
						b.Errorf("join %d: %v", i, err)
					}
					if !j.Confirmed {
						unconfirmed.Add(1)
					}
				}
			})
			b.StopTimer()
			elapsed := time.Since(start)
			slices.Sort(lat)
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "joins/s")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(unconfirmed.Load()), "unconfirmed")
		})
	}
}
