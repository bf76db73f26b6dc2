package handlers

import (
	"testing"
	"time"

	"seckill/models"
	"seckill/stock"
)

// The rate is written to two significant digits, from the line's most until it is seen moving.
func TestLineRateIsRounded(t *testing.T) {
	for _, c := range []struct {
		v    stock.RoomView
		want float64
	}{
		{stock.RoomView{MaxRate: 500}, 500},
		{stock.RoomView{MaxRate: 0}, 1},
		{stock.RoomView{Rate: 0.001, Measured: true, MaxRate: 500}, 500},
		{stock.RoomView{Rate: 487.3, Measured: true}, 490},
		{stock.RoomView{Rate: 1.44, Measured: true}, 1.4},
		{stock.RoomView{Rate: 0.372, Measured: true}, 0.37},
		{stock.RoomView{Rate: 12.51, Measured: true}, 13},
	} {
		if got := lineRate(c.v); got != c.want {
			t.Errorf("rate %v (measured %v, most %d): %v, want %v", c.v.Rate, c.v.Measured, c.v.MaxRate, got, c.want)
		}
	}
}

// Each moment of a sale has its state, an end first, then a pause, then the window, the stock and the draw.
func TestLineStates(t *testing.T) {
	at := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	opens := at.Add(-10 * time.Minute)
	a := &models.Activity{QueueOpensAt: &opens, StartsAt: at, EndsAt: at.Add(time.Hour)}
	for _, c := range []struct {
		now                           time.Time
		drawn, ended, paused, soldOut bool
		want                          string
	}{
		{now: opens.Add(-time.Second), want: LineBeforeOpen},
		{now: opens, want: LineOpen},
		{now: at, want: LineDrawing},
		{now: at, drawn: true, want: LineMoving},
		{now: at, drawn: true, soldOut: true, want: LineSoldOut},
		{now: at, drawn: true, soldOut: true, paused: true, want: LinePaused},
		{now: opens.Add(-time.Second), paused: true, want: LinePaused},
		{now: at, drawn: true, paused: true, ended: true, want: LineEnded},
		{now: at.Add(time.Hour), drawn: true, want: LineEnded},
	} {
		if got := lineState(c.now, a, c.drawn, c.ended, c.paused, c.soldOut); got != c.want {
			t.Errorf("%+v: %s, want %s", c, got, c.want)
		}
	}
}

func TestETagMatches(t *testing.T) {
	const etag = `"0c5d4d4e9a3f5b1d2f6e7a8b9c0d1e2f"`
	for header, want := range map[string]bool{
		"":                  false,
		etag:                true,
		"W/" + etag:         true,
		`"other", ` + etag:  true,
		`"other"`:           false,
		"*":                 true,
		etag[:len(etag)-1]:  false,
		`"other",W/` + etag: true,
	} {
		if got := etagMatches(header, etag); got != want {
			t.Errorf("If-None-Match %q: %v, want %v", header, got, want)
		}
	}
}
