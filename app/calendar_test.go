package app

import (
	"strings"
	"testing"
	"time"

	ics "github.com/arran4/golang-ical"

	"seckill/internal/testenv"
)

// Anyone may add a sale to their calendar: a queue sale is two events, the line's opening and the sale,
// each with an alarm ten minutes before, in the language asked for, linking to the item.
func TestASaleInACalendar(t *testing.T) {
	s := startLive(t, liveOpts{noBackground: true})
	act, item := queueSale(t, s.DB, nil, 5)
	b := newBrowser(t, s.URL)
	var r reply
	testenv.Eventually(t, 5*time.Second, "the catalog to have the sale", func() bool {
		r = b.call("GET", "/api/activities/"+itoa(act.ID)+"/calendar.ics?lang=zh", nil)
		return r.Status == 200
	})
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/calendar") || r.Header.Get("Cache-Control") != "public, max-age=60" {
		t.Errorf("Content-Type %q, Cache-Control %q", ct, r.Header.Get("Cache-Control"))
	}
	if lines := strings.Split(strings.TrimSuffix(string(r.Body), "\r\n"), "\r\n"); len(lines) < 10 || strings.Contains(strings.Join(lines, ""), "\n") {
		t.Errorf("the lines do not all end in CRLF (RFC 5545):\n%q", r.Body)
	}
	cal, err := ics.ParseCalendar(strings.NewReader(string(r.Body)))
	if err != nil {
		t.Fatalf("not a calendar: %v\n%s", err, r.Body)
	}
	events := cal.Events()
	if len(events) != 2 {
		t.Fatalf("%d events, want the line's opening and the sale:\n%s", len(events), r.Body)
	}
	want := []struct {
		summary string
		start   time.Time
	}{{"排队开始 · " + act.Name, *act.QueueOpensAt}, {"秒杀 · " + act.Name, act.StartsAt}}
	for i, e := range events {
		start, err := e.GetStartAt()
		if err != nil || !start.Equal(want[i].start.Truncate(time.Second)) {
			t.Errorf("event %d starts %v (%v), want %v", i, start, err, want[i].start)
		}
		if got := e.GetProperty(ics.ComponentPropertySummary).Value; got != want[i].summary {
			t.Errorf("event %d is %q, want %q", i, got, want[i].summary)
		}
		if url := e.GetProperty(ics.ComponentPropertyUrl).Value; !strings.HasSuffix(url, "/items/"+itoa(item.ID)) {
			t.Errorf("event %d links %q, not the item", i, url)
		}
		alarms := e.Alarms()
		if len(alarms) != 1 || alarms[0].GetProperty(ics.ComponentPropertyTrigger).Value != "-PT10M" {
			t.Errorf("event %d has no alarm ten minutes before", i)
		}
	}
	if r := b.call("GET", "/api/activities/"+itoa(act.ID)+"/calendar.ics", nil); r.Header.Get("Cache-Control") != "private, max-age=60" ||
		!strings.Contains(string(r.Body), "Flash sale · "+act.Name) {
		t.Errorf("without ?lang: %q\n%s", r.Header.Get("Cache-Control"), r.Body)
	}
	expect(t, "no such sale", b.call("GET", "/api/activities/999999/calendar.ics", nil), 404, "not_found")
}
