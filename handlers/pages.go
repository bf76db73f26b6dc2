package handlers

import (
	"net/url"
	"time"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"seckill/models"
	"seckill/stock"
)

// Pages renders the HTML pages.
type Pages struct {
	DB   *gorm.DB
	Left *stock.LeftCache
	Now  func() time.Time
}

// Layout is the layout every page is rendered in.
const Layout = "layouts/main"

// Home renders the live and upcoming sales.
func (h *Pages) Home(c *fiber.Ctx) error {
	now := h.Now()
	acts, err := models.OpenActivities(c.UserContext(), h.DB, now)
	if err != nil {
		return err
	}
	return c.Render("home", fiber.Map{"Title": "Flash sales", "Now": now, "Activities": acts,
		"Left": LeftOf(c.UserContext(), h.Left, acts)}, Layout)
}

// Login renders the login page: a password form and a QR code for a phone.
func (h *Pages) Login(c *fiber.Ctx) error {
	return c.Render("login", fiber.Map{"Title": "Log in", "Now": h.Now()}, Layout)
}

// Register renders the sign-up page.
func (h *Pages) Register(c *fiber.Ctx) error {
	return c.Render("register", fiber.Map{"Title": "Create an account", "Now": h.Now()}, Layout)
}

// QRPhone renders the phone's page for a login code; a phone that is not logged in logs in first and
// comes back.
func (h *Pages) QRPhone(c *fiber.Ctx) error {
	s, ok := SessionOf(c)
	if !ok {
		return c.Redirect("/login?next=" + url.QueryEscape("/m/qr/"+c.Params("id")))
	}
	u, err := models.UserByID(c.UserContext(), h.DB, s.UserID)
	if err != nil {
		return err
	}
	return c.Render("qr_phone", fiber.Map{"Title": "Confirm login", "Now": h.Now(), "QRID": c.Params("id"), "Username": u.Username}, Layout)
}
