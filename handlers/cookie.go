package handlers

import (
	"bytes"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/utils"
)

// requestCookie answers the value of the request's cookie name, read from its Cookie headers without
// collecting the others: fasthttp's Cookies parses and copies every cookie of the request into a list
// first, a third of the session check's cost on a status poll (the profile in docs/performance.md). As
// fasthttp reads them: the first cookie of the name wins, spaces around a name and a value are dropped,
// and one pair of quotes around the value. Valid for the request, as c.Cookies is.
func requestCookie(c *fiber.Ctx, name string) string {
	for _, h := range c.Request().Header.PeekAll(fiber.HeaderCookie) {
		if v, ok := cookieIn(h, name); ok {
			return utils.UnsafeString(v)
		}
	}
	return ""
}

// cookieIn finds the cookie name in one Cookie header's value.
func cookieIn(h []byte, name string) ([]byte, bool) {
	for len(h) > 0 {
		pair := h
		if i := bytes.IndexByte(h, ';'); i >= 0 {
			pair, h = h[:i], h[i+1:]
		} else {
			h = nil
		}
		k, v, found := bytes.Cut(pair, []byte{'='})
		if !found || string(bytes.Trim(k, " ")) != name {
			continue
		}
		v = bytes.Trim(v, " ")
		if len(v) > 1 && v[0] == '"' && v[len(v)-1] == '"' {
			v = v[1 : len(v)-1]
		}
		return v, true
	}
	return nil, false
}
