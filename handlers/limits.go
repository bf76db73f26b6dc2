package handlers

import (
	"net/netip"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// addressKey names the client for the per-address limits: its IPv4 address, or the /64 network of its
// IPv6 address (a subscriber is usually given a whole /64, so counting single addresses would give one
// person billions of keys).
func addressKey(c *fiber.Ctx) string {
	ip := c.IP()
	if !strings.Contains(ip, ":") {
		return ip // IPv4, as the buy endpoint mostly sees: no parsing
	}
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return ip
	}
	a = a.Unmap()
	if a.Is4() {
		return a.String()
	}
	p, _ := a.Prefix(64)
	return p.String()
}
