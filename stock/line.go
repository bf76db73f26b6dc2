package stock

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The waiting room of a queue sale lives beside the item's first stock shard, under its hash tag, so
// that every step of it is one script on one slot (and runs unchanged on a Redis Cluster):
//
//   - the room hash: the seed and its SHA-256, the window, the state (open → drawing → drawn), how many
//     entered the draw, the last place given (tail), the last place let in (cursor), the counts;
//   - who joined before the start (tickets) and after it (late), each user's place and the line by place;
//   - the turns of those let in (their purchase paths), those in flight, and who bought or missed.
//
// Before the start shoppers join with a ticket. From the start the draw is closed, the entrants are
// placed in the order of SHA-256(seed ‖ ticket), and later joiners go behind them in order of arrival.
// The line is let in from the front (Admit); a shopper let in buys with the path of their turn.

// Line is an item's waiting room in Redis: the room, the draw, the line's places and the turns of those
// let in. It lives beside the item's stock (Ledger), whose shards and stock left it reads.
type Line struct {
	ledger *Ledger
	rdb    redis.UniversalClient
	now    func() time.Time
	sifter *Sifter // finds the entrants the draw puts in the shadow line (nil: none)
	seeds  *Seeds  // keeps the draws' seeds in PostgreSQL (nil: in Redis only; seeds.go)
}

// NewLine returns the waiting rooms beside the ledger's stock, on its Redis and its clock.
func NewLine(ledger *Ledger) *Line {
	return &Line{ledger: ledger, rdb: ledger.rdb, now: ledger.now}
}

// roomKeys are the keys of an item's waiting room.
type roomKeys struct {
	Room, Tickets, Late, Places, Line, Done, Turns, InFlight, Pending, Held, DrawLock, AdmitLock string
	// The turns let in that their shoppers' pages have not looked at yet (Look).
	Unseen string
	// The shadow line: the joins' evidence, who was flagged at the draw, who waits in the shadow line
	// (user by place) and the admins' decisions.
	Joins, JoinsSeen, JoinsBy, Flagged, Shadow, Cleared, Confirmed, Clusters string
}

func roomKeysOf(itemID int64) roomKeys {
	p := ShardKeys(itemID, 0).item + "q:"
	return roomKeys{Room: p + "room", Tickets: p + "tickets", Late: p + "late", Places: p + "places", Line: p + "line",
		Done: p + "done", Turns: p + "turns", InFlight: p + "inflight", Pending: p + "pending", Held: p + "held", DrawLock: p + "drawlock",
		AdmitLock: p + "admitlock", Joins: p + "joins", JoinsSeen: p + "joinseen", JoinsBy: p + "joinsby", Clusters: p + "clusters", Flagged: p + "flagged", Shadow: p + "shadow", Cleared: p + "cleared",
		Confirmed: p + "confirmed", Unseen: p + "unseen"}
}

var (
	//go:embed room.lua
	roomLua string
	//go:embed queue.lua
	queueLua string
	//go:embed draw.lua
	drawLua string
	//go:embed admit.lua
	admitLua string
	//go:embed status.lua
	statusLua string
	//go:embed unbought.lua
	unboughtLua string
	//go:embed resume.lua
	resumeLua string

	roomScript     = redis.NewScript(roomLua)
	queueScript    = redis.NewScript(queueLua)
	drawScript     = redis.NewScript(drawLua)
	admitScript    = redis.NewScript(admitLua)
	statusScript   = redis.NewScript(statusLua)
	unboughtScript = redis.NewScript(unboughtLua)
	resumeScript   = redis.NewScript(resumeLua)
)

// Window is when a queue sale's room opens, and when its sale starts and ends.
type Window struct {
	Opens, Starts, Ends time.Time
}

// roomKeep is how long after its sale ends a waiting room is kept (for the draw's record).
const roomKeep = 7 * 24 * time.Hour

// Room states.
const (
	RoomOpen    = "open"    // shoppers join the draw
	RoomDrawing = "drawing" // the draw is closed; its places are being written
	RoomDrawn   = "drawn"   // the line moves
)

// Room is a waiting room's shared state.
type Room struct {
	State              string
	Seed               string // empty until the draw is written
	SeedHash           string
	Opens, Starts, End time.Time
	DrawnAt            time.Time
	Entrants           int64 // in the draw (before the draw is closed: joined so far)
	Tail               int64 // the last place given
	Cursor             int64 // the last place let in
	LetIn, Bought      int64
	Missed             int64
	Readmitted         int64 // let in again below the cursor (held after a turn that ended sold out, or an order that failed)
}

