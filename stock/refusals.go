package stock

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Refusals counts, per item, the joins and purchase paths refused by each rule of who may take part
// (staff, not_eligible, address_limit, ...), for the sale's fairness report: a refused attempt is
// evidence of what the rules held back. Kept as long as the line is (roomKeep after the sale's end).
type Refusals struct{ rdb redis.UniversalClient }

// NewRefusals returns the counters kept in rdb.
func NewRefusals(rdb redis.UniversalClient) *Refusals { return &Refusals{rdb: rdb} }

func refusalsKey(itemID int64) string {
	return "sk:{item:" + strconv.FormatInt(itemID, 10) + "}:refused"
}

// Count adds one refusal of code for the item, whose sale ends at ends. Best effort: a count lost to a
// Redis failure is one fewer in the report, never a refusal turned into an error.
func (r *Refusals) Count(ctx context.Context, itemID int64, code string, ends time.Time) {
	k := refusalsKey(itemID)
	_, _ = r.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HIncrBy(ctx, k, code, 1)
		p.ExpireAt(ctx, k, ends.Add(roomKeep))
		return nil
	})
}

// Of answers the item's refusals by code.
func (r *Refusals) Of(ctx context.Context, itemID int64) (map[string]int64, error) {
	raw, err := r.rdb.HGetAll(ctx, refusalsKey(itemID)).Result()
	if err != nil {
		return nil, fmt.Errorf("refusals of item %d: %w", itemID, err)
	}
	out := make(map[string]int64, len(raw))
	for code, n := range raw {
		if v, err := strconv.ParseInt(n, 10, 64); err == nil {
			out[code] = v
		}
	}
	return out, nil
}
