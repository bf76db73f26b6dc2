package stock

import (
	"context"
	"strconv"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
	"golang.org/x/sync/singleflight"

	"seckill/internal/memo"
)

// Watch is this instance's view of its waiting rooms, for the crowd's status polls: each room as last
// read (for a quarter of a second), how fast each line lately moved, and the shoppers waiting whose place
// is known. A poll is answered from it when the answer is known there (a shopper waiting behind the
// line's front, or before the draw), else with one Redis command (Line.Look: the shopper's look, which sees a turn let in).
type Watch struct {
	line  *Line
	flags *Flags
	rate  int // the line's most let in per second, for the wait estimate

	rooms  memo.Slots[int64, RoomView]
	lines  memo.Slots[int64, LineView]     // the rooms as the line's public document shows them
	flight singleflight.Group              // one read of a line at a time, however many ask
	rates  *expirable.LRU[int64, lineRate] // kept beyond the room's view
	places [64]memo.Map[placeKey, knownPlace]
}

// NewWatch returns an empty view of the lines on line, with the sold-out flags and the line's most let in
// per second.
func NewWatch(line *Line, flags *Flags, rate int) *Watch {
	w := &Watch{line: line, flags: flags, rate: rate}
	w.rates = expirable.NewLRU[int64, lineRate](maxRoomViews, nil, 10*time.Minute)
	w.rooms.Max = maxRoomViews
	w.lines.Max = maxRoomViews
	for i := range w.places {
		w.places[i].Max = maxKnownPlaces / len(w.places)
	}
	return w
}

// Bounds of the memory a Watch keeps.
const (
	maxRoomViews   = 4096
	maxKnownPlaces = 200_000 // a hundred thousand shoppers waiting, and room to spare
	roomViewTTL    = 250 * time.Millisecond
)

// RoomView is a room as last read, with the rate its line lately moved at.
type RoomView struct {
	Room
	Rate     float64 // shoppers let in per second lately
	Measured bool    // whether Rate was measured yet
	MaxRate  int     // the line's most let in per second: the estimate before it is seen moving
	read     time.Time
}

type lineRate struct {
	rate     float64   // shoppers let in per second lately
	measured bool      // whether rate was measured yet
	at       time.Time // when it was last measured, and how many had been let in then
	letIn    int64
}

type placeKey struct{ item, user int64 }

// knownPlace is a shopper waiting in line whose ticket and place are known here: a place never changes
// (joining again after a missed turn is known by the place being let in), so it needs no expiry.
type knownPlace struct {
	ticket string
	place  int64
}

// shard is the known places' shard of k: sharded for the crowd's polls; a full shard is emptied (those
// shoppers' next polls read Redis).
func (w *Watch) shard(k placeKey) *memo.Map[placeKey, knownPlace] {
	return &w.places[uint64(k.user)%uint64(len(w.places))]
}

// Standing tells the shopper their standing in the item's line: from memory when it is known there (a
// shopper waiting behind the front of the line, or before the draw, with the room read less than a
// quarter of a second ago), else with one Redis command.
func (w *Watch) Standing(ctx context.Context, itemID, userID int64, s Scene) (Told, error) {
	if !s.Now.Before(s.Ends) {
		return Told{State: LineEnded}, nil
	}
	s.SoldOut = w.flags.SoldOut(itemID)
	key := placeKey{itemID, userID}
	if room, ok := w.rooms.Get(itemID); ok && time.Since(room.read) < roomViewTTL {
		if k, ok := w.shard(key).Get(key); ok && (k.place == 0 && room.State != RoomDrawn || k.place > room.Cursor) {
			t := Tell(Place{Ticket: k.ticket, Place: k.place}, room, s)
			t.SeedHash = room.SeedHash
			return t, nil
		}
	}
	st, err := w.line.Look(ctx, itemID, userID)
	if err != nil {
		return Told{}, err
	}
	room := w.note(itemID, st.Room)
	t := Tell(st.Place, room, s)
	t.SeedHash, t.Left, t.LeftKnown = st.Room.SeedHash, st.Left, st.LeftKnown
	if t.inLine {
		w.shard(key).Add(key, knownPlace{ticket: st.Place.Ticket, place: st.Place.Place})
	}
	return t, nil
}

