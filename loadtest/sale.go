package loadtest

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Sale is a sale the tool set up: one activity with one item.
type Sale struct {
	ActivityID, ItemID int64
	StartsAt           time.Time
	Stock              int64
}

// SetUpSale creates an activity with one item as the merchant, its stock split over shards (0 or 1: not
// split), submits it and approves it as the admin, starting in `in` (approval preheats it at once). It
// sells first come unless mode says "queue" (a waiting room, open from the approval).
func (c *Client) SetUpSale(ctx context.Context, merchant, admin *User, name string, stock int64, shards int, in time.Duration, mode ...string) (*Sale, error) {
	saleMode := "first_come"
	if len(mode) > 0 {
		saleMode = mode[0]
	}
	return c.SetUpSaleFor(ctx, merchant, admin, name, stock, shards, in, 2*time.Hour, saleMode)
}

// SetUpSaleFor is SetUpSale of a sale that lasts as long as asked.
func (c *Client) SetUpSaleFor(ctx context.Context, merchant, admin *User, name string, stock int64, shards int, in, lasts time.Duration, saleMode string) (*Sale, error) {
	// The scenarios measure the line and the buying path: who may take part is the scalper scenario's.
	return c.SetUpSaleRules(ctx, merchant, admin, name, stock, shards, in, lasts, saleMode, Rules{})
}

// Rules are a sale's rules of who may take part, as the contract's activity spells them.
type Rules struct {
	OnePerAddress          bool `json:"one_per_address"`
	AccountsBeforeApproval bool `json:"accounts_before_approval"`
}

// SetUpSaleRules is SetUpSaleFor of a sale with the rules asked.
func (c *Client) SetUpSaleRules(ctx context.Context, merchant, admin *User, name string, stock int64, shards int, in, lasts time.Duration,
	saleMode string, rules Rules) (*Sale, error) {
	starts := time.Now().Add(in).UTC().Truncate(time.Second)
	var act struct{ ID int64 }
	err := c.JSON(ctx, http.MethodPost, "/api/merchant/activities", map[string]any{
		"name": name, "description": "Set up by the load tool", "starts_at": starts.Format(time.RFC3339),
		"ends_at": starts.Add(lasts).Format(time.RFC3339), "sale_mode": saleMode, "rules": rules}, merchant, &act)
	if err != nil {
		return nil, fmt.Errorf("create activity: %w", err)
	}
	var item struct{ ID int64 }
	err = c.JSON(ctx, http.MethodPost, fmt.Sprintf("/api/merchant/activities/%d/items", act.ID), map[string]any{
		"name": name + " item", "title": "load test", "original_price_cents": 10000, "seckill_price_cents": 100, "stock": stock,
		"stock_shards": max(shards, 1)}, merchant, &item)
	if err != nil {
		return nil, fmt.Errorf("add item: %w", err)
	}
	if err := c.JSON(ctx, http.MethodPost, fmt.Sprintf("/api/merchant/activities/%d/submit", act.ID), nil, merchant, nil); err != nil {
		return nil, fmt.Errorf("submit: %w", err)
	}
	if err := c.JSON(ctx, http.MethodPost, fmt.Sprintf("/api/admin/activities/%d/approve", act.ID), nil, admin, nil); err != nil {
		return nil, fmt.Errorf("approve: %w", err)
	}
	return &Sale{ActivityID: act.ID, ItemID: item.ID, StartsAt: starts, Stock: stock}, nil
}

