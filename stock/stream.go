package stock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Stream names one order stream: an item's shard's.
type Stream struct {
	ItemID int64
	Shard  int
}

func (s Stream) key() string { return ShardKeys(s.ItemID, s.Shard).Stream }

// StreamsOf lists an item's order streams, one per shard.
func (l *Ledger) StreamsOf(ctx context.Context, itemID int64) ([]Stream, error) {
	n, err := l.Shards(ctx, itemID)
	if err != nil {
		return nil, err
	}
	out := make([]Stream, n)
	for i := range out {
		out[i] = Stream{ItemID: itemID, Shard: i}
	}
	return out, nil
}

// Streams lists the items that have order streams.
func (l *Ledger) Streams(ctx context.Context) ([]int64, error) {
	ids, err := l.rdb.SMembers(ctx, streamsKey).Result()
	if err != nil {
		return nil, fmt.Errorf("streams: %w", err)
	}
	out := make([]int64, 0, len(ids))
	for _, s := range ids {
		if id, err := strconv.ParseInt(s, 10, 64); err == nil {
			out = append(out, id)
		}
	}
	return out, nil
}

// IsNoGroup reports whether err says the stream or its consumer group is missing (Redis lost them).
func IsNoGroup(err error) bool { return err != nil && strings.Contains(err.Error(), "NOGROUP") }

// Unfollow removes an item from the list of streams the consumers follow.
func (l *Ledger) Unfollow(ctx context.Context, itemID int64) error {
	return l.rdb.SRem(ctx, streamsKey, itemID).Err()
}

// ExpireSale lets a sale that is over and drained leave Redis: its keys, every shard's, expire after keep
// (the buyers' results stay readable that long), and the consumers stop following it. Written later
// (a unit given back by an order cancelled after the end), a key keeps the sale's expiry (restock.lua).
func (l *Ledger) ExpireSale(ctx context.Context, itemID int64, keep time.Duration) error {
	n, err := l.Shards(ctx, itemID)
	if err != nil {
		return err
	}
	_, err = l.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range n {
			k := ShardKeys(itemID, i)
			for _, key := range []string{k.Sale, k.Buyers, k.Results, k.Stream, k.Loans, k.Received, k.item + "restocked"} {
				p.Expire(ctx, key, keep)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("retire item %d: %w", itemID, err)
	}
	return l.Unfollow(ctx, itemID)
}

// SaleEnds answers when the item's loaded sale ends, and false when no shard of it is loaded: a shard
// lost with its master does not end a sale that the other shards still sell.
func (l *Ledger) SaleEnds(ctx context.Context, itemID int64) (time.Time, bool, error) {
	cmds, err := l.eachShard(ctx, itemID, "ends")
	if err != nil {
		return time.Time{}, false, err
	}
	var failed error
	for _, c := range cmds {
		ms, err := c.Int64()
		if err == nil {
			return time.UnixMilli(ms), true, nil
		}
		if !errors.Is(err, redis.Nil) {
			failed = err
		}
	}
	if failed != nil { // a shard that did not answer may hold the sale
		return time.Time{}, false, fmt.Errorf("sale end of item %d: %w", itemID, failed)
	}
	return time.Time{}, false, nil
}

// EnsureGroup makes the consumer group of an order stream (and the stream) if missing.
func (l *Ledger) EnsureGroup(ctx context.Context, st Stream) error {
	err := l.rdb.XGroupCreateMkStream(ctx, st.key(), Group, "0").Err()
	if err != nil && !strings.HasPrefix(err.Error(), "BUSYGROUP") {
		return fmt.Errorf("consumer group of item %d shard %d: %w", st.ItemID, st.Shard, err)
	}
	return nil
}

// Read reads up to count order messages of a stream for consumer: its own unacknowledged ones when
// pending, else new ones, waiting up to block for them.
func (l *Ledger) Read(ctx context.Context, st Stream, consumer string, pending bool, count int, block time.Duration) ([]OrderMessage, error) {
	start := ">"
	if pending {
		start, block = "0", -1
	}
	res, err := l.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
		Group: Group, Consumer: consumer, Streams: []string{st.key(), start}, Count: int64(count), Block: block,
	}).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read orders of item %d shard %d: %w", st.ItemID, st.Shard, err)
	}
	var out []OrderMessage
	for _, s := range res {
		for _, m := range s.Messages {
			out = append(out, parseOrder(st, m))
		}
	}
	return out, nil
}

// Claim takes over up to count messages of a stream that another consumer has left unacknowledged for
// longer than minIdle (it died, or is stuck).
func (l *Ledger) Claim(ctx context.Context, st Stream, consumer string, minIdle time.Duration, count int) ([]OrderMessage, error) {
	msgs, _, err := l.rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{
		Stream: st.key(), Group: Group, Consumer: consumer, MinIdle: minIdle, Start: "0", Count: int64(count),
	}).Result()
	if err != nil {
		return nil, fmt.Errorf("claim orders of item %d shard %d: %w", st.ItemID, st.Shard, err)
	}
	out := make([]OrderMessage, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, parseOrder(st, m))
	}
	return out, nil
}

// Placed is an order the database holds for a message.
type Placed struct {
	MessageID string
	UserID    int64
	OrderNo   string
}

// Ack acknowledges messages of a stream whose orders the database holds and sets each buyer's result to
// success, in one round trip.
func (l *Ledger) Ack(ctx context.Context, st Stream, placed []Placed) error {
	if len(placed) == 0 {
		return nil
	}
	k := ShardKeys(st.ItemID, st.Shard)
	ids := make([]string, len(placed))
	results := make([]any, 0, 2*len(placed))
	for i, p := range placed {
		ids[i] = p.MessageID
		results = append(results, strconv.FormatInt(p.UserID, 10), SuccessValue(p.OrderNo))
	}
	_, err := l.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, k.Results, results...)
		p.XAck(ctx, k.Stream, Group, ids...)
		// Settled entries leave the stream, so that it does not grow without bound. They were all
		// delivered to the group, so the group's lag stays exact.
		p.XDel(ctx, k.Stream, ids...)
		return nil
	})
	if err != nil {
		return fmt.Errorf("ack orders of item %d shard %d: %w", st.ItemID, st.Shard, err)
	}
	return nil
}

// Backlog counts an item's orders, over all its shards, that are queued and not yet in the database:
// read by no consumer yet, or read and not acknowledged.
func (l *Ledger) Backlog(ctx context.Context, itemID int64) (int64, error) {
	streams, err := l.StreamsOf(ctx, itemID)
	if err != nil {
		return 0, err
	}
	// Every settled entry is deleted from the stream as it is acknowledged, so what the stream still
	// holds is exactly what is queued: one exact count, with no reliance on the group's lag (which
	// Redis cannot always tell).
	cmds := make([]*redis.IntCmd, len(streams))
	_, err = l.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, st := range streams {
			cmds[i] = p.XLen(ctx, st.key())
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("backlog of item %d: %w", itemID, err)
	}
	var n int64
	for _, c := range cmds {
		n += c.Val()
	}
	return n, nil
}