// Joined counts the shoppers who joined the line: the draw's entrants and, once it is drawn, those who
// joined after its start (placed behind the draw: the tail counts them all).
func (r Room) Joined() int64 { return max(r.Tail, r.Entrants) }

// OpenRoom opens the item's waiting room with a fresh seed, unless it is open already. Where the seeds
// are kept (KeepSeeds), the seed is the one kept in PostgreSQL, written there first if none is: a room
// that Redis lost reopens with the seed, and the hash, it had.
func (l *Line) OpenRoom(ctx context.Context, itemID int64, w Window) error {
	if l.seeds != nil {
		return l.openKept(ctx, itemID, w)
	}
	seed, err := newSeed()
	if err != nil {
		return err
	}
	k := roomKeysOf(itemID)
	err = roomScript.Run(ctx, l.rdb, []string{k.Room}, seed, SeedHash(seed), w.Opens.UnixMilli(), w.Starts.UnixMilli(),
		w.Ends.UnixMilli(), w.Ends.Add(roomKeep).UnixMilli(), "").Err()
	if err != nil {
		return fmt.Errorf("open the waiting room of item %d: %w", itemID, err)
	}
	return nil
}

// SeedHash is the published hash of a draw's seed: the hex SHA-256 of the seed as text.
func SeedHash(seed string) string {
	h := sha256.Sum256([]byte(seed))
	return hex.EncodeToString(h[:])
}

// DrawKey is what orders a ticket in the draw: the hex SHA-256 of the seed followed by the ticket, as
// text. The drawn order is the tickets sorted by it.
func DrawKey(seed, ticket string) string {
	h := sha256.Sum256([]byte(seed + ticket))
	return hex.EncodeToString(h[:])
}

// Joined is what joining answers: the shopper's ticket, and their place once they have one.
type Joined struct {
	Ticket string
	Place  int64 // 0 until the draw places them
	// Confirmed: the join is on a Redis replica too (or the ledger does not wait for replicas); false,
	// the place is on the master only, and a failover before its replica had it would lose it.
	Confirmed bool
}

// Join puts a shopper in the item's waiting room (opening it first if it is not open in Redis), or
// answers the place they have: joining twice keeps the first place, and a shopper whose turn was missed
// goes to the back of the line.
func (l *Line) Join(ctx context.Context, itemID, userID int64, w Window) (Joined, error) {
	n, err := l.ledger.Shards(ctx, itemID)
	if err != nil {
		return Joined{}, err
	}
	k := roomKeysOf(itemID)
	buyers, check := k.Room, "0"
	if HomeShard(userID, n) == 0 { // the user's buyers set shares the room's slot: the script checks it
		buyers, check = ShardKeys(itemID, 0).Buyers, "1"
	} else if bought, err := l.rdb.SIsMember(ctx, ShardKeys(itemID, HomeShard(userID, n)).Buyers, userID).Result(); err != nil {
		return Joined{}, fmt.Errorf("join: %w", err)
	} else if bought {
		return Joined{}, ErrAlreadyBought
	}
	ticket := make([]byte, 16)
	if _, err := rand.Read(ticket); err != nil {
		return Joined{}, err
	}
	keys := []string{k.Room, k.Tickets, k.Late, k.Places, k.Line, k.Done, k.Turns, buyers, k.InFlight, k.Unseen}
	args := []any{userID, hex.EncodeToString(ticket), l.now().UnixMilli(), check, w.Ends.Add(roomKeep).UnixMilli(),
		TurnGrace.Milliseconds()}
	for try := 0; ; try++ {
		res, confirmed, err := l.runJoin(ctx, keys, args)
		if err != nil {
			return Joined{}, fmt.Errorf("join: %w", err)
		}
		switch {
		case res[0] == answerNoRoom && try == 0:
			if err := l.OpenRoom(ctx, itemID, w); err != nil {
				return Joined{}, err
			}
			continue
		case res[0] == answerAlreadyBought:
			return Joined{}, ErrAlreadyBought
		case res[0] != answerJoined || len(res) < 3:
			return Joined{}, fmt.Errorf("join: unexpected answer %q", res)
		}
		place, _ := strconv.ParseInt(res[2], 10, 64)
		return Joined{Ticket: res[1], Place: place, Confirmed: confirmed}, nil
	}
}

