package handlers

import (
	"io"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"

	"github.com/gofiber/fiber/v2"

	"seckill/errs"
)

// fzIDApp answers the id pathID reads from /x/:id, or 404 when pathID refuses it.
func fzIDApp() *fiber.App {
	f := fiber.New(fiber.Config{DisableStartupMessage: true})
	f.Get("/x/:id", func(c *fiber.Ctx) error {
		id, err := pathID(c, "id", "thing")
		if errs.Is(err, errs.NotFound) {
			return c.SendStatus(fiber.StatusNotFound)
		}
		if err != nil {
			return c.Status(fiber.StatusInternalServerError).SendString(err.Error())
		}
		return c.SendString(strconv.FormatInt(id, 10))
	})
	return f
}

// FuzzPathID: an id in the path is taken only in its one canonical spelling (a positive decimal with no
// sign, no leading zero, no space), and anything else is 404.
func FuzzPathID(f *testing.F) {
	for _, s := range []string{
		"1", "42", "0", "-1", "+2", "02", "00", " 1", "1 ", "1.0", "2e3", "0x10", "1_000", "١٢", "１",
		"9223372036854775807", "9223372036854775808", "-9223372036854775808", "99999999999999999999",
		"abc", "%", "..", ".", "1/2", "1?x=2", "1#a", "\x00", "1\r\n", "😀",
	} {
		f.Add(s)
	}
	app := fzIDApp()
	f.Fuzz(func(t *testing.T, seg string) {
		if seg == "" || len(seg) > 200 {
			t.Skip("no segment, or longer than any id")
		}
		resp, err := app.Test(httptest.NewRequest("GET", "/x/"+url.PathEscape(seg), nil), -1)
		if err != nil {
			t.Fatalf("GET /x/%s: %v", url.PathEscape(seg), err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		n, perr := strconv.ParseInt(seg, 10, 64)
		canonical := perr == nil && n > 0 && strconv.FormatInt(n, 10) == seg
		switch {
		case canonical && (resp.StatusCode != 200 || string(body) != seg):
			t.Fatalf("id %q: got %d %q, want 200 and the id", seg, resp.StatusCode, body)
		case !canonical && resp.StatusCode != 404:
			t.Fatalf("segment %q (sent as %q): got %d %q, want 404", seg, url.PathEscape(seg), resp.StatusCode, body)
		}
	})
}
