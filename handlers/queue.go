package handlers

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/hashicorp/golang-lru/v2/expirable"
	"golang.org/x/sync/singleflight"

	"seckill/captcha"
	"seckill/catalog"
	"seckill/errs"
	"seckill/models"
	"seckill/ratelimit"
	"seckill/stock"
)

// Queue serves the waiting room of queue sales: joining with a captcha, each shopper's standing, and the
// draw's public record. A status poll is answered from memory when the answer is known there (a shopper
// waiting behind the line's front, or before the draw), else with one Redis round trip; it never asks
// PostgreSQL.
type Queue struct {
	Catalog     *catalog.Catalog
	Ledger      *stock.Ledger
	Flags       *stock.Flags
	Stops       *catalog.Stops // the sales an admin has paused (in memory)
	Left        *stock.LeftCache
	Captchas    *captcha.Captchas
	Limits      *ratelimit.Shared
	Rate        int // the line's most let in per second, for the wait estimate
	RateLimitIP bool
	Now         func() time.Time

	once   sync.Once
	rooms  roomViews                       // each room as last read, for a quarter of a second
	rates  *expirable.LRU[int64, lineRate] // how fast each line moves, kept beyond the room's view
	places knownPlaces                     // shoppers whose standing is known without Redis
	times  saleTimes                       // each queue sale's two times, as answers write them
	draws  *expirable.LRU[int64, []byte]   // the answers of written draws (they never change)
	flight singleflight.Group              // one read of a draw's tickets at a time
}

type roomView struct {
	stock.Room
	rate     float64   // shoppers let in per second lately
	measured bool      // whether rate was measured yet
	read     time.Time // when it was read (the wall clock)
}

// memo is a map read under a read lock, of at most max entries (all forgotten when it is full): what the
// crowd's polls read on every request, where an LRU's one lock and clock read per get were most of the
// cost under load.
type memo[K comparable, V any] struct {
	mu  sync.RWMutex
	m   map[K]V
	max int
}

func (m *memo[K, V]) get(k K) (V, bool) {
	m.mu.RLock()
	v, ok := m.m[k]
	m.mu.RUnlock()
	return v, ok
}

func (m *memo[K, V]) add(k K, v V) {
	m.mu.Lock()
	if m.m == nil || len(m.m) >= m.max {
		m.m = make(map[K]V)
	}
	m.m[k] = v
	m.mu.Unlock()
}

func (m *memo[K, V]) remove(k K) {
	m.mu.Lock()
	delete(m.m, k)
	m.mu.Unlock()
}

// roomViews are the rooms as last read.
type roomViews struct{ memo[int64, roomView] }

// fresh answers the item's room if it was read less than roomViewTTL before now.
func (r *roomViews) fresh(itemID int64, now time.Time) (roomView, bool) {
	v, ok := r.get(itemID)
	return v, ok && now.Sub(v.read) < roomViewTTL
}

// knownPlaces are the shoppers waiting in line whose ticket and place are known here: a place never
// changes (joining again after a missed turn is known by the place being let in), so they need no
// expiry. Sharded for the crowd's polls; a full shard is emptied (those shoppers' next polls read Redis).
type knownPlaces struct {
	shards [64]memo[placeKey, knownPlace]
}

func (p *knownPlaces) shard(k placeKey) *memo[placeKey, knownPlace] {
	return &p.shards[uint64(k.user)%uint64(len(p.shards))]
}

func (p *knownPlaces) get(k placeKey) (knownPlace, bool) { return p.shard(k).get(k) }
func (p *knownPlaces) add(k placeKey, v knownPlace)      { p.shard(k).add(k, v) }
func (p *knownPlaces) remove(k placeKey)                 { p.shard(k).remove(k) }

type lineRate struct {
	rate     float64   // shoppers let in per second lately
	measured bool      // whether rate was measured yet
	at       time.Time // when it was last measured, and how many had been let in then
	letIn    int64
}

type placeKey struct{ item, user int64 }

type knownPlace struct {
	ticket string
	place  int64
}