// parallel runs fn(i) for i in [0, n) on workers goroutines, stopping at the first error.
func parallel(ctx context.Context, n, workers int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var next atomic.Int64
	var once sync.Once
	var first error
	var wg sync.WaitGroup
	for range min(workers, max(n, 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := fn(ctx, i); err != nil {
					once.Do(func() { first = err; cancel() })
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// SolveCaptcha draws a captcha as u and reads its answer from Redis, as the contract lets an operator's
// tool do; it answers the fields a request sends, or retry when the server said too many at once.
func (c *Client) SolveCaptcha(ctx context.Context, rdb redis.UniversalClient, u *User) (fields map[string]string, retry bool, err error) {
	var cap struct {
		CaptchaID string `json:"captcha_id"`
	}
	a, err := c.Do(ctx, http.MethodGet, "/api/captcha", nil, u)
	if err != nil {
		return nil, false, err
	}
	if a.Status == http.StatusTooManyRequests {
		return nil, true, nil
	}
	if a.Status != 200 {
		return nil, false, fmt.Errorf("captcha: %d %s", a.Status, a.Body)
	}
	if err := jsonUnmarshal(a.Body, &cap); err != nil {
		return nil, false, err
	}
	answer, err := rdb.Get(ctx, "captcha:"+cap.CaptchaID).Result()
	if err != nil {
		return nil, false, fmt.Errorf("captcha answer: %w", err)
	}
	return map[string]string{"captcha_id": cap.CaptchaID, "captcha_answer": answer}, false, nil
}

// shoppers makes the scenario's o.Users shoppers' accounts named prefix0..: seeded beforehand in bulk
// (o.Seed) and each logged in through the API, as a sale's shoppers' accounts exist before it; or, without
// o.Seed, registered through the API, each with a captcha and a proof of work.
func (c *Client) shoppers(ctx context.Context, rdb redis.UniversalClient, o Options, name, prefix string) ([]*User, error) {
	if o.Seed != nil {
		logf(o.Log, "%s: seeding %d shoppers' accounts", name, o.Users)
		users, err := o.Seed(ctx, prefix, o.Users)
		if err != nil {
			return nil, err
		}
		return users, c.LoginAll(ctx, users, bar(o.Log, "log in", len(users)))
	}
	logf(o.Log, "%s: registering %d shoppers", name, o.Users)
	return c.RegisterUsers(ctx, rdb, prefix, o.Users, bar(o.Log, "register", o.Users))
}

// RegisterUsers registers n shoppers named prefix0..prefixN-1 with 16 workers, each passing a captcha.
func (c *Client) RegisterUsers(ctx context.Context, rdb redis.UniversalClient, prefix string, n int, progress func(done int)) ([]*User, error) {
	users := make([]*User, n)
	var done atomic.Int64
	err := parallel(ctx, n, 16, func(ctx context.Context, i int) error {
		u := &User{Name: fmt.Sprintf("%s%d", prefix, i), Password: Password}
		if err := c.Register(ctx, rdb, u); err != nil {
			return err
		}
		users[i] = u
		if progress != nil {
			progress(int(done.Add(1)))
		}
		return nil
	})
	return users, err
}

// Password is the password of the shoppers the tool registers or seeds.
const Password = "load-test-password"

// LoginAll logs each user in through the API, 32 at a time: a seeded crowd's setup.
func (c *Client) LoginAll(ctx context.Context, users []*User, progress func(done int)) error {
	var done atomic.Int64
	return parallel(ctx, len(users), 32, func(ctx context.Context, i int) error {
		if err := c.Login(ctx, users[i]); err != nil {
			return fmt.Errorf("log %s in: %w", users[i].Name, err)
		}
		if progress != nil {
			progress(int(done.Add(1)))
		}
		return nil
	})
}

// GetPaths has every user pass a captcha (its answer read from Redis) and get a purchase path, retrying
// while the server says too many requests at once.
func (c *Client) GetPaths(ctx context.Context, rdb redis.UniversalClient, users []*User, itemID int64, progress func(done int)) ([]string, error) {
	paths := make([]string, len(users))
	var done atomic.Int64
	err := parallel(ctx, len(users), 16, func(ctx context.Context, i int) error {
		for try := 0; ; try++ {
			solved, retry, err := c.SolveCaptcha(ctx, rdb, users[i])
			if err != nil {
				return err
			}
			if retry {
				if try == 200 {
					return fmt.Errorf("captcha for %s: still too many at once after 200 tries", users[i].Name)
				}
				time.Sleep(20 * time.Millisecond)
				continue
			}
			var p struct{ Path string }
			a, err := c.Do(ctx, http.MethodPost, fmt.Sprintf("/api/items/%d/path", itemID), solved, users[i])
			if err != nil {
				return err
			}
			if a.Status == http.StatusTooManyRequests && try < 200 {
				time.Sleep(20 * time.Millisecond)
				continue
			}
			if a.Status != 200 {
				return fmt.Errorf("path for %s: %d %s", users[i].Name, a.Status, a.Body)
			}
			if err := jsonUnmarshal(a.Body, &p); err != nil {
				return err
			}
			paths[i] = p.Path
			if progress != nil {
				progress(int(done.Add(1)))
			}
			return nil
		}
	})
	return paths, err
}

// WaitUntil sleeps until t (the sale's start, say).
func WaitUntil(ctx context.Context, t time.Time) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(t)):
		return nil
	}
}

// Stats are the admin's figures of the sale.
type Stats struct {
	StockTotal      int64 `json:"stock_total"`
	StockLeft       int64 `json:"stock_left"`
	Queued          int64 `json:"queued"`
	OrdersPending   int64 `json:"orders_pending"`
	OrdersPaid      int64 `json:"orders_paid"`
	OrdersCancelled int64 `json:"orders_cancelled"`
	OrdersRefunded  int64 `json:"orders_refunded"`
}

// WaitDrained polls the admin stats until nothing is queued, and answers how long that took. A server
// that fails to answer meanwhile (recovering from a fault) is asked again until within is over.
func (c *Client) WaitDrained(ctx context.Context, admin *User, s *Sale, within time.Duration) (Stats, time.Duration, error) {
	start := time.Now()
	for {
		var st Stats
		if err := c.JSON(ctx, http.MethodGet, fmt.Sprintf("/api/admin/activities/%d/stats", s.ActivityID), nil, admin, &st); err != nil {
			if time.Since(start) > within || ctx.Err() != nil {
				return st, 0, err
			}
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if st.Queued == 0 {
			return st, time.Since(start), nil
		}
		if time.Since(start) > within {
			return st, 0, fmt.Errorf("%d orders still queued after %v", st.Queued, within)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Name returns a name unique to this run, for users and sales.
func Name(prefix string) string {
	return prefix + strings.ReplaceAll(time.Now().UTC().Format("0102150405.000"), ".", "")
}
