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
	"gorm.io/gorm"

	"seckill/auth"
	"seckill/captcha"
	"seckill/catalog"
	"seckill/errs"
	"seckill/internal/memo"
	"seckill/models"
	"seckill/pow"
	"seckill/ratelimit"
	"seckill/sift"
	"seckill/stock"
)

// Queue serves the waiting room of queue sales: joining with a captcha, each shopper's standing, and the
// draw's public record. Where a shopper stands is the line's to tell (stock.Watch, stock.Tell): a status
// poll is answered from this instance's memory when it can be, else with one Redis round trip; it never
// asks PostgreSQL. The handler parses, asks, and writes the answer.
type Queue struct {
	Catalog     *catalog.Catalog
	Ledger      *stock.Ledger // told the item's shard count, which the catalog knows
	Line        *stock.Line
	Watch       *stock.Watch
	Stops       *catalog.Stops // the sales an admin has paused (in memory)
	Left        *stock.LeftCache
	Captchas    *captcha.Captchas
	Work        *pow.Work // the proof of work a join carries, checked before the captcha
	Limits      *ratelimit.Shared
	RateLimitIP bool
	Places      *auth.Places       // signs a shopper's place (place_token), checks X-Line-Place
	Claims      *stock.Claims      // one entrant per delivery address and phone, where the sale's rule says so
	Refusals    *stock.Refusals    // the rules' refusals, counted for the fairness report
	Sifter      *stock.Sifter      // keeps every join's traces (device, address prefix, refusal) for the shadow line
	Devices     *auth.Devices      // reads the caller's device id
	DB          *gorm.DB           // the entrants' address books, read when a join carries no address card
	Cards       *auth.AddressCards // the address cards the address book signed: a join that carries one reads no address
	Turn        time.Duration      // how long a turn lasts (QUEUE_TURN), for the line's document
	Now         func() time.Time

	once   sync.Once
	times  saleTimes                     // each queue sale's two times, as answers write them
	draws  *expirable.LRU[int64, []byte] // the answers of written draws (they never change)
	flight singleflight.Group            // one read of a draw's tickets at a time; one line document made at a time
	lines  memo.Slots[int64, lineDoc]    // each line's public document, as last made
}

// Bounds of the memory the handler keeps per instance.
const (
	maxSaleTimes = 4096
	maxDraws     = 64
)

func (h *Queue) init() {
	h.once.Do(func() {
		h.times.Max = maxSaleTimes
		h.draws = expirable.NewLRU[int64, []byte](maxDraws, nil, 24*time.Hour)
		h.lines.Max = maxSaleTimes
	})
}

// queueJSON is the contract's `queue`.
type queueJSON struct {
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
	Paused bool `json:"paused"`
	// PlaceToken is the caller's place, signed (null until the place is known): sent back in X-Line-Place,
	// any instance answers a shopper the line has not reached from memory.
	PlaceToken *string   `json:"place_token"`
	ServerTime time.Time `json:"server_time"`
	// Unconfirmed: a join's answer whose place the Redis replicas had not acknowledged in time (issue 36);
	// written only when true.
	Unconfirmed bool `json:"unconfirmed,omitempty"`
}

var (
	errNoRoom     = errs.Static(errs.NotFound, "this item has no waiting room")
	errFirstCome  = errs.Static(errs.FirstCome, "this item sells first come, first served: it has no waiting room")
	errRoomClosed = errs.Static(errs.QueueNotOpen, "the waiting room is not open yet")
	errUseQueue   = errs.Static(errs.Queue, "this item sells through its waiting room: join the line")
	errBadPlace   = errs.Static(errs.BadPlace, "the "+PlaceHeader+" header is not a place signed for you in this item's line")
)

// PlaceHeader carries a shopper's signed place (the queue answer's place_token) on a status poll.
const PlaceHeader = "X-Line-Place"

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
	h.Ledger.SetShardsIfUnknown(it.ID, it.StockShards)
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
	var in joinInput
	if err := parseJSON(c, &in); err != nil {
		return err
	}
	if err := requireCaptcha(in.CaptchaID, in.CaptchaAnswer); err != nil {
		return err
	}
	it, a, err := h.queueItem(ctx, itemID)
	if err != nil {
		return err
	}
	if err := mayTakePart(&s, a); err != nil {
		return h.refused(c, itemID, a, s.UserID, err)
	}
	now := h.Now()
	switch {
	case now.Before(*a.QueueOpensAt):
		return errRoomClosed
	case !now.Before(a.EndsAt):
		return stock.ErrEnded
	}
	if err := h.Stops.Check(itemID); err != nil {
		return err
	}
	// The proof of work first: every look at an address costs one. The address is checked before the
	// captcha, which a refusal leaves usable (for another address), and claimed after it: a join that
	// cannot pass the captcha claims nothing.
	if err := h.Work.Verify(ctx, in.Altcha, joinAsk(c, itemID, s.UserID)); err != nil {
		return err
	}
	keys, err := h.entrantAddress(c, a, s.UserID, in.AddressID, in.AddressCard)
	if err != nil {
		return h.refused(c, itemID, a, s.UserID, err)
	}
	if err := passCaptcha(c, h.Limits, h.Captchas, h.RateLimitIP, s.UserID, in.captchaInput); err != nil {
		return err
	}
	if keys != nil {
		if err := h.Claims.Claim(ctx, a, s.UserID, *keys); err != nil {
			return h.refused(c, itemID, a, s.UserID, probed(ctx, h.Limits, s.UserID, err))
		}
	}
	j, err := h.Watch.Join(ctx, itemID, s.UserID, window(a))
	if err != nil {
		return err
	}
	h.note(c, itemID, a, s.UserID, "")
	// A place the Redis replicas did not acknowledge in time is on the master only: the answer says so
	// (unconfirmed), and the page does not tell the shopper they are in line as a promise.
	return h.answerAt(c, it, a, s.UserID, proven{unconfirmed: !j.Confirmed})
}

