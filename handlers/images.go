package handlers

import (
	"context"
	"errors"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/singleflight"
	"golang.org/x/time/rate"
	"gorm.io/gorm"

	"seckill/errs"
	"seckill/internal/follow"
	"seckill/internal/gate"
	"seckill/internal/hexid"
	"seckill/models"
	"seckill/pictures"
)

// Images serves the item images merchants upload: the upload (checked, scaled, re-encoded, stored in
// the database) and the images themselves, from memory after their first read, cached by browsers
// for a year (an image's address names what it holds, so it never changes).
type Images struct {
	DB    *gorm.DB
	Redis redis.UniversalClient
	Now   func() time.Time
	Log   *slog.Logger

	cache  *lru.Cache[string, []byte]
	flight singleflight.Group
	work   *gate.Gate // one image processed at a time: each can take up to 160 MB and a core for a second

	// known is every stored upload's sum, so that a name no upload has (a scanner's random one) is
	// answered without a query: kept by Run, from the database and the other instances' messages.
	known knownSums
	// strangers bounds the queries for names known to none: an upload whose message was lost (Redis
	// away a moment) is still found, and a flood of made-up names costs at most this many a second.
	strangers *rate.Limiter
}

// imageCacheSize is how many images an instance keeps in memory: a 960-pixel JPEG is 100 to 700 KB (a
// photo full of fine detail), so at most about 45 MB.
const imageCacheSize = 64

// NewImages returns the images' handlers.
func NewImages(db *gorm.DB, rdb redis.UniversalClient, now func() time.Time, log *slog.Logger) *Images {
	cache, _ := lru.New[string, []byte](imageCacheSize)
	return &Images{DB: db, Redis: rdb, Now: now, Log: log, cache: cache, work: gate.New(1, 10*time.Second),
		strangers: rate.NewLimiter(strangerQueries, 2*strangerQueries)}
}

// strangerQueries is how many queries a second an instance makes for image names it does not know.
const strangerQueries = 10

// maxKnownImages bounds the sums an instance keeps in memory (16 bytes each, about 40 with the map's
// own): about 20 MB. A shop with more uploads than that queries for every name, as before the set.
const maxKnownImages = 500_000

// imagesChannel carries the sum of every new upload to the other instances.
const imagesChannel = "seckill:images"

// knownRefresh is how often the set is read again from the database whole: it catches uploads whose
// message was lost and drops those deleted.
const knownRefresh = time.Minute

// knownSums is the set of stored uploads' sums. Until it is loaded, or when the uploads are more than
// maxKnownImages, it is not complete and every name is looked up.
type knownSums struct {
	mu       sync.RWMutex
	sums     map[[16]byte]struct{}
	complete bool
}

// KnowsNames reports whether the instance knows every stored upload's name (Run has read them, and they
// are within maxKnownImages): unknown names then cost no query.
func (h *Images) KnowsNames() bool {
	h.known.mu.RLock()
	defer h.known.mu.RUnlock()
	return h.known.complete
}

// lacks reports whether the set is complete and has not sum.
func (k *knownSums) lacks(sum [16]byte) bool {
	k.mu.RLock()
	defer k.mu.RUnlock()
	_, ok := k.sums[sum]
	return k.complete && !ok
}

func (k *knownSums) add(sum [16]byte) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.sums == nil {
		k.sums = map[[16]byte]struct{}{}
	}
	if len(k.sums) >= maxKnownImages {
		k.complete = false
		return
	}
	k.sums[sum] = struct{}{}
}

func (k *knownSums) replace(sums map[[16]byte]struct{}, complete bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.sums, k.complete = sums, complete
}

// sumOf reads the sum a name or an image key starts with (32 hex digits).
func sumOf(name string) ([16]byte, bool) { return hexid.Prefix(name) }

// Run keeps the set of stored uploads' sums until ctx ends: read whole at once and every knownRefresh,
// and added to as any instance announces an upload.
func (h *Images) Run(ctx context.Context) error {
	h.reload(ctx)
	return follow.Channel(ctx, h.Redis, imagesChannel, knownRefresh, func(msg string) {
		if sum, ok := sumOf(msg); ok {
			h.known.add(sum)
		}
	}, h.reload)
}

func (h *Images) reload(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	list, err := models.ImageSums(ctx, h.DB, maxKnownImages+1)
	if err != nil {
		if ctx.Err() == nil && h.Log != nil {
			h.Log.Warn("the stored images' names could not be read: unknown names are looked up", "err", err)
		}
		h.known.replace(nil, false)
		return
	}
	sums := make(map[[16]byte]struct{}, len(list))
	for _, s := range list {
		if sum, ok := sumOf(s); ok {
			sums[sum] = struct{}{}
		}
	}
	complete := len(list) <= maxKnownImages
	if !complete && h.Log != nil {
		h.Log.Warn("more stored images than an instance keeps the names of: unknown names are looked up", "most", maxKnownImages)
	}
	h.known.replace(sums, complete)
}

var imageName = regexp.MustCompile(`^[0-9a-f]{32}-(960|480)\.jpg$`)

