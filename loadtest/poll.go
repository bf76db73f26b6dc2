package loadtest

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"
)

// Poll runs the waiting room's hot reads: shoppers waiting in a queue sale's line poll their standing,
// each with the signed place its page sends, and one request in five reads the line's public document,
// as the pages do between their own polls. Both are answered from memory with small JSON bodies: what
// they cost is set against a bare Fiber handler answering a fixed body of a status poll's size. The
// sale has one unit (o.Stock): the first in line has its turn, everyone else waits behind.
func (c *Client) Poll(ctx context.Context, rdb redis.UniversalClient, o Options) (*Report, error) {
	if err := c.logins(ctx, &o); err != nil {
		return nil, err
	}
	prefix := Name("po")
	users, err := c.shoppers(ctx, rdb, o, "poll", prefix)
	if err != nil {
		return nil, err
	}
	// The shoppers join after the start, so each has its place at once (before the draw a place is
	// not known, and a poll without one asks Redis rather than the line's memory).
	sale, err := c.SetUpSale(ctx, &o.Merchant, &o.Admin, prefix, o.Stock, 1, 2*time.Second, "queue")
	if err != nil {
		return nil, err
	}
	if err := WaitUntil(ctx, sale.StartsAt.Add(time.Second)); err != nil {
		return nil, err
	}
	logf(o.Log, "poll: %d shoppers join the line", len(users))
	places := make([]string, len(users))
	joined := bar(o.Log, "join", len(users))
	err = parallel(ctx, len(users), 16, func(ctx context.Context, i int) error {
		for {
			fields, retry, err := c.SolveCaptcha(ctx, rdb, users[i])
			if err != nil {
				return err
			}
			if retry {
				if err := WaitUntil(ctx, time.Now().Add(100*time.Millisecond)); err != nil {
					return err
				}
				continue
			}
			if fields["altcha"], retry, err = c.SolvePow(ctx, users[i], joinQuery(sale.ItemID)); err != nil {
				return err
			}
			if retry {
				continue
			}
			a, err := c.Do(ctx, http.MethodPost, fmt.Sprintf("/api/items/%d/queue", sale.ItemID), fields, users[i])
			if err != nil {
				return err
			}
			var q standing
			if a.Status != http.StatusOK || jsonUnmarshal(a.Body, &q) != nil {
				return fmt.Errorf("join the line: %s %s", a.Kind(), a.Body)
			}
			// The place may be told on a later poll: ask a few times, as the page does.
			for try := 0; q.PlaceToken == nil && try < 20; try++ {
				if err := WaitUntil(ctx, time.Now().Add(250*time.Millisecond)); err != nil {
					return err
				}
				a, err := c.Do(ctx, http.MethodGet, fmt.Sprintf("/api/items/%d/queue", sale.ItemID), nil, users[i])
				if err != nil {
					return err
				}
				_ = jsonUnmarshal(a.Body, &q)
			}
			if q.PlaceToken != nil {
				places[i] = *q.PlaceToken
			}
			return nil
		}
	})
	if err != nil {
		return nil, err
	}
	joined(len(users))
	signed := 0
	for _, p := range places {
		if p != "" {
			signed++
		}
	}
	logf(o.Log, "poll: %d of %d shoppers hold a signed place", signed, len(places))
	logf(o.Log, "poll: %s", c.Pow())
	reqs := make([]Request, o.Requests)
	for i := range reqs {
		if i%5 == 0 {
			reqs[i] = Request{Method: http.MethodGet, Path: linePath(sale.ItemID)}
			continue
		}
		w := i % len(users)
		reqs[i] = Request{Method: http.MethodGet, Path: fmt.Sprintf("/api/items/%d/queue", sale.ItemID), User: users[w], Who: w}
		if places[w] != "" {
			reqs[i].Header = map[string]string{"X-Line-Place": places[w]}
		}
	}
	rep := &Report{Scenario: "poll", Options: o}
	logf(o.Log, "poll: %d status polls and reads of the line's document", len(reqs))
	rep.CPU = measureCPU(o.CPU, func() { rep.Result = c.Fire(ctx, reqs, o.Conns, bar(o.Log, "polls", len(reqs))) })
	rep.Audit = &Audit{}
	rep.Audit.check(rep.Result.Kinds["200"] == len(reqs), "every poll and read of the line answered 200 (%d of %d)", rep.Result.Kinds["200"], len(reqs))
	return rep, nil
}