// Bounds of the memory the waiting room keeps per instance.
const (
	maxRoomViews   = 4096
	maxKnownPlaces = 200_000 // a hundred thousand shoppers waiting, and room to spare
	maxDraws       = 64
	roomViewTTL    = 250 * time.Millisecond
)

func (h *Queue) init() {
	h.once.Do(func() {
		h.rates = expirable.NewLRU[int64, lineRate](maxRoomViews, nil, 10*time.Minute)
		h.rooms.max, h.times.max = maxRoomViews, maxRoomViews
		for i := range h.places.shards {
			h.places.shards[i].max = maxKnownPlaces / len(h.places.shards)
		}
		h.draws = expirable.NewLRU[int64, []byte](maxDraws, nil, 24*time.Hour)
	})
}

// QueueJSON is the contract's `queue`.
type QueueJSON struct {
	State        string     `json:"state"`
	Ticket       *string    `json:"ticket"`
	Position     *int64     `json:"position"`
	Ahead        *int64     `json:"ahead"`
	StockLeft    int64      `json:"stock_left"`
	WaitSeconds  *int64     `json:"wait_seconds"`
	Path         *string    `json:"path"`
	TurnEndsAt   *time.Time `json:"turn_ends_at"`
	QueueOpensAt *time.Time `json:"queue_opens_at"`
	StartsAt     time.Time  `json:"starts_at"`
	SeedHash     *string    `json:"seed_hash"`
	// Paused: an admin has paused the sale. The line keeps its order; no one is let in, and no turn can
	// buy, until it resumes.
	Paused     bool      `json:"paused"`
	ServerTime time.Time `json:"server_time"`
}

// Queue states, as the contract names them.
const (
	QueueOut     = "out"
	QueueWaiting = "waiting"
	QueueTurn    = "your_turn"
	QueueBought  = "bought"
	QueueSoldOut = "sold_out"
	QueueMissed  = "missed"
	QueueEnded   = "ended"
)

var (
	errNoRoom     = errs.Static(errs.NotFound, "this item has no waiting room")
	errFirstCome  = errs.Static(errs.FirstCome, "this item sells first come, first served: it has no waiting room")
	errRoomClosed = errs.Static(errs.QueueNotOpen, "the waiting room is not open yet")
	errUseQueue   = errs.Static(errs.Queue, "this item sells through its waiting room: join the line")
)

// queueItem answers the item and its activity when it sells through a waiting room.
func (h *Queue) queueItem(ctx context.Context, itemID int64) (*models.Item, *models.Activity, error) {
	it, a, err := h.Catalog.Item(ctx, itemID)
	if err != nil {
		return nil, nil, err
	}
	if a.SaleMode != models.SaleQueue || a.QueueOpensAt == nil {
		return nil, nil, errFirstCome
	}
	// The catalog knows the item's shard count: the ledger need not ask Redis for it (a poll before the
	// sale is loaded would otherwise cost a command more).
	h.Ledger.RememberOnce(it.ID, it.StockShards)
	return it, a, nil
}

func window(a *models.Activity) stock.Window {
	return stock.Window{Opens: *a.QueueOpensAt, Starts: a.StartsAt, Ends: a.EndsAt}
}

// Join puts the caller in the item's line, after a captcha.
func (h *Queue) Join(c *fiber.Ctx) error {
	h.init()
	ctx := c.UserContext()
	s, _ := SessionOf(c)
	itemID, err := pathID(c, "id", "item")
	if err != nil {
		return err
	}
	in, err := readCaptcha(c)
	if err != nil {
		return err
	}
	it, a, err := h.queueItem(ctx, itemID)
	if err != nil {
		return err
	}
	now := h.Now()
	switch {
	case now.Before(*a.QueueOpensAt):
		return errRoomClosed
	case !now.Before(a.EndsAt):
		return stock.ErrEnded
	case h.Stops.Ended(itemID):
		return stock.ErrEnded
	case h.Stops.Paused(itemID):
		return ErrPaused
	}
	if err := passCaptcha(c, h.Limits, h.Captchas, h.RateLimitIP, s.UserID, in); err != nil {
		return err
	}
	if _, err := h.Ledger.Join(ctx, itemID, s.UserID, window(a)); err != nil {
		return err
	}
	h.places.remove(placeKey{itemID, s.UserID})
	return h.answer(c, it, a, s.UserID)
}

