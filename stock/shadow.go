package stock

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/sift"
)

// The shadow line: bulk leaves traces, and the line looks for them. Every join of a queue sale's line,
// refused ones too, is kept as evidence beside the room (its device, address prefix and outcome). At the
// draw the evidence is sifted (package sift): entrants flagged by two signals together are placed as the
// draw places them, but wait in the shadow line, let in only once every other entrant has had a turn;
// their pages look like waiting. An admin sees the clusters with their evidence before and after the
// draw, and clears one (its entrants return to their drawn places) or confirms it.

// maxJoinsKept bounds the evidence kept per item: a stream trimmed to about this many joins. An account
// adds at most tracesPerAccount to it (note.lua), so filling it takes tens of thousands of accounts.
const (
	maxJoinsKept     = 500_000
	tracesPerAccount = 8
)

var (
	//go:embed note.lua
	noteLua    string
	noteScript = redis.NewScript(noteLua)
)

// Sifter finds an item's flagged clusters from the evidence of its joins.
type Sifter struct {
	rdb        redis.UniversalClient
	made       func(ctx context.Context, users []int64) (map[int64]time.Time, error)
	thresholds sift.Thresholds
	on         bool
}

// NewSifter returns the sifter of the joins kept in rdb, with when each account was made (made) and the
// operator's thresholds; on false keeps the evidence and the admin's view but shadows no one.
func NewSifter(rdb redis.UniversalClient, made func(ctx context.Context, users []int64) (map[int64]time.Time, error),
	th sift.Thresholds, on bool) *Sifter {
	return &Sifter{rdb: rdb, made: made, thresholds: th, on: on}
}

// Thresholds answers the thresholds the sifter flags by.
func (s *Sifter) Thresholds() sift.Thresholds { return s.thresholds }

// On reports whether flagged entrants are shadowed at the draw.
func (s *Sifter) On() bool { return s.on }

// Note keeps a join of the item's line as evidence, until a week after the sale ends: each distinct
// trace of an account once, and at most tracesPerAccount of them. Best effort: a join lost to a Redis
// failure is one trace fewer, never a join refused.
func (s *Sifter) Note(ctx context.Context, itemID int64, j sift.Join, ends time.Time) {
	k := roomKeysOf(itemID)
	_ = noteScript.Run(ctx, s.rdb, []string{k.Joins, k.JoinsSeen, k.JoinsBy}, j.User, j.Device, j.Prefix, j.Refused, maxJoinsKept,
		ends.Add(roomKeep).UnixMilli(), tracesPerAccount).Err()
}

// joinsChunk is how many joins one read of the evidence brings.
const joinsChunk = 10_000

// Joins answers the evidence kept of the item's joins, oldest first.
func (s *Sifter) Joins(ctx context.Context, itemID int64) ([]sift.Join, error) {
	k := roomKeysOf(itemID)
	var out []sift.Join
	from := "-"
	for {
		msgs, err := s.rdb.XRangeN(ctx, k.Joins, from, "+", joinsChunk).Result()
		if err != nil {
			return nil, fmt.Errorf("the joins of item %d: %w", itemID, err)
		}
		for _, m := range msgs {
			str := func(f string) string { v, _ := m.Values[f].(string); return v }
			u, err := strconv.ParseInt(str("u"), 10, 64)
			if err != nil {
				continue
			}
			out = append(out, sift.Join{User: u, Device: str("d"), Prefix: str("p"), Refused: str("r")})
		}
		if len(msgs) < joinsChunk {
			return out, nil
		}
		from = "(" + msgs[len(msgs)-1].ID
	}
}

// Clusters answers the item's flagged clusters as the evidence shows them now.
func (s *Sifter) Clusters(ctx context.Context, itemID int64) ([]sift.Cluster, error) {
	joins, err := s.Joins(ctx, itemID)
	if err != nil || len(joins) == 0 {
		return nil, err
	}
	seen := map[int64]bool{}
	users := make([]int64, 0, len(joins))
	for _, j := range joins {
		if !seen[j.User] {
			seen[j.User] = true
			users = append(users, j.User)
		}
	}
	made, err := s.made(ctx, users)
	if err != nil {
		return nil, fmt.Errorf("when the entrants of item %d made their accounts: %w", itemID, err)
	}
	return sift.Sift(joins, made, s.thresholds), nil
}

// Decision is what an admin decided of a flagged cluster.
type Decision string

// The decisions, and what each may become: clearing gives entrants their drawn places back, and is
// final; a confirmed cluster may still be cleared (an appeal heard), never the other way.
const (
	Undecided Decision = ""
	Cleared   Decision = "cleared"
	Confirmed Decision = "confirmed"
)