var errNoImage = errs.Static(errs.NotFound, "no such image")

// errImageBusy answers an upload whose request ran out of time waiting for its turn: the server is busy
// with other images, not broken.
var errImageBusy = errs.Limited(5 * time.Second)

// imageStoreTimeout bounds the writes of an upload once its image is made.
const imageStoreTimeout = 5 * time.Second

// Serve answers a stored image.
func (h *Images) Serve(c *fiber.Ctx) error {
	name := c.Params("name")
	if !imageName.MatchString(name) {
		return errNoImage
	}
	etag := `"` + name[:32] + `"`
	c.Set(fiber.HeaderCacheControl, "public, max-age=31536000, immutable")
	c.Set(fiber.HeaderETag, etag)
	if c.Get(fiber.HeaderIfNoneMatch) == etag {
		return c.SendStatus(fiber.StatusNotModified)
	}
	data, ok := h.cache.Get(name)
	if !ok {
		// A name no upload has is answered here, but for a few a second: one made on another instance
		// whose message did not arrive is found then.
		if sum, _ := sumOf(name); h.known.lacks(sum) && !h.strangers.Allow() {
			c.Set(fiber.HeaderCacheControl, "no-store")
			return errNoImage
		}
		v, err, _ := h.flight.Do(name, func() (any, error) {
			// Not the request's context: the read is shared by every request for the image that waits.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return models.ImageData(ctx, h.DB, name)
		})
		if err != nil {
			c.Set(fiber.HeaderCacheControl, "no-store")
			return err
		}
		if sum, _ := sumOf(name); h.known.lacks(sum) {
			h.known.add(sum) // one whose message was lost
		}
		data = v.([]byte)
		// A copy of the name: the cache keeps it, and c.Params's answer lives in the request's buffer,
		// which the server reuses for the next request.
		h.cache.Add(strings.Clone(name), data)
	}
	c.Set(fiber.HeaderContentType, "image/jpeg")
	return c.Send(data)
}

// Upload gives an item of a draft or rejected activity the uploaded image: a PNG or JPEG of at most
// 5 MB, in the multipart field "image" (or as the body, typed image/png or image/jpeg).
func (h *Images) Upload(c *fiber.Ctx) error {
	activityID, itemID, err := ids(c)
	if err != nil {
		return err
	}
	raw, err := uploaded(c, "image", "image/png", "image/jpeg")
	if err != nil {
		return err
	}
	who, err := actor(c, h.DB)
	if err != nil {
		return err
	}
	// The activity and item first: a file for someone else's item is not even opened.
	if _, err := models.MerchantActivity(c.UserContext(), h.DB, who.ID, activityID); err != nil {
		return err
	}
	var p *pictures.Processed
	var perr error
	if err := h.work.Do(c.UserContext(), func() { p, perr = pictures.Process(raw) }); err != nil {
		if c.UserContext().Err() != nil {
			return errImageBusy // the request's deadline passed while it waited for its turn
		}
		return err
	}
	switch {
	case errors.Is(perr, pictures.ErrNotImage):
		return errs.Bad(errs.W("image", "not_image"))
	case errors.Is(perr, pictures.ErrTooBig):
		return errs.Bad(errs.W("image", "too_many_pixels"))
	case errors.Is(perr, pictures.ErrTooCostly):
		return errs.Bad(errs.W("image", "image_scans"))
	case perr != nil:
		return perr
	}
	// The image is made: it is stored even when the request's deadline passed while it was (a turn waited
	// for, then a second or two of work on a busy server), with a deadline of its own for the writes.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.UserContext()), imageStoreTimeout)
	defer cancel()
	it, err := models.SetItemImage(ctx, h.DB, who, activityID, itemID, p.Sum, p.Variants, h.Now())
	if err != nil {
		return err
	}
	if sum, ok := sumOf(p.Sum); ok {
		h.known.add(sum)
		if err := follow.Publish(ctx, h.Redis, imagesChannel, p.Sum); err != nil && h.Log != nil {
			// The other instances find it by a query (a few a second) until their next reload.
			h.Log.Warn("an upload could not be announced to the other instances", "err", err)
		}
	}
	a, err := models.ActivityByID(ctx, h.DB, it.ActivityID)
	if err != nil {
		return err
	}
	return c.JSON(itemJSON(it, a, max(it.StockTotal-it.StockSold, 0), h.Now()))
}

// Remove takes an item's uploaded image away (for an item of a draft or rejected activity).
func (h *Images) Remove(c *fiber.Ctx) error {
	activityID, itemID, err := ids(c)
	if err != nil {
		return err
	}
	who, err := actor(c, h.DB)
	if err != nil {
		return err
	}
	it, err := models.RemoveItemImage(c.UserContext(), h.DB, who, activityID, itemID, h.Now())
	if err != nil {
		return err
	}
	a, err := models.ActivityByID(c.UserContext(), h.DB, it.ActivityID)
	if err != nil {
		return err
	}
	return c.JSON(itemJSON(it, a, max(it.StockTotal-it.StockSold, 0), h.Now()))
}
