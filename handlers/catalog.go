package handlers

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/hashicorp/golang-lru/v2/expirable"

	"seckill/catalog"
	"seckill/models"
	"seckill/stock"
)

// CatalogAPI serves the public list of sales and their items, from memory (catalog.Catalog's snapshot and
// the stock-left cache): a poll costs no query and no Redis round trip. Answers may be kept a second by
// nginx or a CDN (Cache-Control), and a client that has the current one gets 304 (ETag).
type CatalogAPI struct {
	Catalog *catalog.Catalog
	Left    *stock.LeftCache
	Now     func() time.Time

	once   sync.Once
	bodies *expirable.LRU[int64, itemBody] // each item's answer but server_time
}

// ActivityJSON is the contract's `activity`.
type ActivityJSON struct {
	ID           int64        `json:"id"`
	Name         string       `json:"name"`
	Description  string       `json:"description"`
	StartsAt     time.Time    `json:"starts_at"`
	EndsAt       time.Time    `json:"ends_at"`
	State        string       `json:"state"`
	SaleMode     string       `json:"sale_mode"`
	QueueOpensAt *time.Time   `json:"queue_opens_at"` // a queue sale's, from its approval; null otherwise
	Paused       bool         `json:"paused"`         // an admin has paused it: buying waits until it resumes
	Rules        models.Rules `json:"rules"`          // who may take part; fixed once approved
	Items        []ItemJSON   `json:"items"`
}

// ItemJSON is the contract's `item`.
type ItemJSON struct {
	ID                 int64      `json:"id"`
	ActivityID         int64      `json:"activity_id"`
	Name               string     `json:"name"`
	Title              string     `json:"title"`
	Description        string     `json:"description"`
	ImageURL           string     `json:"image_url"`       // the item page's image ("" for none)
	ImageThumbURL      string     `json:"image_thumb_url"` // the same, smaller, for lists
	OriginalPriceCents int64      `json:"original_price_cents"`
	SeckillPriceCents  int64      `json:"seckill_price_cents"`
	StockTotal         int64      `json:"stock_total"`
	StockLeft          int64      `json:"stock_left"`
	StockShards        int        `json:"stock_shards"`
	StartsAt           time.Time  `json:"starts_at"`
	EndsAt             time.Time  `json:"ends_at"`
	SaleMode           string     `json:"sale_mode"`
	QueueOpensAt       *time.Time `json:"queue_opens_at"`
	Paused             bool       `json:"paused"`
	ServerTime         time.Time  `json:"server_time"`
}

// stockLeft is an item's stock left: Redis's count (at most a second old) while its sale is loaded, else
// what the database knows.
func stockLeft(ctx context.Context, cache *stock.LeftCache, it *models.Item) int64 {
	if cache != nil {
		if left, ok := cache.Left(ctx, it.ID); ok {
			return max(left, 0)
		}
	}
	return max(it.StockTotal-it.StockSold, 0)
}

// leftOf maps every item of the activities to its stock left, for pages.
func leftOf(ctx context.Context, cache *stock.LeftCache, acts []models.Activity) map[int64]int64 {
	out := map[int64]int64{}
	for i := range acts {
		for j := range acts[i].Items {
			it := &acts[i].Items[j]
			out[it.ID] = stockLeft(ctx, cache, it)
		}
	}
	return out
}

func activityJSON(a *models.Activity, left map[int64]int64, now time.Time) ActivityJSON {
	out := ActivityJSON{
		ID: a.ID, Name: a.Name, Description: a.Description, State: a.State,
		StartsAt: a.StartsAt.UTC(), EndsAt: a.EndsAt.UTC(), SaleMode: saleMode(a), QueueOpensAt: utc(a.QueueOpensAt),
		Paused: a.PausedAt != nil && now.Before(a.EndsAt), Rules: a.RulesOf(), Items: make([]ItemJSON, 0, len(a.Items)),
	}
	for i := range a.Items {
		out.Items = append(out.Items, itemJSON(&a.Items[i], a, left[a.Items[i].ID], now))
	}
	return out
}

func itemJSON(it *models.Item, a *models.Activity, left int64, now time.Time) ItemJSON {
	return ItemJSON{
		ID: it.ID, ActivityID: it.ActivityID, Name: it.Name, Title: it.Title, Description: it.Description,
		ImageURL: it.Picture("960"), ImageThumbURL: it.Picture("480"), OriginalPriceCents: it.OriginalPriceCents, SeckillPriceCents: it.SeckillPriceCents,
		StockTotal: it.StockTotal, StockLeft: left, StockShards: max(it.StockShards, 1),
		StartsAt: a.StartsAt.UTC(), EndsAt: a.EndsAt.UTC(), SaleMode: saleMode(a), QueueOpensAt: utc(a.QueueOpensAt),
		Paused: a.PausedAt != nil && now.Before(a.EndsAt), ServerTime: now.UTC(),
	}
}