var decisions = map[Decision][]Decision{
	Undecided: {Cleared, Confirmed},
	Confirmed: {Cleared},
	Cleared:   {},
}

// ErrDecided answers a decision that a cluster's decision does not allow (a cleared cluster confirmed).
var ErrDecided = errors.New("the cluster is decided already")

// Flagged is a flagged cluster with the decision taken on it: Undecided while some of its entrants are
// undecided (a cluster that grew after its decision).
type Flagged struct {
	sift.Cluster
	Decision Decision
	Shadowed int // its entrants waiting in the shadow line now
}

// Flagged answers the item's clusters with their decisions: before the draw as the evidence shows them
// now, from the draw on as the draw found them (decisions act on those: a later join changes nothing).
func (s *Sifter) Flagged(ctx context.Context, itemID int64) ([]Flagged, error) {
	cs, err := s.drawnClusters(ctx, itemID)
	if err == nil && cs == nil {
		cs, err = s.Clusters(ctx, itemID)
	}
	if err != nil || len(cs) == 0 {
		return nil, err
	}
	k := roomKeysOf(itemID)
	var cleared, confirmed *redis.StringSliceCmd
	var shadow *redis.StringSliceCmd
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		cleared = p.SMembers(ctx, k.Cleared)
		confirmed = p.SMembers(ctx, k.Confirmed)
		shadow = p.ZRange(ctx, k.Shadow, 0, -1)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("the decisions on item %d: %w", itemID, err)
	}
	in := func(vals []string) map[int64]bool {
		m := make(map[int64]bool, len(vals))
		for _, v := range vals {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				m[n] = true
			}
		}
		return m
	}
	cl, co, sh := in(cleared.Val()), in(confirmed.Val()), in(shadow.Val())
	out := make([]Flagged, len(cs))
	for i, c := range cs {
		out[i] = Flagged{Cluster: c}
		all := func(m map[int64]bool) bool {
			return !slices.ContainsFunc(c.Users, func(u int64) bool { return !m[u] })
		}
		switch {
		case all(cl):
			out[i].Decision = Cleared
		case all(co):
			out[i].Decision = Confirmed
		}
		for _, u := range c.Users {
			if sh[u] {
				out[i].Shadowed++
			}
		}
	}
	return out, nil
}

// drawnClusters answers the clusters the item's draw found (empty, not nil, when it found none), or nil
// before the draw sifted its entrants.
func (s *Sifter) drawnClusters(ctx context.Context, itemID int64) ([]sift.Cluster, error) {
	k := roomKeysOf(itemID)
	var sifted *redis.StringCmd
	var stored *redis.MapStringStringCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		sifted = p.HGet(ctx, k.Room, "sifted")
		stored = p.HGetAll(ctx, k.Clusters)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("the drawn clusters of item %d: %w", itemID, err)
	}
	if sifted.Val() == "" {
		return nil, nil
	}
	out := make([]sift.Cluster, 0, len(stored.Val()))
	for _, v := range stored.Val() {
		var c sift.Cluster
		if err := json.Unmarshal([]byte(v), &c); err == nil {
			out = append(out, c)
		}
	}
	sift.Order(out)
	return out, nil
}

var (
	//go:embed clear.lua
	clearLua    string
	clearScript = redis.NewScript(clearLua)
)

// Cluster answers the item's flagged cluster whose key is given, as the evidence shows it now; ok is
// false when there is none.
func (s *Sifter) Cluster(ctx context.Context, itemID int64, key string) (Flagged, bool, error) {
	fs, err := s.Flagged(ctx, itemID)
	if err != nil {
		return Flagged{}, false, err
	}
	i := slices.IndexFunc(fs, func(f Flagged) bool { return f.Key == key })
	if i < 0 {
		return Flagged{}, false, nil
	}
	return fs[i], true, nil
}

// Decide records an admin's decision on the item's cluster f (as Cluster answered it): clearing returns
// its entrants to their drawn places (in line if the line has not reached them, else let in first);
// confirming keeps them in the shadow line. It answers the cluster as decided, or ErrDecided when its
// decision does not allow d.
func (s *Sifter) Decide(ctx context.Context, itemID int64, f Flagged, d Decision, ends time.Time) (Flagged, error) {
	if !slices.Contains(decisions[f.Decision], d) {
		return f, ErrDecided
	}
	k := roomKeysOf(itemID)
	args := []any{string(d), ends.Add(roomKeep).UnixMilli()}
	for _, u := range f.Users {
		args = append(args, u)
	}
	if err := clearScript.Run(ctx, s.rdb, []string{k.Room, k.Shadow, k.Line, k.Held, k.Places, k.Cleared, k.Confirmed}, args...).Err(); err != nil {
		return Flagged{}, fmt.Errorf("decide on cluster %s of item %d: %w", f.Key, itemID, err)
	}
	f.Decision = d
	if d == Cleared {
		f.Shadowed = 0
	}
	return f, nil
}