// StandingAt tells the shopper at a place they proved (a signed place: their ticket and place in the
// item's line) their standing: while the line has not reached the place, from the line's view (View: this
// instance's memory, or one read shared by every caller), else as Standing does.
func (w *Watch) StandingAt(ctx context.Context, itemID, userID int64, ticket string, place int64, s Scene) (Told, error) {
	if !s.Now.Before(s.Ends) {
		return Told{State: LineEnded}, nil
	}
	if v, err := w.View(ctx, itemID); err == nil && v.State == RoomDrawn && place > v.Cursor {
		s.SoldOut = w.flags.SoldOut(itemID)
		t := Tell(Place{Ticket: ticket, Place: place}, v.RoomView, s)
		t.SeedHash = v.SeedHash
		return t, nil
	}
	return w.Standing(ctx, itemID, userID, s)
}

// LineView is a line as its public document shows it: the room's view, how many are held and the stock
// left in its first shard, as last read.
type LineView struct {
	RoomView
	Held      int64
	Left      int64
	LeftKnown bool
}

// View answers the item's line as read less than a quarter of a second ago, or reads it (Line.LineOf):
// one read (one round trip) per item at a time, shared by every caller, so a crowd asking at once costs
// Redis one read a quarter of a second per instance. The read is the room's view for the status polls too.
func (w *Watch) View(ctx context.Context, itemID int64) (LineView, error) {
	if v, ok := w.lines.Get(itemID); ok && time.Since(v.read) < roomViewTTL {
		return v, nil
	}
	got, err, _ := w.flight.Do(strconv.FormatInt(itemID, 10), func() (any, error) {
		if v, ok := w.lines.Get(itemID); ok && time.Since(v.read) < roomViewTTL {
			return v, nil
		}
		st, err := w.line.LineOf(context.WithoutCancel(ctx), itemID) // shared: not ended by the first asker leaving
		if err != nil {
			return LineView{}, err
		}
		v := LineView{RoomView: w.note(itemID, st.Room), Held: st.Held, Left: st.Left, LeftKnown: st.LeftKnown}
		w.lines.Add(itemID, v)
		return v, nil
	})
	if err != nil {
		return LineView{}, err
	}
	return got.(LineView), nil
}

// Join puts the shopper in the item's line (Line.Join), and forgets what was known of their place.
func (w *Watch) Join(ctx context.Context, itemID, userID int64, win Window) (Joined, error) {
	j, err := w.line.Join(ctx, itemID, userID, win)
	if err == nil {
		key := placeKey{itemID, userID}
		w.shard(key).Remove(key)
	}
	return j, err
}

// note keeps the room as just read, with the rate its line lately moved at, for the polls of the next
// quarter of a second. The rate is measured over half a second or more, whenever a read comes (however
// long ago the last one was), and smoothed; its first measure is taken as it is.
func (w *Watch) note(itemID int64, r Room) RoomView {
	now := time.Now() // the wall clock: the rate is measured over elapsed time
	last, ok := w.rates.Peek(itemID)
	switch dt := now.Sub(last.at).Seconds(); {
	case !ok:
		w.rates.Add(itemID, lineRate{at: now, letIn: r.LetIn})
	case dt >= 0.5:
		measured := float64(r.LetIn-last.letIn) / dt
		rate := measured
		if last.measured {
			rate = 0.7*last.rate + 0.3*measured
		}
		last = lineRate{rate: rate, measured: true, at: now, letIn: r.LetIn}
		w.rates.Add(itemID, last)
	}
	v := RoomView{Room: r, Rate: last.rate, Measured: last.measured, MaxRate: w.rate, read: now}
	if r.State != "" {
		w.rooms.Add(itemID, v)
	}
	return v
}

// ReadAt is when the view was read from Redis: two views read at the same moment are the same read.
func (v RoomView) ReadAt() time.Time { return v.read }

// SoldOut reports whether the item is known sold out here (the flags the standing rules read). Memory only.
func (w *Watch) SoldOut(itemID int64) bool { return w.flags.SoldOut(itemID) }