// Place is a shopper's standing in a waiting room.
type Place struct {
	Ticket   string
	Place    int64     // 0: not placed yet (or not in line)
	Path     string    // the purchase path of their turn, once let in
	TurnEnds time.Time // when that turn ends
	Done     string    // TurnBought or TurnMissed once their turn is over
	Bought   bool      // the user holds a unit of the item (known when their buyers set shares the room's slot)
	// Shadowed: waiting in the shadow line, with ShadowAhead standing ahead (those the line has yet to let
	// in, and the shadowed before them).
	Shadowed    bool
	ShadowAhead int64
}

// joined reports whether the shopper joined the room.
func (p Place) joined() bool { return p.Ticket != "" }

// Standing is a shopper's place in a waiting room, the room itself, and the stock left.
type Standing struct {
	Room      Room
	Place     Place
	Left      int64 // in the item's first shard: the whole stock left unless the item is split
	LeftKnown bool  // false: the sale is not loaded in Redis (Left says nothing)
}

// StandingOf reads the room, the shopper's place in it and the stock left, in one command. It is not the
// shopper's look (Look): a turn it finds is not seen by it.
func (l *Line) StandingOf(ctx context.Context, itemID, userID int64) (Standing, error) {
	return l.standing(ctx, itemID, userID, false)
}

// Look reads the shopper's standing as StandingOf does, asked by the shopper's own page, in the same one
// command: a turn let in that the page had not seen is seen now. Seen within the wait for it
// (Admission.SeenWithin, counted from the turn's start), it runs its full length from now; seen later, it
// is over (missed, or held if nothing was left).
func (l *Line) Look(ctx context.Context, itemID, userID int64) (Standing, error) {
	return l.standing(ctx, itemID, userID, true)
}

func (l *Line) standing(ctx context.Context, itemID, userID int64, look bool) (Standing, error) {
	n, err := l.ledger.Shards(ctx, itemID)
	if err != nil {
		return Standing{}, err
	}
	k := roomKeysOf(itemID)
	buyers, paths, check := k.Room, k.Room, "0"
	if HomeShard(userID, n) == 0 {
		buyers, paths, check = ShardKeys(itemID, 0).Buyers, ShardKeys(itemID, 0).Paths, "1"
	}
	now := ""
	if look {
		now = strconv.FormatInt(l.now().UnixMilli(), 10)
	}
	args := make([]any, 0, 3+len(roomFieldNames))
	args = append(args, userID, check, now)
	for _, f := range roomFieldNames {
		args = append(args, f)
	}
	v, err := statusScript.Run(ctx, l.rdb, []string{k.Room, k.Tickets, k.Late, k.Places, k.Turns, k.Done, buyers, ShardKeys(itemID, 0).Sale,
		k.Shadow, k.InFlight, k.Unseen, paths, k.Pending}, args...).Slice()
	if err != nil {
		return Standing{}, fmt.Errorf("standing in the waiting room: %w", err)
	}
	nf := len(roomFieldNames)
	if len(v) != nf+8 {
		return Standing{}, fmt.Errorf("standing in the waiting room: %d answers, want %d", len(v), nf+8)
	}
	str := func(i int) string { s, _ := v[i].(string); return s }
	st := Standing{Room: parseRoom(v[:nf])}
	p := &st.Place
	p.Ticket, p.Done, p.Bought = str(nf), str(nf+4), str(nf+5) == "1"
	if p.Ticket == "" {
		p.Ticket = str(nf + 1)
	}
	p.Place, _ = strconv.ParseInt(str(nf+2), 10, 64)
	if path, ends, ok := strings.Cut(str(nf+3), ":"); ok {
		ms, _ := strconv.ParseInt(ends, 10, 64)
		p.Path, p.TurnEnds = path, time.UnixMilli(ms)
	}
	if left, err := strconv.ParseInt(str(nf+6), 10, 64); err == nil {
		st.Left, st.LeftKnown = left, true
	}
	if ahead, err := strconv.ParseInt(str(nf+7), 10, 64); err == nil {
		p.Shadowed, p.ShadowAhead = true, ahead
	}
	return st, nil
}

