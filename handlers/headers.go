package handlers

import "github.com/gofiber/fiber/v2"

// The hot answers' headers, spelled as fasthttp keeps them: set with SetCanonical, a header is one
// append, where c.Set first copies and normalizes its name on every request (the status poll's profile
// in docs/performance.md).
var (
	headerCacheControl = []byte(fiber.HeaderCacheControl)
	cacheNoStore       = []byte("no-store")
	cachePublicSecond  = []byte("public, max-age=1")
	cachePublicHour    = []byte("public, max-age=3600")
	mimeJSON           = []byte(fiber.MIMEApplicationJSON)
)

// setCache sets the answer's Cache-Control to one of the values above.
func setCache(c *fiber.Ctx, value []byte) {
	c.Response().Header.SetCanonical(headerCacheControl, value)
}

// setJSON marks the answer as JSON.
func setJSON(c *fiber.Ctx) { c.Response().Header.SetContentTypeBytes(mimeJSON) }