// shadowOf answers who of the draw's entrants (order) wait in the shadow line: the sift's flagged
// entrants, found once (the first draw that gets here stores them; a repeated draw reads them), less
// those an admin cleared. It answers none when the sifter shadows no one.
func (l *Line) shadowOf(ctx context.Context, itemID int64, order []drawEntry) (map[string]bool, error) {
	s := l.sifter
	if s == nil || !s.on {
		return nil, nil
	}
	k := roomKeysOf(itemID)
	sifted, err := l.rdb.HGet(ctx, k.Room, "sifted").Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("sifted item %d: %w", itemID, err)
	}
	if sifted == "" {
		cs, err := s.Clusters(ctx, itemID)
		if err != nil {
			return nil, err
		}
		drawn := make(map[string]bool, len(order))
		for _, e := range order {
			drawn[e.user] = true
		}
		// The clusters as the draw found them, each with its drawn entrants only (a late joiner is not
		// sifted): kept for the admins' decisions and the report.
		var users []any
		stored := map[string]any{}
		for _, c := range cs {
			c.Users = slices.DeleteFunc(c.Users, func(u int64) bool { return !drawn[strconv.FormatInt(u, 10)] })
			if len(c.Users) == 0 {
				continue
			}
			for _, u := range c.Users {
				users = append(users, u)
			}
			raw, err := json.Marshal(c)
			if err != nil {
				return nil, err
			}
			stored[c.Key] = raw
		}
		ends, err := l.rdb.HGet(ctx, k.Room, "ends").Int64()
		if err != nil {
			return nil, fmt.Errorf("the end of item %d's sale: %w", itemID, err)
		}
		_, err = l.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			if len(users) > 0 {
				p.SAdd(ctx, k.Flagged, users...)
				p.HSet(ctx, k.Clusters, stored)
				p.PExpireAt(ctx, k.Flagged, time.UnixMilli(ends).Add(roomKeep))
				p.PExpireAt(ctx, k.Clusters, time.UnixMilli(ends).Add(roomKeep))
			}
			p.HSet(ctx, k.Room, "sifted", "1", "flagged", len(users))
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("keep the flagged of item %d: %w", itemID, err)
		}
	}
	users, err := l.rdb.SDiff(ctx, k.Flagged, k.Cleared).Result()
	if err != nil {
		return nil, fmt.Errorf("the shadowed of item %d: %w", itemID, err)
	}
	out := make(map[string]bool, len(users))
	for _, u := range users {
		out[u] = true
	}
	return out, nil
}

// Sift has the line sift its entrants at the draw with s (nil: no shadow line).
func (l *Line) Sift(s *Sifter) { l.sifter = s }

// ShadowFigures are what the shadow line did in an item's sale, for the fairness report: no one's
// identity, only counts.
type ShadowFigures struct {
	Flagged   int64 // the draw's entrants flagged at the draw (0 before it)
	Shadowed  int64 // of them, those the draw put in the shadow line (not cleared before it)
	Cleared   int64 // cleared by an admin, before or after the draw
	Confirmed int64 // confirmed by an admin (and perhaps cleared later, an appeal heard)
	LetIn     int64 // let in from the shadow line, once everyone else had a turn
}

// ShadowOf reads the item's shadow figures in one round trip.
func (l *Line) ShadowOf(ctx context.Context, itemID int64) (ShadowFigures, error) {
	k := roomKeysOf(itemID)
	var room *redis.SliceCmd
	var cleared, confirmed *redis.IntCmd
	_, err := l.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		room = p.HMGet(ctx, k.Room, "flagged", "shadow_let_in", "shadowed")
		cleared = p.SInterCard(ctx, 0, k.Flagged, k.Cleared)
		confirmed = p.SInterCard(ctx, 0, k.Flagged, k.Confirmed)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return ShadowFigures{}, fmt.Errorf("the shadow line of item %d: %w", itemID, err)
	}
	num := func(i int) int64 {
		s, _ := room.Val()[i].(string)
		n, _ := strconv.ParseInt(s, 10, 64)
		return n
	}
	return ShadowFigures{Flagged: num(0), LetIn: num(1), Shadowed: num(2), Cleared: cleared.Val(), Confirmed: confirmed.Val()}, nil
}