var roomFieldNames = []string{"state", "seed", "seed_hash", "opens", "starts", "ends", "drawn_at", "entrants", "tail",
	"cursor", "let_in", "bought", "missed", "readmitted"}

func roomFields(ctx context.Context, p redis.Pipeliner, k roomKeys) *redis.SliceCmd {
	return p.HMGet(ctx, k.Room, roomFieldNames...)
}

func parseRoom(v []any) Room {
	str := func(i int) string {
		if i < len(v) {
			s, _ := v[i].(string)
			return s
		}
		return ""
	}
	num := func(i int) int64 { n, _ := strconv.ParseInt(str(i), 10, 64); return n }
	ms := func(i int) time.Time {
		if str(i) == "" {
			return time.Time{}
		}
		return time.UnixMilli(num(i)).UTC()
	}
	r := Room{State: str(0), SeedHash: str(2), Opens: ms(3), Starts: ms(4), End: ms(5), DrawnAt: ms(6),
		Entrants: num(7), Tail: num(8), Cursor: num(9), LetIn: num(10), Bought: num(11), Missed: num(12), Readmitted: num(13)}
	if r.State == RoomDrawn {
		r.Seed = str(1) // the seed is shown once the draw is written, not before
	}
	return r
}

// RoomOf reads a waiting room (State "" when it is not open in Redis). Before the draw is closed,
// Entrants counts who joined so far.
func (l *Line) RoomOf(ctx context.Context, itemID int64) (Room, error) {
	k := roomKeysOf(itemID)
	var fields *redis.SliceCmd
	var joined *redis.IntCmd
	_, err := l.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		fields = roomFields(ctx, p, k)
		joined = p.HLen(ctx, k.Tickets)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return Room{}, fmt.Errorf("waiting room of item %d: %w", itemID, err)
	}
	r := parseRoom(fields.Val())
	if r.State == RoomOpen {
		r.Entrants = joined.Val()
	}
	return r, nil
}

// LineState is a waiting room as the line's public document shows it: the room, how many wait held below
// its cursor, and the stock left in the item's first shard.
type LineState struct {
	Room
	Held      int64 // held below the cursor: a turn that ended sold out, or an order that failed
	Left      int64 // in the item's first shard: the whole stock left unless the item is split
	LeftKnown bool  // false: the sale is not loaded in Redis (Left says nothing)
}

// LineOf reads the room, how many are held and the stock left in one transaction: every key is on the
// slot of the item's first shard, so it is one round trip to one node on a Redis Cluster too, and the
// cursor and the held agree (an admit step moves both at once).
func (l *Line) LineOf(ctx context.Context, itemID int64) (LineState, error) {
	k := roomKeysOf(itemID)
	var fields *redis.SliceCmd
	var joined, held *redis.IntCmd
	var left *redis.StringCmd
	_, err := l.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		fields = roomFields(ctx, p, k)
		joined = p.HLen(ctx, k.Tickets)
		held = p.ZCard(ctx, k.Held)
		left = p.HGet(ctx, ShardKeys(itemID, 0).Sale, "left")
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return LineState{}, fmt.Errorf("the line of item %d: %w", itemID, err)
	}
	st := LineState{Room: parseRoom(fields.Val()), Held: held.Val()}
	if st.State == RoomOpen {
		st.Entrants = joined.Val()
	}
	if n, err := strconv.ParseInt(left.Val(), 10, 64); err == nil {
		st.Left, st.LeftKnown = n, true
	}
	return st, nil
}

// drawChunk is how many places one pipeline writes.
const drawChunk = 1000

// drawLockTTL is how long the draw's lock outlives its holder's last sign of life.
const drawLockTTL = 5 * time.Second

