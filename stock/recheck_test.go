package stock_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"seckill/auth"
	"seckill/internal/testenv"
	"seckill/jobs"
	"seckill/stock"
)

// committing are the database's books with an order written by the consumer just before the books are
// read: the moment the check after a failover reads the stream and the database apart.
// (Books that read the two apart get it as they read the sale the second time: after the preheat's
// refresh, the buyers and the stream.)
type committing struct {
	jobs.DBBooks
	once   *sync.Once
	sales  *atomic.Int32
	commit func()
}

func (c committing) SaleAndBuyers(ctx context.Context, itemID int64) (stock.Sale, map[int64]string, error) {
	c.once.Do(c.commit)
	return c.DBBooks.SaleAndBuyers(ctx, itemID)
}

func (c committing) Sale(ctx context.Context, itemID int64) (stock.Sale, error) {
	if c.sales.Add(1) == 2 {
		c.once.Do(c.commit)
	}
	return c.DBBooks.Sale(ctx, itemID)
}

// An order the consumer writes while the books are checked after a failover (its message still in the
// stream, its purchase and count sold in the database) is counted once: the stock the database can back
// stays on sale, not a unit fewer for ever (the second outside review saw 3 of 500 left unsold so).
func TestAnOrderWrittenDuringTheCheckIsCountedOnce(t *testing.T) {
	ctx := context.Background()
	db := testenv.Postgres(t)
	rdb, _ := testenv.RedisServer(t, "promoted")
	_, item := testenv.Sale(t, db, 5, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	ledger := testenv.Ledger(rdb, time.Now)
	if _, err := ledger.Preheat(ctx, jobs.DBBooks{DB: db}, item.ID); err != nil {
		t.Fatal(err)
	}
	users := testenv.Users(t, db, "recheck", 1)
	tok, _ := auth.RandomToken(16)
	if err := ledger.IssuePath(ctx, item.ID, users[0].ID, tok); err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.Take(ctx, item.ID, users[0].ID, tok, "SK-recheck-1"); err != nil {
		t.Fatal(err)
	}
	books := committing{DBBooks: jobs.DBBooks{DB: db}, once: &sync.Once{}, sales: &atomic.Int32{}, commit: func() {
		// What the order consumer's transaction writes of it, in short.
		if err := db.Transaction(func(tx *gorm.DB) error {
			if err := tx.Exec("INSERT INTO purchases (user_id, item_id, order_no, created_at) VALUES (?, ?, ?, now())",
				users[0].ID, item.ID, "SK-recheck-1").Error; err != nil {
				return err
			}
			return tx.Exec("UPDATE items SET stock_sold = stock_sold + 1 WHERE id = ?", item.ID).Error
		}); err != nil {
			t.Fatal(err)
		}
	}}
	if err := ledger.Recheck(ctx, books, item.ID); err != nil {
		t.Fatal(err)
	}
	var sold int
	if err := db.Raw("SELECT stock_sold FROM items WHERE id = ?", item.ID).Scan(&sold).Error; err != nil || sold != 1 {
		t.Fatalf("the order was not written during the check (%d sold, %v): the test proves nothing", sold, err)
	}
	if left, _, err := ledger.Left(ctx, item.ID); err != nil || left != 4 {
		t.Errorf("after the check, %d left (%v); want 4: 5 in stock, 1 sold, counted once", left, err)
	}
}
