package jobs

import (
	"context"
	"fmt"
	"testing"
	"time"

	"seckill/stock"
)

func TestReconcilerFindsBooksThatDoNotAddUp(t *testing.T) {
	r := newRig(t, 10, 4)
	ctx := context.Background()
	for _, u := range r.users {
		if err := r.buy(t, u); err != nil {
			t.Fatal(err)
		}
	}
	stop := run(r.consumer(r.db, "c"))
	r.waitDrained(t, 10*time.Second)
	stop()
	rec := r.reconciler()
	rec.rounds(t, 2)
	if m := rec.Mismatches(); len(m) != 0 {
		t.Fatalf("books that add up were reported: %+v", m)
	}
	r.rdb.HIncrBy(ctx, stock.KeysOf(r.item.ID).Sale, "left", -1) // a unit goes missing in Redis
	_ = rec.Runs.Once(ctx, ReconcileJob, false, 0, rec.round)
	if m := rec.Mismatches(); len(m) != 0 {
		t.Fatalf("a difference seen once was reported (it may be a moment between two writes): %+v", m)
	}
	_ = rec.Runs.Once(ctx, ReconcileJob, false, 0, rec.round)
	m := rec.Mismatches()
	if len(m) != 1 || m[0].ItemID != r.item.ID || m[0].Difference != 1 || m[0].RedisLeft != 5 || m[0].LiveOrders != 4 {
		t.Fatalf("mismatches %+v, want item %d one unit short", m, r.item.ID)
	}
	runs, err := rec.Runs.All(ctx)
	if err != nil || len(runs) != 1 || runs[0].Job != "reconcile" || runs[0].Counts["mismatched"] != 1 {
		t.Errorf("the job's last run: %+v, %v", runs, err)
	}
}

// A unit lent between two shards and not yet received is in the books: in transit, not missing.
func TestReconcilerCountsUnitsInTransit(t *testing.T) {
	r := newShardedRig(t, 4, 0, 2)
	ctx := context.Background()
	k := stock.ShardKeys(r.item.ID, 1)
	// A buy of shard 0 borrowed from shard 1 and vanished before its take.
	r.rdb.HIncrBy(ctx, k.Sale, "left", -1)
	r.rdb.HSet(ctx, k.Loans, "SKgone:0", fmt.Sprintf("0:%d", time.Now().UnixMilli()))
	rec := r.reconciler()
	rec.rounds(t, 2)
	if m := rec.Mismatches(); len(m) != 0 {
		t.Fatalf("a unit in transit was reported missing: %+v", m)
	}
	r.rdb.HDel(ctx, k.Loans, "SKgone:0") // the loan's record is lost: now the unit is missing
	rec.rounds(t, 2)
	if m := rec.Mismatches(); len(m) != 1 || m[0].Difference != 1 {
		t.Fatalf("mismatches %+v, want one unit missing", m)
	}
}