// refused counts a rule's refusal of the caller's join in the item's report and keeps it as evidence
// (a refused join is a trace of bulk: the accounts a scalper could not get in), and answers it.
func (h *Queue) refused(c *fiber.Ctx, itemID int64, a *models.Activity, userID int64, err error) error {
	if code := errs.Code(err); code == errs.AddressLimit || code == errs.NotEligible {
		h.note(c, itemID, a, userID, code)
	}
	return counted(c.UserContext(), h.Refusals, itemID, a, userID, err)
}

// note keeps the caller's join of the item's line (refused by the rule named, or "" when it joined) as
// evidence for the shadow line: the device and the address prefix it came from.
func (h *Queue) note(c *fiber.Ctx, itemID int64, a *models.Activity, userID int64, refused string) {
	if h.Sifter == nil {
		return
	}
	h.Sifter.Note(c.UserContext(), itemID, sift.Join{User: userID, Device: deviceOf(c, h.Devices), Prefix: pow.Prefix(c.IP()),
		Refused: refused}, a.EndsAt)
}

// joinInput is a join's body: the captcha, and the delivery address where the sale's rule asks for one,
// with its card from the address book when the page has it.
type joinInput struct {
	captchaInput
	AddressID   int64  `json:"address_id"`
	AddressCard string `json:"address_card"`
}

// entrantAddress answers the claim keys of the caller's address for the join when the sale has one
// entrant per address (nil when it has not), refusing a missing or unknown address (400,
// fields.address_id) and one that another entrant gave (address_limit), without claiming it. The keys
// come from the address's card when the join carries one signed for this user and address, else from the
// address book (one primary-key read); a card that does not verify is not trusted and the book is read.
func (h *Queue) entrantAddress(c *fiber.Ctx, a *models.Activity, userID, addressID int64, card string) (*stock.ClaimKeys, error) {
	if !a.RuleOnePerAddress {
		return nil, nil
	}
	// Past the probes an hour, every address is answered alike (not "taken" for some, "free" for others).
	if err := probesLeft(c.UserContext(), h.Limits, userID); err != nil {
		return nil, err
	}
	if addressID <= 0 {
		return nil, errs.Bad(errs.W("address_id", "choose_address"))
	}
	var keys stock.ClaimKeys
	ok := false
	if card != "" && h.Cards != nil {
		keys.Place, keys.Phone, ok = h.Cards.Verify(card, userID, addressID)
	}
	if !ok {
		addr, err := models.AddressOfUser(c.UserContext(), h.DB, userID, addressID)
		if errs.Is(err, errs.NotFound) {
			return nil, errs.Bad(errs.W("address_id", "choose_address"))
		}
		if err != nil {
			return nil, err
		}
		keys = h.Claims.KeysOf(addr.Delivery)
	}
	if err := h.Claims.Check(c.UserContext(), a, userID, keys); err != nil {
		return nil, probed(c.UserContext(), h.Limits, userID, err)
	}
	return &keys, nil
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
	if tok := c.Get(PlaceHeader); tok != "" {
		ticket, place, ok := h.Places.Verify(tok, itemID, s.UserID)
		if !ok {
			return errBadPlace
		}
		return h.answerAt(c, it, a, s.UserID, proven{ticket: ticket, place: place, token: tok})
	}
	return h.answer(c, it, a, s.UserID)
}

// answer writes the caller's standing, as the line tells it.
func (h *Queue) answer(c *fiber.Ctx, it *models.Item, a *models.Activity, userID int64) error {
	return h.answerAt(c, it, a, userID, proven{})
}

// proven is the place a poll proved with its token (X-Line-Place); none when place is 0.
type proven struct {
	ticket string
	place  int64
	token  string
	// unconfirmed: the answer of a join the Redis replicas did not acknowledge in time (not a proof).
	unconfirmed bool
}

