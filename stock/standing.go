package stock

import "time"

// What a shopper is told of their standing in a line (Told.State), as the contract names it.
const (
	LineOut     = "out"       // not in the line
	LineWaiting = "waiting"   // in the line, not let in yet
	LineTurn    = "your_turn" // let in: buying with the turn's path
	LineBought  = "bought"
	LineSoldOut = "sold_out" // nothing left to buy: the place is kept, in case units come back
	LineMissed  = "missed"   // the turn ended unused: joining again goes to the back
	LineEnded   = "ended"    // the sale is over
)

// Scene is what the standing rules read beside the shopper's place: the app's clock and the sale as
// this instance knows it.
type Scene struct {
	Now      time.Time
	Ends     time.Time  // the sale's end
	Paused   bool       // an admin has paused the sale
	PausedAt *time.Time // since when (a turn running then is held until the sale resumes)
	SoldOut  bool       // the item is known sold out (filled in by Watch from the flags)
}

// Told is a shopper's standing as the rules tell it.
type Told struct {
	State    string
	Ticket   string    // "" when out
	Place    int64     // 0: no place to show (out, or in the draw before it is written)
	Ahead    int64     // how many stand ahead (HasAhead)
	Wait     int64     // the wait's estimate in seconds (HasWait)
	HasAhead bool      // a placed shopper waiting, or held there sold out
	HasWait  bool      // a placed shopper waiting while there is stock
	Path     string    // the turn's purchase path (LineTurn)
	TurnEnds time.Time // the turn's end (LineTurn)

	SeedHash  string // the hash of the draw's seed, once the room is open
	Left      int64  // the stock left in the item's first shard, when LeftKnown
	LeftKnown bool   // read with the standing just now (false: answered from memory, or not loaded)

	inLine bool // waiting and not let in: the place is known without Redis until it is let in
}

// Tell decides what the shopper whose place is p is told, with the line as v last showed it. It is the
// waiting room's one rule book: a turn ending sold out keeps its place; a turn that ended a moment ago
// is still one for TurnGrace (another instance may accept its buy); a turn the pause interrupted is held
// until the sale resumes; a turn past its grace is missed.
func Tell(p Place, v RoomView, s Scene) Told {
	t := Told{State: LineOut}
	if !p.joined() {
		return t
	}
	t.Ticket, t.Place = p.Ticket, p.Place
	turn := p.Path != "" && p.Done == ""
	switch {
	case p.Bought || p.Done == TurnBought:
		t.State = LineBought
	case turn && s.Now.Before(p.TurnEnds) && s.SoldOut:
		t.State = LineSoldOut // a turn with nothing left to buy: the place is kept, as in line
	case turn && (s.Now.Before(p.TurnEnds.Add(TurnGrace)) || s.Paused && s.PausedAt != nil && p.TurnEnds.After(*s.PausedAt)):
		// Past its end, the page shows the turn with no time left until it is settled as missed. A turn
		// the pause interrupted ends later by the pause when the sale resumes.
		t.State, t.Path, t.TurnEnds = LineTurn, p.Path, p.TurnEnds.UTC()
	case turn && s.SoldOut:
		t.State = LineSoldOut // the turn ended with nothing to buy: held, the place kept
	case p.Done == TurnMissed || p.Path != "":
		t.State = LineMissed // missed, or past its grace and about to be settled so
	default:
		// A shadowed shopper's page looks like waiting; what it is told is never kept in memory (it waits
		// behind everyone, which the line's cursor does not say).
		t.inLine = !p.Shadowed
		t.wait(v, s.SoldOut)
		if p.Shadowed && p.Place <= v.Cursor {
			t.Ahead = p.ShadowAhead
			if t.HasWait {
				t.Wait = int64(float64(t.Ahead)/t.rate(v) + 0.5)
			}
		}
	}
	return t
}

// wait fills in the standing of a shopper in line who has not been let in: how many are ahead, and how
// long the line takes to reach them at the rate it lately moved.
func (t *Told) wait(v RoomView, soldOut bool) {
	t.State = LineWaiting
	if t.Place == 0 {
		return // placed when the draw is written
	}
	t.Ahead, t.HasAhead = max(t.Place-v.Cursor-1, 0), true
	if soldOut {
		t.State = LineSoldOut // the place is kept: if units come back, the line moves on
		return
	}
	t.Wait, t.HasWait = int64(float64(t.Ahead)/t.rate(v)+0.5), true
}

// rate is how fast the line lets in for the wait's estimate: as it lately moved, or when it was not seen
// moving yet, or stands still a moment (every turn taken, none done), as fast as it may move.
func (t *Told) rate(v RoomView) float64 {
	if !v.Measured || v.Rate < 0.01 {
		return float64(max(v.MaxRate, 1))
	}
	return v.Rate
}
