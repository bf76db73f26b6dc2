package handlers

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
)

func TestLocalPath(t *testing.T) {
	for _, tt := range []struct{ target, want string }{
		{"/", "/"},
		{"/items/2", "/items/2"},
		{"/orders?page=2&x=%2F%2F", "/orders?page=2&x=%2F%2F"},
		{"/login?next=%2Fitems%2F1", "/login?next=%2Fitems%2F1"},
		{"", "/"},
		{"items/2", "/"},
		{"//evil.example", "/"},
		{"/\\evil.example", "/"},
		{"/items\\..\\x", "/"},
		{"/\t/evil.example", "/"},
		{"/\r\nSet-Cookie: evil=1", "/"},
		{"/ /evil.example", "/"},
		{"/caf\u00e9", "/"},
		{"/\x7f", "/"},
		{"https://evil.example/", "/"},
		{"javascript:alert(1)", "/"},
		{"/" + strings.Repeat("a", 2047), "/" + strings.Repeat("a", 2047)},
		{"/%", "/"}, // found by fuzzing: a broken escape does not parse as a URL
		{"/%zz", "/"},
		{"/a%2", "/"},
		{"/a%2Fb%e9", "/a%2Fb%e9"},
		{"/" + strings.Repeat("a", 2048), "/"},
	} {
		if got := LocalPath(tt.target); got != tt.want {
			t.Errorf("LocalPath(%q) = %q, want %q", tt.target, got, tt.want)
		}
	}
}

func TestAddressKey(t *testing.T) {
	app := fiber.New(fiber.Config{EnableTrustedProxyCheck: true, TrustedProxies: []string{"0.0.0.0"}, ProxyHeader: "X-Real-IP"})
	app.Get("/", func(c *fiber.Ctx) error { return c.SendString(addressKey(c)) })
	key := func(ip string) string {
		req := httptest.NewRequest("GET", "/", nil)
		req.Header.Set("X-Real-IP", ip)
		resp, err := app.Test(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	for _, tt := range []struct{ ip, want string }{
		{"203.0.113.7", "203.0.113.7"},
		{"2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"},
		{"2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"},
		{"2001:db8:1:3::1", "2001:db8:1:3::/64"},
		{"::ffff:203.0.113.7", "203.0.113.7"},
	} {
		if got := key(tt.ip); got != tt.want {
			t.Errorf("addressKey(%s) = %q, want %q", tt.ip, got, tt.want)
		}
	}
}