// Status answers the caller's standing in the item's line.
func (h *Queue) Status(c *fiber.Ctx) error {
	h.init()
	s, _ := SessionOf(c)
	itemID, err := pathID(c, "id", "item")
	if err != nil {
		return err
	}
	it, a, err := h.queueItem(c.UserContext(), itemID)
	if errs.Is(err, errs.FirstCome) {
		return errNoRoom
	}
	if err != nil {
		return err
	}
	return h.answer(c, it, a, s.UserID)
}

// answer builds the caller's standing: from memory when it is known there (a shopper waiting behind
// the front of the line, or before the draw, with the room read less than a quarter of a second ago),
// else with one Redis command.
func (h *Queue) answer(c *fiber.Ctx, it *models.Item, a *models.Activity, userID int64) error {
	ctx := c.UserContext()
	now := h.Now()
	out := QueueJSON{State: QueueOut, QueueOpensAt: a.QueueOpensAt, StartsAt: a.StartsAt.UTC(), ServerTime: now.UTC(), Paused: h.Stops.Paused(it.ID)}
	c.Set(fiber.HeaderCacheControl, "no-store")
	if !now.Before(a.EndsAt) {
		out.State = QueueEnded
		out.StockLeft = h.left(it, 0, false)
		return sendQueue(c, &out, h.times.of(a))
	}
	key := placeKey{it.ID, userID}
	if room, ok := h.rooms.fresh(it.ID, time.Now()); ok {
		if k, ok := h.places.get(key); ok && (k.place == 0 && room.State != stock.RoomDrawn || k.place > room.Cursor) {
			out.StockLeft = h.left(it, 0, false)
			out.SeedHash = seedHash(room.Room)
			h.waiting(&out, room, k.ticket, k.place, it.ID)
			return sendQueue(c, &out, h.times.of(a))
		}
	}
	st, err := h.Ledger.StandingOf(ctx, it.ID, userID)
	if err != nil {
		return err
	}
	room := h.noteRoom(it.ID, st.Room)
	out.StockLeft = h.left(it, st.Left, st.LeftKnown)
	out.SeedHash = seedHash(st.Room)
	p := st.Place
	switch {
	case !p.In():
	case p.Bought || p.Done == "bought":
		out.State = QueueBought
		out.Ticket, out.Position = &p.Ticket, nonZero(p.Place)
	case p.Path != "" && p.Done == "" && now.Before(p.TurnEnds) && h.Flags.SoldOut(it.ID):
		out.State = QueueSoldOut // a turn with nothing left to buy: the place is kept, as in line
		out.Ticket, out.Position = &p.Ticket, nonZero(p.Place)
	case p.Path != "" && p.Done == "" && (now.Before(p.TurnEnds.Add(stock.TurnGrace)) ||
		out.Paused && a.PausedAt != nil && p.TurnEnds.After(*a.PausedAt)):
		// A turn that ended a moment ago is still one (another instance may accept its buy) until it is
		// settled as missed: the page shows it with no time left. A turn the pause interrupted is held
		// until it resumes, when it ends later by the pause.
		out.State = QueueTurn
		out.Ticket, out.Position, out.Path = &p.Ticket, nonZero(p.Place), &p.Path
		ends := p.TurnEnds.UTC()
		out.TurnEndsAt = &ends
	case p.Path != "" && p.Done == "" && h.Flags.SoldOut(it.ID):
		out.State = QueueSoldOut // the turn ended with nothing to buy: held, the place kept
		out.Ticket, out.Position = &p.Ticket, nonZero(p.Place)
	case p.Done == "missed" || p.Path != "":
		// Missed, or past its grace and about to be settled so: joining again goes to the back now.
		out.State = QueueMissed
		out.Ticket, out.Position = &p.Ticket, nonZero(p.Place)
	default:
		h.waiting(&out, room, p.Ticket, p.Place, it.ID)
		h.places.add(key, knownPlace{ticket: p.Ticket, place: p.Place})
	}
	return sendQueue(c, &out, h.times.of(a))
}

