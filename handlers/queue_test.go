package handlers

import (
	"encoding/json"
	"io"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"seckill/stock"
)

// The status poll's hand-written JSON is what encoding/json would write, for every state's shape.
func TestQueueJSONByHand(t *testing.T) {
	ticket, path, hash := "0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210", "9b1e"
	token := "AQEjRWeJq83vASNFZ4mrze8AAAAAAAAE0h-Kx_0_abc-9Aa1"
	pos, ahead, wait := int64(1234), int64(0), int64(20)
	ends := time.Date(2026, 11, 23, 10, 0, 30, 123456789, time.UTC)
	opens := time.Date(2026, 11, 23, 9, 50, 0, 0, time.UTC)
	for _, q := range []queueJSON{
		{State: stock.LineOut, StartsAt: opens.Add(10 * time.Minute), ServerTime: ends},
		{State: stock.LineWaiting, Ticket: &ticket, StockLeft: 312, QueueOpensAt: &opens, StartsAt: opens, SeedHash: &hash, ServerTime: ends},
		{State: stock.LineWaiting, Ticket: &ticket, Position: &pos, Ahead: &ahead, WaitSeconds: &wait, StockLeft: -1, StartsAt: opens, PlaceToken: &token, ServerTime: ends},
		{State: stock.LineTurn, Ticket: &ticket, Position: &pos, Path: &path, TurnEndsAt: &ends, QueueOpensAt: &opens, StartsAt: opens, PlaceToken: &token, Paused: true, ServerTime: ends},
	} {
		// The sale's times written with the answer, and written once beforehand (as the handler keeps them).
		for _, times := range [][]byte{nil, appendSaleTimes(nil, q.QueueOpensAt, q.StartsAt)} {
			app := fiber.New()
			app.Get("/", func(c *fiber.Ctx) error { return sendQueue(c, &q, times) })
			resp, err := app.Test(httptest.NewRequest("GET", "/", nil))
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			want, _ := json.Marshal(q)
			if string(got) != string(want) || resp.Header.Get("Content-Type") != "application/json" {
				t.Errorf("by hand:\n%s\nencoding/json:\n%s", got, want)
			}
		}
	}
}
