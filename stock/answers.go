package stock

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/errs"
)

// AnswerKinds are the buy endpoint's answers that the live dashboard charts: queued, unconfirmed (taken,
// not known to be on a Redis replica: not a promise yet), the refusals by their contract code, and other
// for the rest. The one list of them; AnswerOf names an answer by it.
var AnswerKinds = []string{AnswerQueued, AnswerUnconfirmed, errs.SoldOut, errs.AlreadyBought, errs.InvalidPath, errs.RateLimited, errs.NotStarted, errs.Ended, errs.Paused, AnswerOther}

// The answers that are not a refusal's code.
const (
	AnswerQueued      = "queued"
	AnswerUnconfirmed = "unconfirmed"
	AnswerOther       = "other"
)

// AnswerOf names a buy's answer (its error, nil for queued) as one of AnswerKinds. A take answered
// unconfirmed is named by the caller, who knows it.
func AnswerOf(err error) string {
	if err == nil {
		return AnswerQueued
	}
	code := errs.Code(err)
	for _, k := range AnswerKinds {
		if k == code {
			return k
		}
	}
	return AnswerOther
}

// countAnswersLua adds one second's answers of an item whose sale (shard 0, in the same slot) is loaded.
// KEYS[1] the sale, KEYS[2] the item's answers in that second; ARGV[1] the TTL in seconds, then answer
// and count pairs.
const countAnswersLua = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
for i = 2, #ARGV, 2 do redis.call('HINCRBY', KEYS[2], ARGV[i], ARGV[i + 1]) end
redis.call('EXPIRE', KEYS[2], ARGV[1])
return 1`

// answersTTL is how long per-second answer counts are kept.
const answersTTL = time.Hour

// Answers counts the buy endpoint's answers per item and second. Counting is in memory (the buy path
// makes no extra round trip); every second the counts go to Redis, where every instance's add up.
type Answers struct {
	rdb redis.UniversalClient
	mu  sync.Mutex
	m   map[answerKey]int64
}

type answerKey struct {
	item   int64
	sec    int64
	answer string
}

// NewAnswers returns an empty counter.
func NewAnswers(rdb redis.UniversalClient) *Answers {
	return &Answers{rdb: rdb, m: map[answerKey]int64{}}
}

func answersKey(itemID, sec int64) string {
	return "sk:{item:" + strconv.FormatInt(itemID, 10) + "}:answers:" + strconv.FormatInt(sec, 10)
}

// Add counts one answer for an item now.
func (a *Answers) Add(itemID int64, answer string, now time.Time) {
	k := answerKey{itemID, now.Unix(), answer}
	a.mu.Lock()
	a.m[k]++
	a.mu.Unlock()
}

// Flush sends the counts gathered so far to Redis.
func (a *Answers) Flush(ctx context.Context) error {
	a.mu.Lock()
	m := a.m
	a.m = make(map[answerKey]int64, len(m))
	a.mu.Unlock()
	if len(m) == 0 {
		return nil
	}
	// One script per item and second, which counts only for an item whose sale is in Redis: an id that
	// names no sale (junk in the buy's address) leaves no key behind.
	type slot struct{ item, sec int64 }
	args := map[slot][]any{}
	for k, n := range m {
		sl := slot{k.item, k.sec}
		if args[sl] == nil {
			args[sl] = []any{int(answersTTL / time.Second)}
		}
		args[sl] = append(args[sl], k.answer, n)
	}
	_, err := a.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for sl, argv := range args {
			p.Eval(ctx, countAnswersLua, []string{KeysOf(sl.item).Sale, answersKey(sl.item, sl.sec)}, argv...)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("flush answers: %w", err)
	}
	return nil
}

// Run flushes every second until ctx ends, and once more at the end.
func (a *Answers) Run(ctx context.Context) error {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			_ = a.Flush(fctx)
			cancel()
			return ctx.Err()
		case <-t.C:
			_ = a.Flush(ctx)
		}
	}
}

// Point is the answers counted in one second.
type Point struct {
	At     time.Time        `json:"at"`
	Counts map[string]int64 `json:"counts"`
}

// Series reads the answers of the items, summed, for each second of the window ending at now.
func (a *Answers) Series(ctx context.Context, itemIDs []int64, now time.Time, window time.Duration) ([]Point, error) {
	end := now.Unix()
	start := end - int64(window/time.Second) + 1
	cmds := map[int64][]*redis.MapStringStringCmd{}
	_, err := a.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for sec := start; sec <= end; sec++ {
			for _, id := range itemIDs {
				cmds[sec] = append(cmds[sec], p.HGetAll(ctx, answersKey(id, sec)))
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("answer series: %w", err)
	}
	secs := make([]int64, 0, len(cmds))
	for s := range cmds {
		secs = append(secs, s)
	}
	sort.Slice(secs, func(i, j int) bool { return secs[i] < secs[j] })
	out := make([]Point, 0, len(secs))
	for _, sec := range secs {
		p := Point{At: time.Unix(sec, 0).UTC(), Counts: map[string]int64{}}
		for _, c := range cmds[sec] {
			for k, v := range c.Val() {
				n, _ := strconv.ParseInt(v, 10, 64)
				p.Counts[k] += n
			}
		}
		out = append(out, p)
	}
	return out, nil
}
