package handlers

import (
	"context"
	"errors"
	"regexp"
	"time"

	"github.com/gofiber/fiber/v2"
	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/sync/singleflight"
	"gorm.io/gorm"

	"seckill/errs"
	"seckill/internal/gate"
	"seckill/models"
	"seckill/pictures"
)

// Images serves the item images merchants upload: the upload (checked, scaled, re-encoded, stored in
// the database) and the images themselves, from memory after their first read, cached by browsers
// for a year (an image's address names what it holds, so it never changes).
type Images struct {
	DB  *gorm.DB
	Now func() time.Time

	cache  *lru.Cache[string, []byte]
	flight singleflight.Group
	work   *gate.Gate // one image processed at a time: each can take up to 160 MB and a core for a second
}

// imageCacheSize is how many images an instance keeps in memory: a 960-pixel JPEG is 100 to 700 KB (a
// photo full of fine detail), so at most about 45 MB.
const imageCacheSize = 64

// NewImages returns the images' handlers.
func NewImages(db *gorm.DB, now func() time.Time) *Images {
	cache, _ := lru.New[string, []byte](imageCacheSize)
	return &Images{DB: db, Now: now, cache: cache, work: gate.New(1, 10*time.Second)}
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
		data = v.([]byte)
		h.cache.Add(name, data)
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
