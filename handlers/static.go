package handlers

import (
	"github.com/gofiber/fiber/v2"

	"seckill/assets"
	"seckill/errs"
)

// Static serves the embedded assets. An address with the file's checksum is cached for a year: the
// checksum changes whenever the file does.
type Static struct {
	Files *assets.Set
}

// Serve answers GET /assets/*.
func (h *Static) Serve(c *fiber.Ctx) error {
	f, ok := h.Files.Get(c.Params("*"))
	if !ok {
		return errs.New(errs.NotFound, "no such file")
	}
	if c.Query("v") == f.Sum {
		c.Set(fiber.HeaderCacheControl, "public, max-age=31536000, immutable")
	} else {
		c.Set(fiber.HeaderCacheControl, "public, max-age=300")
	}
	c.Set(fiber.HeaderETag, `"`+f.Sum+`"`)
	if string(c.Request().Header.Peek(fiber.HeaderIfNoneMatch)) == `"`+f.Sum+`"` {
		return c.SendStatus(fiber.StatusNotModified)
	}
	c.Set(fiber.HeaderContentType, f.ContentType)
	return c.Send(f.Body)
}

// Favicon answers /favicon.ico, which browsers ask for on every site: the site's icon (an SVG, which
// they take at that address too).
func (h *Static) Favicon(c *fiber.Ctx) error {
	f, ok := h.Files.Get("img/favicon.svg")
	if !ok {
		return errs.New(errs.NotFound, "no such file")
	}
	c.Set(fiber.HeaderCacheControl, "public, max-age=86400")
	c.Set(fiber.HeaderContentType, f.ContentType)
	return c.Send(f.Body)
}
