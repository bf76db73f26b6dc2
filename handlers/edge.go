package handlers

// The sold-out rule of the contract: once an item is known sold out, its buys and paths are answered
// 409 sold_out before any other check, because that answer is public and the same for everyone. The
// instances answer it first of all (SoldOutFirst), and publish the decision (OnSale) so that nginx can
// answer it without them.

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"seckill/stock"
)

// SoldOutFirst answers a buy or a path of an item this instance knows sold out with 409 sold_out,
// before the session, CSRF and limit checks; any other request goes on to them (the next route).
// Memory only: a crowd that keeps clicking after the last unit costs no Redis round trip and no check.
func (h *Buy) SoldOutFirst(c *fiber.Ctx) error {
	id, err := pathID(c, "id", "item")
	if err != nil || !h.Flags.SoldOut(id) {
		return c.Next()
	}
	if strings.Contains(c.Route().Path, "/buy/") {
		// The buy's answers feed the live dashboard, those given early too.
		h.Answers.Add(id, stock.AnswerOf(stock.ErrSoldOut), h.Now())
	}
	return stock.ErrSoldOut
}

// OnSale is the edge's question before it lets a buy or a path through: 204 while this instance does
// not know the item sold out (an unknown item too: the instance answers that itself), 403 once it does.
// nginx's auth_request reads only the status, and keeps the answer a second (Cache-Control), so that a
// unit coming back reopens the item at the edge within about a second.
func (h *Buy) OnSale(c *fiber.Ctx) error {
	c.Set(fiber.HeaderCacheControl, "public, max-age=1")
	if id, err := pathID(c, "id", "item"); err == nil && h.Flags.SoldOut(id) {
		return c.SendStatus(fiber.StatusForbidden)
	}
	return c.SendStatus(fiber.StatusNoContent)
}
