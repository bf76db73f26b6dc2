package jobs

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/internal/testenv"
	"seckill/stock"
)

// BenchmarkConsumerDrain measures how many orders per second one consumer writes into PostgreSQL: b.N
// orders are queued in the item's stream first, then the clock runs while the consumer drains them.
func BenchmarkConsumerDrain(b *testing.B) {
	db, rdb := testenv.Postgres(b), testenv.Redis(b)
	ledger := testenv.Ledger(rdb, time.Now)
	_, item := testenv.Sale(b, db, int64(b.N), time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	ctx := context.Background()
	if _, err := ledger.Preheat(ctx, DBBooks{DB: db}, item.ID); err != nil {
		b.Fatal(err)
	}
	k := stock.KeysOf(item.ID)
	for i := 0; i < b.N; i += 1000 {
		_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for j := i; j < min(i+1000, b.N); j++ {
				m := stock.OrderMessage{OrderNo: fmt.Sprintf("SKB%d", j), UserID: int64(1_000_000 + j), PriceCents: 990,
					ActivityID: item.ActivityID, At: time.Now()}
				p.XAdd(ctx, &redis.XAddArgs{Stream: k.Stream, Values: m.Fields()})
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	c := &OrderConsumer{DB: db, Ledger: ledger, Flags: stock.NewFlags(ledger, rdb, quiet), Name: "bench", Log: quiet,
		PayTimeout: 15 * time.Minute, Discover: 10 * time.Millisecond}
	b.ResetTimer()
	start := time.Now()
	stop := run(c)
	for {
		n, err := ledger.Backlog(ctx, item.ID)
		if err == nil && n == 0 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	stop()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "orders/s")
	var placed int64
	db.Raw("SELECT count(*) FROM orders WHERE item_id = ?", item.ID).Scan(&placed)
	if placed != int64(b.N) {
		b.Fatalf("%d orders placed, want %d", placed, b.N)
	}
}