// saleMode is the activity's mode; a row from before the waiting room is first come.
func saleMode(a *models.Activity) string {
	if a.SaleMode == models.SaleQueue {
		return models.SaleQueue
	}
	return models.SaleFirstCome
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// Activities answers the approved activities that have not ended, soonest first.
func (h *CatalogAPI) Activities(c *fiber.Ctx) error {
	snap, err := h.Catalog.Snapshot(c.UserContext())
	if err != nil {
		return err
	}
	now := h.Now()
	acts := snap.Open(now)
	left := leftOf(c.UserContext(), h.Left, acts)
	out := make([]ActivityJSON, 0, len(acts))
	for i := range acts {
		out = append(out, activityJSON(&acts[i], left, now))
	}
	return catalogJSON(c, out, etag(snap.Version, left, now))
}

// Activity answers one approved activity.
func (h *CatalogAPI) Activity(c *fiber.Ctx) error {
	id, err := pathID(c, "id", "activity")
	if err != nil {
		return err
	}
	snap, err := h.Catalog.Snapshot(c.UserContext())
	if err != nil {
		return err
	}
	a, err := h.Catalog.Activity(c.UserContext(), id)
	if err != nil {
		return err
	}
	left, now := leftOf(c.UserContext(), h.Left, []models.Activity{*a}), h.Now()
	return catalogJSON(c, activityJSON(a, left, now), etag(snap.Version, left, now))
}

// Item answers one item of an approved activity.
func (h *CatalogAPI) Item(c *fiber.Ctx) error {
	id, err := pathID(c, "id", "item")
	if err != nil {
		return err
	}
	snap, err := h.Catalog.Snapshot(c.UserContext())
	if err != nil {
		return err
	}
	it, a, err := h.Catalog.Item(c.UserContext(), id)
	if err != nil {
		return err
	}
	left, now := stockLeft(c.UserContext(), h.Left, it), h.Now()
	setCache(c, cachePublicSecond)
	var tag [32]byte
	c.Response().Header.SetBytesV(fiber.HeaderETag, appendItemTag(tag[:0], snap.Version, it.ID, left, now))
	if c.Fresh() {
		return c.SendStatus(fiber.StatusNotModified)
	}
	// Pages poll this every two seconds: the body but its last field is made once per item, snapshot and
	// stock left, and server_time is added to it.
	// Written straight into the answer's own buffer, which fasthttp keeps from one request to the next.
	var tail [64]byte
	t := append(now.UTC().AppendFormat(append(tail[:0], `,"server_time":"`...), time.RFC3339Nano), `"}`...)
	resp := c.Response()
	resp.ResetBody()
	resp.AppendBody(h.itemPrefix(it, a, left, snap.Version))
	resp.AppendBody(t)
	setJSON(c)
	return nil
}

type itemBody struct {
	version uint64
	left    int64
	prefix  []byte
}

// maxItemBodies bounds the item bodies kept.
const maxItemBodies = 4096

// itemPrefix is the item's JSON up to server_time, its last field. A body is kept per snapshot version
// and stock left; an item outside the snapshot (an older sale, found by a lookup) is kept under the
// snapshot's version too, which is right because only approved items are served and an approved sale is
// never edited (only drafts and rejected sales are): should approved sales ever change (a pause, say),
// their change must reach the key.
func (h *CatalogAPI) itemPrefix(it *models.Item, a *models.Activity, left int64, version uint64) []byte {
	h.once.Do(func() { h.bodies = expirable.NewLRU[int64, itemBody](maxItemBodies, nil, time.Minute) })
	if b, ok := h.bodies.Get(it.ID); ok && b.version == version && b.left == left {
		return b.prefix
	}
	full, _ := json.Marshal(itemJSON(it, a, left, time.Time{}))
	prefix := full[:bytes.LastIndex(full, []byte(`,"server_time":`))]
	h.bodies.Add(it.ID, itemBody{version: version, left: left, prefix: prefix})
	return prefix
}

// appendItemTag appends the ETag of one item as it stands: its snapshot, the second, its stock left.
func appendItemTag(dst []byte, version uint64, id, left int64, now time.Time) []byte {
	h := uint64(14695981039346656037) // FNV-1a, of the four numbers' little-endian bytes
	for _, v := range [4]uint64{version, uint64(now.Unix()), uint64(id), uint64(left)} {
		for i := range 8 {
			h ^= uint64(byte(v >> (8 * i)))
			h *= 1099511628211
		}
	}
	dst = append(dst, `W/"`...)
	dst = strconv.AppendUint(dst, h, 36)
	return append(dst, '"')
}

// catalogJSON answers v, or 304 when the client holds the answer with this tag already. Each answer
// carries server_time, which a cache may hold up to a second behind (the tag changes every second, so
// that a client revalidating never keeps an older one).
func catalogJSON(c *fiber.Ctx, v any, tag string) error {
	setCache(c, cachePublicSecond)
	c.Set(fiber.HeaderETag, tag)
	if c.Fresh() {
		return c.SendStatus(fiber.StatusNotModified)
	}
	return c.JSON(v)
}

// etag names an answer by what it shows: the snapshot's content, the stock left of its items and the
// server's time to the second.
func etag(version uint64, left map[int64]int64, now time.Time) string {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], version)
	h.Write(b[:])
	binary.LittleEndian.PutUint64(b[:], uint64(now.Unix()))
	h.Write(b[:])
	ids := make([]int64, 0, len(left))
	for id := range left {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		binary.LittleEndian.PutUint64(b[:], uint64(id))
		h.Write(b[:])
		binary.LittleEndian.PutUint64(b[:], uint64(left[id]))
		h.Write(b[:])
	}
	return `W/"` + strconv.FormatUint(h.Sum64(), 36) + `"`
}
