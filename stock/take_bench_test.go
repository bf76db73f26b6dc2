package stock_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/auth"
	"seckill/internal/testenv"
	"seckill/jobs"
	"seckill/stock"
)

// BenchmarkTakeScript runs the take script in batches of 13 buyers (the batch group commit gathered under
// 64 connections in BenchmarkBuyWhileStockLasts), one batch at a time, every buyer with a good path and
// stock for all: what a buy costs Redis itself, apart from the app. It reports Redis's CPU per buy (all of
// it, from INFO cpu) and the script's own time per buy (INFO commandstats). Both are noisy on a shared
// machine; scripts/take-cost.sh runs it against a Redis under callgrind (CALLGRIND_PID names it), whose
// instruction count for the timed part is the same from run to run.
func BenchmarkTakeScript(b *testing.B) {
	const batch = 13
	n := b.N * batch
	r := newShardRig(b, int64(n), 1)
	ctx := context.Background()
	buyers := make([]stock.BatchBuyer, n)
	for i := range buyers {
		u := int64(i + 1)
		tok, _ := auth.RandomToken(16)
		buyers[i] = stock.BatchBuyer{UserID: u, Path: tok, OrderNo: fmt.Sprintf("SK%019d", u)}
	}
	for i := 0; i < n; i += 200 {
		j := min(i+200, n)
		users, toks := make([]int64, 0, j-i), make([]string, 0, j-i)
		for _, by := range buyers[i:j] {
			users, toks = append(users, by.UserID), append(toks, by.Path)
		}
		if _, err := r.ledger.IssueBatch(ctx, r.item.ID, 0, users, toks); err != nil {
			b.Fatal(err)
		}
	}
	if err := r.rdb.ConfigResetStat(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	callgrind := os.Getenv("CALLGRIND_PID")
	if callgrind != "" {
		if out, err := exec.Command("callgrind_control", "--zero", callgrind).CombinedOutput(); err != nil {
			b.Fatalf("callgrind_control: %v: %s", err, out)
		}
	}
	cpu0 := testenv.RedisCPU(b, r.rdb)
	b.ResetTimer()
	for i := 0; i < n; i += batch {
		res, err := r.ledger.TakeBatch(ctx, r.item.ID, 0, buyers[i:i+batch])
		if err != nil {
			b.Fatal(err)
		}
		if res[0][0] != "queued" {
			b.Fatalf("answer %v", res[0])
		}
	}
	b.StopTimer()
	if callgrind != "" {
		if out, err := exec.Command("callgrind_control", "--dump=take", callgrind).CombinedOutput(); err != nil {
			b.Fatalf("callgrind_control: %v: %s", err, out)
		}
	}
	cpu := testenv.RedisCPU(b, r.rdb) - cpu0
	b.ReportMetric(float64(cpu.Microseconds())/float64(n), "redis-cpu-µs/buy")
	b.ReportMetric(float64(n)/cpu.Seconds(), "buys/redis-core-s")
	stats, err := r.rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(stats, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_evalsha:"); ok {
			for _, f := range strings.Split(rest, ",") {
				if v, ok := strings.CutPrefix(f, "usec="); ok {
					us, _ := strconv.ParseFloat(v, 64)
					b.ReportMetric(us/float64(n), "script-µs/buy")
				}
			}
		}
	}
}

// BenchmarkTakeWithWait is the cost of waiting for a replica (issue 36): the same rush of buyers (64 at a
// time, group commit as GROUP_COMMIT says) through Ledger.TakeConfirmed on a real master with a real
// replica on this machine, without WAIT and with WAIT 1 after each batch. It reports buys a second, the p99
// of a take, buyers per batch and WAITs per batch. Run it alone, with a fixed count, e.g.
// go test -run '^$' -bench TakeWithWait -benchtime 3000x ./stock
func BenchmarkTakeWithWait(b *testing.B) {
	p := testenv.StartReplicaPair(b)
	ctx := context.Background()
	for _, replicas := range []int{0, 1} {
		b.Run(fmt.Sprintf("replicas=%d", replicas), func(b *testing.B) {
			// Each run's schema numbers its item 1 again: the test's own master starts empty.
			if err := p.Master.FlushAll(ctx).Err(); err != nil {
				b.Fatal(err)
			}
			r := newPairRig(b, p, int64(b.N), 100*time.Millisecond)
			r.ledger.WaitReplicas(replicas, 100*time.Millisecond)
			users, paths := make([]int64, b.N), make([]string, b.N)
			for i := range users {
				users[i] = int64(i + 1)
				paths[i], _ = auth.RandomToken(16)
			}
			for i := 0; i < b.N; i += 200 {
				j := min(i+200, b.N)
				if _, err := r.ledger.IssueBatch(ctx, r.item.ID, 0, users[i:j], paths[i:j]); err != nil {
					b.Fatal(err)
				}
			}
			// The script is loaded on the master (a NOSCRIPT's EVAL would add a WAIT of its own).
			if err := stock.LoadTake(ctx, r.rdb); err != nil {
				b.Fatal(err)
			}
			if err := r.rdb.ConfigResetStat(ctx).Err(); err != nil {
				b.Fatal(err)
			}
			calls0, takes0 := r.ledger.BatchStats()
			lat := make([]time.Duration, b.N)
			var next atomic.Int64
			b.SetParallelism(64 / max(runtime.GOMAXPROCS(0), 1))
			start := time.Now()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := next.Add(1) - 1
					t0 := time.Now()
					_, confirmed, err := r.ledger.TakeConfirmed(ctx, r.item.ID, users[i], paths[i], fmt.Sprintf("SK%019d", i))
					lat[i] = time.Since(t0)
					if err != nil || !confirmed {
						b.Errorf("take %d: confirmed %v, %v", i, confirmed, err)
					}
				}
			})
			b.StopTimer()
			elapsed := time.Since(start)
			calls, takes := r.ledger.BatchStats()
			slices.Sort(lat)
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "buys/s")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(takes-takes0)/float64(calls-calls0), "buyers/batch")
			b.ReportMetric(float64(waitCalls(b, r.rdb))/float64(calls-calls0), "waits/batch")
		})
	}
}

