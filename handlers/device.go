package handlers

import (
	"time"

	"github.com/gofiber/fiber/v2"

	"seckill/auth"
)

// DeviceCookie carries the browser's long-lived device id (auth.Devices): a page gets one with its first
// proof-of-work challenge, and a line's joins are noted with it (the shadow line's evidence).
const DeviceCookie = "sk_dev"

// deviceLife is how long a device cookie lives: a browser keeps its id from sale to sale.
const deviceLife = 2 * 365 * 24 * time.Hour

// deviceOf answers the caller's device id: "" when the request carries no device cookie that passes.
func deviceOf(c *fiber.Ctx, d *auth.Devices) string {
	if d == nil {
		return ""
	}
	if id, ok := d.Verify(c.Cookies(DeviceCookie)); ok {
		return id
	}
	return ""
}

// giveDevice sets a fresh device cookie unless the request carries one that passes.
func giveDevice(c *fiber.Ctx, d *auth.Devices, secure bool, now time.Time) error {
	if d == nil || deviceOf(c, d) != "" {
		return nil
	}
	v, err := d.New()
	if err != nil {
		return err
	}
	c.Cookie(&fiber.Cookie{Name: DeviceCookie, Value: v, Path: "/", Expires: now.Add(deviceLife), HTTPOnly: true,
		SameSite: fiber.CookieSameSiteLaxMode, Secure: secure})
	return nil
}