// left is the item's stock left: fresh from Redis when read with the standing (a whole item's count
// unless it is split), else as the stock-left cache last read it, else as the catalog knows it.
func (h *Queue) left(it *models.Item, fresh int64, read bool) int64 {
	if read && max(it.StockShards, 1) == 1 {
		h.Left.Note(it.ID, fresh)
		return max(fresh, 0)
	}
	if left, ok := h.Left.Peek(it.ID); ok {
		return max(left, 0)
	}
	return max(it.StockTotal-it.StockSold, 0)
}

func seedHash(r stock.Room) *string {
	if r.SeedHash == "" {
		return nil
	}
	return &r.SeedHash
}

// waiting fills in the standing of a shopper in line who has not been let in.
func (h *Queue) waiting(out *QueueJSON, room roomView, ticket string, place, itemID int64) {
	out.State, out.Ticket = QueueWaiting, &ticket
	if place == 0 {
		return // placed when the draw is written
	}
	ahead := max(place-room.Cursor-1, 0)
	out.Position, out.Ahead = &place, &ahead
	if h.Flags.SoldOut(itemID) {
		out.State = QueueSoldOut // the place is kept: if units come back, the line moves on
		return
	}
	rate := room.rate
	if !room.measured || rate < 0.01 {
		// Not seen moving yet, or standing still a moment (every turn taken, none done): as fast as it
		// may move, the rate it is let in at when turns come free.
		rate = float64(max(h.Rate, 1))
	}
	wait := int64(float64(ahead)/rate + 0.5)
	out.WaitSeconds = &wait
}

func nonZero(n int64) *int64 {
	if n == 0 {
		return nil
	}
	return &n
}

// noteRoom keeps the room as just read, with the rate its line lately moved at, for the polls of the
// next quarter of a second. The rate is measured over half a second or more, whenever a read comes
// (however long ago the last one was), and smoothed; its first measure is taken as it is.
func (h *Queue) noteRoom(itemID int64, r stock.Room) roomView {
	now := time.Now() // the wall clock: the rate is measured over elapsed time
	last, ok := h.rates.Peek(itemID)
	switch dt := now.Sub(last.at).Seconds(); {
	case !ok:
		h.rates.Add(itemID, lineRate{at: now, letIn: r.LetIn})
	case dt >= 0.5:
		measured := float64(r.LetIn-last.letIn) / dt
		rate := measured
		if last.measured {
			rate = 0.7*last.rate + 0.3*measured
		}
		last = lineRate{rate: rate, measured: true, at: now, letIn: r.LetIn}
		h.rates.Add(itemID, last)
	}
	v := roomView{Room: r, rate: last.rate, measured: last.measured, read: now}
	if r.State != "" {
		h.rooms.add(itemID, v)
	}
	return v
}

// DrawJSON is the contract's `draw`.
type DrawJSON struct {
	ItemID   int64      `json:"item_id"`
	SeedHash *string    `json:"seed_hash"`
	Seed     *string    `json:"seed"`
	DrawnAt  *time.Time `json:"drawn_at"`
	Entrants int64      `json:"entrants"`
	Tickets  []string   `json:"tickets"`
}

// Draw answers the draw's public record: the seed's hash from the room's opening, and at the start the
// seed and every ticket in drawn order, so that anyone can check the order.
func (h *Queue) Draw(c *fiber.Ctx) error {
	h.init()
	ctx := c.UserContext()
	itemID, err := pathID(c, "id", "item")
	if err != nil {
		return err
	}
	_, a, err := h.queueItem(ctx, itemID)
	if errs.Is(err, errs.FirstCome) {
		return errNoRoom
	}
	if err != nil {
		return err
	}
	out := DrawJSON{ItemID: itemID}
	if h.Now().Before(*a.QueueOpensAt) {
		return c.JSON(out)
	}
	r, err := h.Ledger.RoomOf(ctx, itemID)
	if err == nil && r.State == "" {
		if err = h.Ledger.OpenRoom(ctx, itemID, window(a)); err == nil {
			r, err = h.Ledger.RoomOf(ctx, itemID)
		}
	}
	if err != nil {
		return err
	}
	out.SeedHash, out.Entrants = &r.SeedHash, r.Entrants
	if r.State == stock.RoomDrawn {
		// A written draw never changes: its answer is made once per instance and kept.
		v, err, _ := h.flight.Do("draw:"+strconv.FormatInt(itemID, 10), func() (any, error) {
			if body, ok := h.draws.Get(itemID); ok {
				return body, nil
			}
			tickets, err := h.Ledger.DrawnTickets(context.WithoutCancel(ctx), itemID)
			if err != nil {
				return nil, err
			}
			drawn := r.DrawnAt
			out.Seed, out.DrawnAt, out.Tickets = &r.Seed, &drawn, tickets
			body, err := json.Marshal(out)
			if err != nil {
				return nil, err
			}
			h.draws.Add(itemID, body)
			return body, nil
		})
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderCacheControl, "public, max-age=3600")
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
		return c.Send(v.([]byte))
	}
	c.Set(fiber.HeaderCacheControl, "public, max-age=1")
	return c.JSON(out)
}