// unlockScript deletes a lock only if it is still the caller's.
var unlockScript = redis.NewScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`)

// lock takes a lock for ttl, and answers how to let it go (only if it is still ours).
func (l *Line) lock(ctx context.Context, key string, ttl time.Duration) (unlock func(), ok bool, err error) {
	raw := make([]byte, 16)
	if _, err := rand.Read(raw); err != nil {
		return nil, false, err
	}
	owner := hex.EncodeToString(raw)
	ok, err = l.rdb.SetNX(ctx, key, owner, ttl).Result()
	if err != nil || !ok {
		return nil, false, err
	}
	return func() { unlockScript.Run(context.WithoutCancel(ctx), l.rdb, []string{key}, owner) }, true, nil
}

// Draw closes the draw once the sale has started, places its entrants in the drawn order and lets the
// line move. Any instance may run it, at any time, as often as it likes: one draws at a time (a lock),
// places are written only where none is (so a slow or repeated draw never moves anyone), and the same
// seed and tickets always give the same order. It reports whether the room is drawn.
func (l *Line) Draw(ctx context.Context, itemID int64) (bool, error) {
	k := roomKeysOf(itemID)
	now := l.now().UnixMilli()
	res, err := drawScript.Run(ctx, l.rdb, []string{k.Room, k.Tickets}, "close", now).StringSlice()
	if err != nil {
		return false, fmt.Errorf("close the draw of item %d: %w", itemID, err)
	}
	switch res[0] {
	case RoomDrawn:
		return true, nil
	case RoomDrawing:
	default:
		return false, nil
	}
	// One instance draws at a time (the others would only repeat its work); a lock that its holder keeps
	// alive chunk by chunk, so that a holder that dies holds the line up for seconds, not minutes.
	unlock, got, err := l.lock(ctx, k.DrawLock, drawLockTTL)
	if err != nil || !got {
		return false, err
	}
	defer unlock()
	order, err := l.drawnOrder(ctx, itemID)
	if err != nil {
		return false, err
	}
	shadow, err := l.shadowOf(ctx, itemID, order)
	if err != nil {
		return false, err
	}
	// The places live as long as the room: until the sale's end, and roomKeep after.
	ends, err := l.rdb.HGet(ctx, k.Room, "ends").Int64()
	if err != nil {
		return false, fmt.Errorf("the end of item %d's sale: %w", itemID, err)
	}
	expire := time.UnixMilli(max(ends, now)).Add(roomKeep)
	for i := 0; i < len(order); i += drawChunk {
		_, err := l.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for j := i; j < min(i+drawChunk, len(order)); j++ {
				place := int64(j + 1)
				p.HSetNX(ctx, k.Places, order[j].user, place)
				// The shadowed keep their drawn places, and wait for them in the shadow line.
				line := k.Line
				if shadow[order[j].user] {
					line = k.Shadow
				}
				p.ZAddNX(ctx, line, redis.Z{Score: float64(place), Member: order[j].user})
			}
			p.PExpireAt(ctx, k.Places, expire)
			p.PExpireAt(ctx, k.Line, expire)
			p.PExpireAt(ctx, k.Shadow, expire)
			p.PExpire(ctx, k.DrawLock, drawLockTTL)
			return nil
		})
		if err != nil {
			return false, fmt.Errorf("write the draw of item %d: %w", itemID, err)
		}
	}
	shadowed := 0
	for _, e := range order {
		if shadow[e.user] {
			shadowed++
		}
	}
	if err := l.rdb.HSet(ctx, k.Room, "shadowed", shadowed).Err(); err != nil {
		return false, fmt.Errorf("write the draw of item %d: %w", itemID, err)
	}
	res, err = drawScript.Run(ctx, l.rdb, []string{k.Room, k.Tickets}, "done", l.now().UnixMilli()).StringSlice()
	if err != nil {
		return false, fmt.Errorf("finish the draw of item %d: %w", itemID, err)
	}
	return res[0] == RoomDrawn, nil
}

type drawEntry struct{ user, ticket, key string }

// drawnOrder reads the draw's entrants and sorts them by their draw keys.
func (l *Line) drawnOrder(ctx context.Context, itemID int64) ([]drawEntry, error) {
	k := roomKeysOf(itemID)
	seed, err := l.drawSeed(ctx, itemID)
	if err != nil {
		return nil, err
	}
	tickets, err := l.rdb.HGetAll(ctx, k.Tickets).Result()
	if err != nil {
		return nil, fmt.Errorf("the tickets of item %d: %w", itemID, err)
	}
	order := make([]drawEntry, 0, len(tickets))
	for u, t := range tickets {
		order = append(order, drawEntry{user: u, ticket: t, key: DrawKey(seed, t)})
	}
	slices.SortFunc(order, func(a, b drawEntry) int { return strings.Compare(a.key+a.ticket, b.key+b.ticket) })
	return order, nil
}

// DrawnTickets lists the draw's tickets in drawn order, once the draw is written (nil before).
func (l *Line) DrawnTickets(ctx context.Context, itemID int64) ([]string, error) {
	r, err := l.RoomOf(ctx, itemID)
	if err != nil || r.State != RoomDrawn {
		return nil, err
	}
	order, err := l.drawnOrder(ctx, itemID)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(order))
	for i, e := range order {
		out[i] = e.ticket
	}
	return out, nil
}

// Admission is how the line is let in.
type Admission struct {
	Overbook float64       // let in at a time, per unit of stock left
	Rate     int           // let in per second, at most
	Turn     time.Duration // how long a turn lasts
	// SeenWithin is how long a turn waits to be seen (Look) from its start: seen within it, the turn
	// runs its full length from then; not seen, it ends then (or at its end, if that is later). Zero: a
	// turn runs from its start, seen or not.
	SeenWithin time.Duration
}

// admitBatch bounds the shoppers one step lets in.
const admitBatch = 500

// TurnGrace is how long after its end a turn is settled as missed: the instances' clocks differ, and a
// buy may still be accepted by one a moment after the turn ended by another's.
const TurnGrace = 2 * time.Second

// Admit moves the item's line one step: turns whose shoppers bought or whose time is up are settled,
// and the next in line are let in, each with a purchase path of their own in their home shard. Any
// instance may run it at any time: the step itself is one script, and paths not yet written (the
// instance died between the two) are written by the next step. It answers how many were let in.
func (l *Line) Admit(ctx context.Context, itemID int64, a Admission) (int, error) {
	n, err := l.ledger.Shards(ctx, itemID)
	if err != nil {
		return 0, err
	}
	k := roomKeysOf(itemID)
	// One step at a time per item, over all instances: a step reads who bought and the stock left before
	// its script runs, and two steps at once would each let in against the same room.
	unlock, ok, err := l.lock(ctx, k.AdmitLock, 5*time.Second)
	if err != nil || !ok {
		return 0, err
	}
	defer unlock()
	var inflight, pending *redis.StringSliceCmd
	var state *redis.StringCmd
	_, err = l.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		state = p.HGet(ctx, k.Room, "state")
		inflight = p.ZRange(ctx, k.InFlight, 0, -1)
		pending = p.SMembers(ctx, k.Pending)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return 0, fmt.Errorf("admit to item %d: %w", itemID, err)
	}
	if state.Val() != RoomDrawn {
		return 0, nil
	}
	if err := l.writePaths(ctx, itemID, n, pending.Val()); err != nil {
		return 0, err
	}
	bought, err := l.whoBought(ctx, itemID, n, inflight.Val())
	if err != nil {
		return 0, err
	}
	left, _, err := l.ledger.Left(ctx, itemID)
	if err != nil {
		return 0, err
	}
	args := []any{l.now().UnixMilli(), max(left, 0), a.Overbook, a.Rate, a.Turn.Milliseconds(), TurnGrace.Milliseconds(),
		l.now().Add(max(a.Turn, a.SeenWithin) + roomKeep).UnixMilli(), a.SeenWithin.Milliseconds(), len(bought)}
	for _, u := range bought {
		args = append(args, u)
	}
	for range min(admitBatch, a.Rate) {
		tok := make([]byte, 16)
		if _, err := rand.Read(tok); err != nil {
			return 0, err
		}
		args = append(args, hex.EncodeToString(tok))
	}
	res, err := admitScript.Run(ctx, l.rdb, []string{k.Room, k.Line, k.Turns, k.InFlight, k.Done, k.Pending, k.Held, k.Places, k.Shadow, k.Unseen},
		args...).StringSlice()
	if err != nil {
		return 0, fmt.Errorf("admit to item %d: %w", itemID, err)
	}
	let := make([]string, 0, len(res)/3)
	for i := 0; i+2 < len(res); i += 3 {
		let = append(let, res[i])
	}
	if err := l.writePaths(ctx, itemID, n, let); err != nil {
		return 0, err
	}
	return len(let), nil
}

// Resume gives the turns of the item's waiting room that a pause interrupted their time back: each
// turn still running at paused ends later by the pause's length (until goesOn), and its path, which the
// buy checks, is written again with the new end. Asked again for the same pause, the turns move on only
// by the time since the last call; an item without a room has nothing to give back. It answers how many
// turns the pause interrupted.
func (l *Line) Resume(ctx context.Context, itemID int64, paused, goesOn time.Time) (int, error) {
	k := roomKeysOf(itemID)
	moved, err := resumeScript.Run(ctx, l.rdb, []string{k.Room, k.Turns, k.InFlight}, paused.UnixMilli(), goesOn.UnixMilli()).StringSlice()
	if err != nil {
		return 0, fmt.Errorf("give item %d's turns back their pause: %w", itemID, err)
	}
	if len(moved) == 0 {
		return 0, nil
	}
	n, err := l.ledger.Shards(ctx, itemID)
	if err != nil {
		return 0, err
	}
	// Those who bought keep their used paths (a resent buy still gets its answer); the next step of the
	// line settles them.
	bought, err := l.whoBought(ctx, itemID, n, moved)
	if err != nil {
		return 0, err
	}
	write := slices.DeleteFunc(slices.Clone(moved), func(u string) bool { return slices.Contains(bought, u) })
	return len(moved), l.writePaths(ctx, itemID, n, write)
}

// writePaths writes the purchase paths of the users' turns into their home shards, where the buy
// checks them, and then forgets that they were pending.
func (l *Line) writePaths(ctx context.Context, itemID int64, n int, users []string) error {
	if len(users) == 0 {
		return nil
	}
	k := roomKeysOf(itemID)
	turns, err := l.rdb.HMGet(ctx, k.Turns, users...).Result()
	if err != nil {
		return fmt.Errorf("turns of item %d: %w", itemID, err)
	}
	now := l.now()
	// One transaction a shard: a path is never written into a hash left without its expiry (an instance
	// that died between the two would leave the hash for ever once the turns are over).
	_, err = l.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		lives := map[string]time.Duration{} // each shard's paths hash: how long it must live at least
		for i, u := range users {
			t, _ := turns[i].(string)
			_, ends, ok := strings.Cut(t, ":")
			id, perr := strconv.ParseInt(u, 10, 64)
			if !ok || perr != nil {
				continue
			}
			ms, _ := strconv.ParseInt(ends, 10, 64)
			ttl := time.UnixMilli(ms).Sub(now) + time.Minute
			if ttl <= time.Minute {
				continue // the turn is over: no path to write
			}
			key := ShardKeys(itemID, HomeShard(id, n)).Paths
			p.HSet(ctx, key, u, t)
			lives[key] = max(lives[key], ttl)
		}
		// Lengthened, never shortened: other buyers' paths in the hash may be valid for longer.
		for key, ttl := range lives {
			p.ExpireNX(ctx, key, ttl)
			p.ExpireGT(ctx, key, ttl)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("paths of item %d: %w", itemID, err)
	}
	members := make([]any, len(users))
	for i, u := range users {
		members[i] = u
	}
	return l.rdb.SRem(ctx, k.Pending, members...).Err()
}

// whoBought answers which of the users hold a unit of the item.
func (l *Line) whoBought(ctx context.Context, itemID int64, n int, users []string) ([]string, error) {
	if len(users) == 0 {
		return nil, nil
	}
	byShard := map[int][]any{}
	for _, u := range users {
		id, err := strconv.ParseInt(u, 10, 64)
		if err != nil {
			continue
		}
		h := HomeShard(id, n)
		byShard[h] = append(byShard[h], u)
	}
	cmds := map[int]*redis.BoolSliceCmd{}
	_, err := l.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for h, us := range byShard {
			cmds[h] = p.SMIsMember(ctx, ShardKeys(itemID, h).Buyers, us...)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("buyers of item %d: %w", itemID, err)
	}
	var out []string
	for h, us := range byShard {
		for i, in := range cmds[h].Val() {
			if in {
				out = append(out, us[i].(string))
			}
		}
	}
	return out, nil
}

// BackInLine puts a shopper of the item's waiting room whose order failed back where they were: their
// place kept, let in again first when there is stock. An item without a room, or a shopper the room
// knew no purchase of, changes nothing. The order consumer calls it as it settles a refused order.
func (l *Line) BackInLine(ctx context.Context, itemID, userID int64) error {
	k := roomKeysOf(itemID)
	if err := unboughtScript.Run(ctx, l.rdb, []string{k.Room, k.Done, k.InFlight, k.Turns, k.Held, k.Places, k.Unseen}, userID).Err(); err != nil {
		return fmt.Errorf("put user %d back in the line of item %d: %w", userID, itemID, err)
	}
	return nil
}