// answerAt writes the caller's standing, as the line tells it: at the place they proved (place > 0), from
// memory while the line has not reached it.
func (h *Queue) answerAt(c *fiber.Ctx, it *models.Item, a *models.Activity, userID int64, at proven) error {
	now := h.Now()
	paused := h.Stops.Paused(it.ID) // no-store: every JSON answer's unless said otherwise (app's front)
	scene := stock.Scene{Now: now, Ends: a.EndsAt, Paused: paused, PausedAt: a.PausedAt}
	var t stock.Told
	var err error
	if at.place > 0 {
		t, err = h.Watch.StandingAt(c.UserContext(), it.ID, userID, at.ticket, at.place, scene)
	} else {
		t, err = h.Watch.Standing(c.UserContext(), it.ID, userID, scene)
	}
	if err != nil {
		return err
	}
	out := queueJSON{State: t.State, QueueOpensAt: a.QueueOpensAt, StartsAt: a.StartsAt.UTC(), ServerTime: now.UTC(), Paused: paused,
		StockLeft: h.left(it, t.Left, t.LeftKnown), SeedHash: nonEmpty(&t.SeedHash), Unconfirmed: at.unconfirmed}
	switch t.State {
	case stock.LineOut, stock.LineEnded:
	default:
		out.Ticket, out.Position = &t.Ticket, nonZero(t.Place)
		switch {
		case t.Place > 0 && t.Place == at.place && t.Ticket == at.ticket:
			out.PlaceToken = &at.token // the token the poll proved its place with: the same place signs the same
		case t.Place > 0:
			if tok := h.Places.Sign(it.ID, userID, t.Ticket, t.Place); tok != "" {
				out.PlaceToken = &tok
			}
		}
	}
	if t.HasAhead {
		out.Ahead = &t.Ahead
	}
	if t.HasWait {
		out.WaitSeconds = &t.Wait
	}
	if t.State == stock.LineTurn {
		out.Path, out.TurnEndsAt = &t.Path, &t.TurnEnds
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

func nonEmpty(s *string) *string {
	if *s == "" {
		return nil
	}
	return s
}

func nonZero(n int64) *int64 {
	if n == 0 {
		return nil
	}
	return &n
}

// drawJSON is the contract's `draw`.
type drawJSON struct {
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
	out := drawJSON{ItemID: itemID}
	if h.Now().Before(*a.QueueOpensAt) {
		return c.JSON(out)
	}
	r, err := h.Line.RoomOf(ctx, itemID)
	if err == nil && r.State == "" {
		if err = h.Line.OpenRoom(ctx, itemID, window(a)); err == nil {
			r, err = h.Line.RoomOf(ctx, itemID)
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
			tickets, err := h.Line.DrawnTickets(context.WithoutCancel(ctx), itemID)
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
		setCache(c, cachePublicHour)
		setJSON(c)
		return c.Send(v.([]byte))
	}
	setCache(c, cachePublicSecond)
	return c.JSON(out)
}

// sendQueue answers q as JSON, written by hand: a status poll is the crowd's most frequent request, and
// its fields are numbers, times and hex, base64url or fixed words that need no escaping
// (TestQueueJSONByHand holds it to encoding/json's answer). times are the sale's two times as
// appendSaleTimes writes them, made once per sale (nil: written here).
func sendQueue(c *fiber.Ctx, q *queueJSON, times []byte) error {
	buf := queueBodies.Get().(*[]byte)
	b := (*buf)[:0]
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
	b = appendStr(b, `,"place_token":`, q.PlaceToken)
	b = appendTime(b, `,"server_time":`, &q.ServerTime)
	if q.Unconfirmed {
		b = append(b, `,"unconfirmed":true`...)
	}
	b = append(b, '}')
	setJSON(c)
	c.Response().SetBody(b) // a copy (Send would keep b, which goes back to the pool)
	*buf = b[:0]
	queueBodies.Put(buf)
	return nil
}

// queueBodies are the buffers status answers are written in (a place token and a seed hash make one
// about 500 bytes): the answer takes a copy, the buffer serves the next one.
var queueBodies = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

func appendSaleTimes(b []byte, opens *time.Time, starts time.Time) []byte {
	b = appendTime(b, `,"queue_opens_at":`, opens)
	return appendTime(b, `,"starts_at":`, &starts)
}

// saleTimes are a queue sale's queue_opens_at and starts_at as a status answer writes them, written once
// per sale (an approved sale's times never change).
type saleTimes struct {
	memo.Slots[int64, saleTimesText]
}

type saleTimesText struct {
	opens, starts time.Time
	text          []byte
}

func (t *saleTimes) of(a *models.Activity) []byte {
	if v, ok := t.Get(a.ID); ok && v.opens.Equal(*a.QueueOpensAt) && v.starts.Equal(a.StartsAt) {
		return v.text
	}
	v := saleTimesText{opens: *a.QueueOpensAt, starts: a.StartsAt, text: appendSaleTimes(nil, a.QueueOpensAt, a.StartsAt.UTC())}
	t.Add(a.ID, v)
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