// BenchmarkTakeWithWaitOnACluster is BenchmarkTakeWithWait on a Redis Cluster of three masters, each with
// a replica (testenv.StartCluster, cluster-node-timeout as documented), for an item split over three
// stock shards (one a master, as the slots fall): each batch's pipeline goes to its slot's master and
// WAITs for that master's replica. Run it alone, e.g.
// go test -run '^$' -bench TakeWithWaitOnACluster -benchtime 3000x -count 3 ./stock
func BenchmarkTakeWithWaitOnACluster(b *testing.B) {
	cl := testenv.StartCluster(b, 3, 1)
	cc := cl.Client(b)
	db := testenv.Postgres(b)
	ctx := context.Background()
	for _, replicas := range []int{0, 1} {
		b.Run(fmt.Sprintf("replicas=%d", replicas), func(b *testing.B) {
			if err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return c.FlushAll(ctx).Err() }); err != nil {
				b.Fatal(err)
			}
			_, item := testenv.Sale(b, db, int64(b.N), time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
			if err := db.Model(&item).Update("stock_shards", 3).Error; err != nil {
				b.Fatal(err)
			}
			ledger := testenv.Ledger(cc, time.Now)
			ledger.WaitReplicas(replicas, 100*time.Millisecond)
			if left, err := ledger.Preheat(ctx, jobs.DBBooks{DB: db}, item.ID); err != nil || left != int64(b.N) {
				b.Fatalf("preheat: %d left, %v", left, err)
			}
			users, paths := make([]int64, b.N), make([]string, b.N)
			for i := range users {
				users[i] = int64(i + 1)
				paths[i], _ = auth.RandomToken(16)
				if err := ledger.IssuePath(ctx, item.ID, users[i], paths[i]); err != nil {
					b.Fatal(err)
				}
			}
			// The scripts loaded on every master (the first take on each goes as EVAL).
			for h := range 3 {
				c, err := cc.MasterForKey(ctx, stock.ShardKeys(item.ID, h).Sale)
				if err != nil {
					b.Fatal(err)
				}
				if err := stock.LoadTake(ctx, c); err != nil {
					b.Fatal(err)
				}
			}
			calls0, takes0 := ledger.BatchStats()
			waits0, _ := ledger.WaitStats()
			lat := make([]time.Duration, b.N)
			var next, sold atomic.Int64
			b.SetParallelism(64 / max(runtime.GOMAXPROCS(0), 1))
			start := time.Now()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := next.Add(1) - 1
					t0 := time.Now()
					soldOut, confirmed, err := ledger.TakeConfirmed(ctx, item.ID, users[i], paths[i], fmt.Sprintf("SK%019d", i))
					lat[i] = time.Since(t0)
					if err != nil || soldOut {
						b.Errorf("take %d: sold out %v, %v", i, soldOut, err)
					} else if replicas > 0 && !confirmed {
						b.Errorf("take %d: unconfirmed, the replicas up", i)
					} else {
						sold.Add(1)
					}
				}
			})
			b.StopTimer()
			elapsed := time.Since(start)
			calls, takes := ledger.BatchStats()
			waits, _ := ledger.WaitStats()
			slices.Sort(lat)
			b.ReportMetric(float64(sold.Load())/elapsed.Seconds(), "buys/s")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(takes-takes0)/float64(calls-calls0), "buyers/batch")
			b.ReportMetric(float64(waits-waits0)/float64(calls-calls0), "waits/batch")
		})
	}
}
