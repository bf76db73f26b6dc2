package stock

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/errs"
)

// Refusals counts, per item, the accounts each rule of who may take part refused (staff, not_eligible,
// address_limit) on a join or a purchase path, for the sale's fairness report: a refused account is
// evidence of what the rules held back. An account counts once per rule however often it tries (a set
// of accounts per rule: a flood of tries inflates nothing). Kept as long as the line is (roomKeep after
// the sale's end).
type Refusals struct{ rdb redis.UniversalClient }

// NewRefusals returns the counters kept in rdb.
func NewRefusals(rdb redis.UniversalClient) *Refusals { return &Refusals{rdb: rdb} }

// RefusalCodes are the rules whose refusals are counted.
var RefusalCodes = []string{errs.Staff, errs.NotEligible, errs.AddressLimit}

func refusalsKey(itemID int64, code string) string {
	return "sk:{item:" + strconv.FormatInt(itemID, 10) + "}:refused:" + code
}

// Count counts the account refused by the rule code for the item, whose sale ends at ends. Best effort:
// a count lost to a Redis failure is one fewer in the report, never a refusal turned into an error.
func (r *Refusals) Count(ctx context.Context, itemID int64, code string, userID int64, ends time.Time) {
	k := refusalsKey(itemID, code)
	_, _ = r.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.SAdd(ctx, k, userID)
		p.ExpireAt(ctx, k, ends.Add(roomKeep))
		return nil
	})
}

// Of answers the accounts refused for the item, by rule (the rules that refused none are left out).
func (r *Refusals) Of(ctx context.Context, itemID int64) (map[string]int64, error) {
	cmds := make([]*redis.IntCmd, len(RefusalCodes))
	_, err := r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, code := range RefusalCodes {
			cmds[i] = p.SCard(ctx, refusalsKey(itemID, code))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("refusals of item %d: %w", itemID, err)
	}
	out := map[string]int64{}
	for i, code := range RefusalCodes {
		if n := cmds[i].Val(); n > 0 {
			out[code] = n
		}
	}
	return out, nil
}