// sendQueue answers q as JSON, written by hand: a status poll is the crowd's most frequent request, and
// its fields are numbers, times and hex or fixed words that need no escaping (TestQueueJSONByHand holds it
// to encoding/json's answer). times are the sale's two times as appendSaleTimes writes them, made once
// per sale (nil: written here).
func sendQueue(c *fiber.Ctx, q *QueueJSON, times []byte) error {
	b := make([]byte, 0, 384)
	b = append(b, `{"state":"`...)
	b = append(b, q.State...)
	b = append(b, '"')
	b = appendStr(b, `,"ticket":`, q.Ticket)
	b = appendInt(b, `,"position":`, q.Position)
	b = appendInt(b, `,"ahead":`, q.Ahead)
	b = append(b, `,"stock_left":`...)
	b = strconv.AppendInt(b, q.StockLeft, 10)
	b = appendInt(b, `,"wait_seconds":`, q.WaitSeconds)
	b = appendStr(b, `,"path":`, q.Path)
	b = appendTime(b, `,"turn_ends_at":`, q.TurnEndsAt)
	if times != nil {
		b = append(b, times...)
	} else {
		b = appendSaleTimes(b, q.QueueOpensAt, q.StartsAt)
	}
	b = appendStr(b, `,"seed_hash":`, q.SeedHash)
	b = append(b, `,"paused":`...)
	b = strconv.AppendBool(b, q.Paused)
	b = appendTime(b, `,"server_time":`, &q.ServerTime)
	b = append(b, '}')
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Send(b)
}

func appendSaleTimes(b []byte, opens *time.Time, starts time.Time) []byte {
	b = appendTime(b, `,"queue_opens_at":`, opens)
	return appendTime(b, `,"starts_at":`, &starts)
}

// saleTimes are a queue sale's queue_opens_at and starts_at as a status answer writes them, written once
// per sale (an approved sale's times never change).
type saleTimes struct{ memo[int64, saleTimesText] }

type saleTimesText struct {
	opens, starts time.Time
	text          []byte
}

func (t *saleTimes) of(a *models.Activity) []byte {
	if v, ok := t.get(a.ID); ok && v.opens.Equal(*a.QueueOpensAt) && v.starts.Equal(a.StartsAt) {
		return v.text
	}
	v := saleTimesText{opens: *a.QueueOpensAt, starts: a.StartsAt, text: appendSaleTimes(nil, a.QueueOpensAt, a.StartsAt.UTC())}
	t.add(a.ID, v)
	return v.text
}

func appendStr(b []byte, name string, v *string) []byte {
	b = append(b, name...)
	if v == nil {
		return append(b, "null"...)
	}
	b = append(b, '"')
	b = append(b, *v...)
	return append(b, '"')
}

func appendInt(b []byte, name string, v *int64) []byte {
	b = append(b, name...)
	if v == nil {
		return append(b, "null"...)
	}
	return strconv.AppendInt(b, *v, 10)
}

func appendTime(b []byte, name string, v *time.Time) []byte {
	b = append(b, name...)
	if v == nil {
		return append(b, "null"...)
	}
	b = append(b, '"')
	b = v.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}
