package handlers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"seckill/errs"
	"seckill/models"
	"seckill/stock"
)

// The states of a line as its public document tells them (the contract's "The line's public state").
const (
	LineBeforeOpen = "before_open" // the room opens later
	LineOpen       = "open"        // joining the draw, before the start
	LineDrawing    = "drawing"     // the start has passed; the draw is being written
	LineMoving     = "moving"      // drawn: the line is let in from the front
	LinePaused     = "paused"      // an admin paused the sale: nobody is let in, turns are held
	LineSoldOut    = "sold_out"    // nothing left: places are kept in case units come back
	LineEnded      = "ended"
)

// lineJSON is the line's public document: the same for every caller.
type lineJSON struct {
	ItemID      int64   `json:"item_id"`
	State       string  `json:"state"`
	LetIn       int64   `json:"let_in"`
	StockLeft   int64   `json:"stock_left"`
	SoldOut     bool    `json:"sold_out"`
	Rate        float64 `json:"rate"`
	Drawn       bool    `json:"drawn"`
	Entrants    int64   `json:"entrants"` // in the draw (before it is closed: joined so far)
	Joined      int64   `json:"joined"`   // joined the line: the draw's entrants and who joined after the start
	Readmitted  int64   `json:"readmitted"`
	Held        int64   `json:"held"`
	TurnSeconds int64   `json:"turn_seconds"`
}

// lineDoc is a line's public document as last made: the body and its ETag, served to everyone until the
// line is read again.
type lineDoc struct {
	body []byte
	etag string
	view time.Time // when the line's view it was made from was read (stock.RoomView.ReadAt)
}

// PublicLine answers the line's public document: how far the line has been let in, the stock left, whether it
// is sold out, the rate, the draw's state, and the re-admissions below the front. It needs no session and
// sets no cookie; it is answered from this instance's memory (one Redis read per item a quarter of a
// second at most), cacheable for a second by anyone, with an ETag made from its content, so that every
// instance gives the same ETag for the same line.
func (h *Queue) PublicLine(c *fiber.Ctx) error {
	h.init()
	ctx := c.UserContext()
	itemID, err := pathID(c, "id", "item")
	if err != nil {
		return err
	}
	it, a, err := h.queueItem(ctx, itemID)
	if errs.Is(err, errs.FirstCome) {
		return errNoRoom
	}
	if err != nil {
		return err
	}
	d, err := h.lineDocOf(ctx, it, a)
	if err != nil {
		return err
	}
	setCache(c, cachePublicSecond)
	c.Set(fiber.HeaderETag, d.etag)
	if etagMatches(c.Get(fiber.HeaderIfNoneMatch), d.etag) {
		return c.SendStatus(fiber.StatusNotModified)
	}
	setJSON(c)
	return c.Send(d.body)
}

// lineDocOf answers the item's document as made from the line's current view (Watch.View, read at most
// about four times a second per item), or makes it from that view: once per view, one at a time per item,
// however many ask. The document is never older than the view it shows.
func (h *Queue) lineDocOf(ctx context.Context, it *models.Item, a *models.Activity) (lineDoc, error) {
	view, err := h.Watch.View(ctx, it.ID)
	if err != nil {
		return lineDoc{}, err
	}
	if d, ok := h.lines.Get(it.ID); ok && d.view.Equal(view.ReadAt()) {
		return d, nil
	}
	v, err, _ := h.flight.Do("line:"+strconv.FormatInt(it.ID, 10), func() (any, error) {
		if d, ok := h.lines.Get(it.ID); ok && d.view.Equal(view.ReadAt()) {
			return d, nil
		}
		d, err := h.makeLineDoc(ctx, it, a, view)
		if err != nil {
			return lineDoc{}, err
		}
		h.lines.Add(it.ID, d)
		return d, nil
	})
	if err != nil {
		return lineDoc{}, err
	}
	return v.(lineDoc), nil
}

// makeLineDoc writes the document of the line as v shows it, with the sale's window, the pause and the
// sold-out flag as this instance knows them now.
func (h *Queue) makeLineDoc(ctx context.Context, it *models.Item, a *models.Activity, v stock.LineView) (lineDoc, error) {
	now := h.Now()
	doc := lineJSON{ItemID: it.ID, LetIn: v.Cursor, SoldOut: h.Watch.SoldOut(it.ID), Rate: lineRate(v.RoomView),
		Drawn: v.State == stock.RoomDrawn, Entrants: v.Entrants, Joined: v.Joined(), Readmitted: v.Readmitted, Held: v.Held, TurnSeconds: int64(h.Turn / time.Second)}
	doc.State = lineState(now, a, doc.Drawn, h.Stops.Ended(it.ID), h.Stops.Paused(it.ID), doc.SoldOut)
	doc.StockLeft = h.lineLeft(ctx, it, v)
	content, err := json.Marshal(doc)
	if err != nil {
		return lineDoc{}, err
	}
	// The ETag is the content's alone: server_time, the one field that differs from instance to instance
	// for the same line, is left out of it.
	sum := sha256.Sum256(content)
	body := make([]byte, 0, len(content)+48)
	body = append(body, content[:len(content)-1]...)
	body = appendTime(body, `,"server_time":`, &now)
	body = append(body, '}')
	return lineDoc{body: body, etag: `"` + hex.EncodeToString(sum[:16]) + `"`, view: v.ReadAt()}, nil
}

// lineState is the line's state as the document names it. An end (the window's, or an admin's) comes
// first, then a pause, then the window and the stock, then the draw.
func lineState(now time.Time, a *models.Activity, drawn, ended, paused, soldOut bool) string {
	switch {
	case ended || !now.Before(a.EndsAt):
		return LineEnded
	case paused:
		return LinePaused
	case a.QueueOpensAt != nil && now.Before(*a.QueueOpensAt):
		return LineBeforeOpen
	case soldOut:
		return LineSoldOut
	case drawn:
		return LineMoving
	case !now.Before(a.StartsAt):
		return LineDrawing
	}
	return LineOpen
}

// lineRate is the rate a page divides by for its wait: the line's as lately measured, or, until it is
// seen moving, the most it may be let in at (as stock.Tell estimates), to two significant digits (an
// estimate needs no more): instances that each measured the line a hair apart mostly write the same
// document, and so the same ETag.
func lineRate(v stock.RoomView) float64 {
	r := v.Rate
	if !v.Measured || r < 0.01 {
		r = float64(max(v.MaxRate, 1))
	}
	e := math.Floor(math.Log10(r)) - 1
	if e < 0 {
		s := math.Pow(10, -e)
		return math.Round(r*s) / s
	}
	s := math.Pow(10, e)
	return math.Round(r/s) * s
}

// lineLeft is the item's stock left: as read with the line (the whole item's unless it is split), else
// from the stock-left cache, else as the catalog knows it.
func (h *Queue) lineLeft(ctx context.Context, it *models.Item, v stock.LineView) int64 {
	if v.LeftKnown && max(it.StockShards, 1) == 1 {
		h.Left.Note(it.ID, v.Left)
		return max(v.Left, 0)
	}
	if left, ok := h.Left.Left(ctx, it.ID); ok {
		return max(left, 0)
	}
	return max(it.StockTotal-it.StockSold, 0)
}

// etagMatches reports whether an If-None-Match header names etag (weakly, as RFC 9110 compares for it).
func etagMatches(header, etag string) bool {
	if header == "" {
		return false
	}
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == etag {
			return true
		}
	}
	return false
}
