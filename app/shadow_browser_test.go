package app

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"seckill/internal/testenv"
)

// TestShadowedPageLooksLikeWaiting: a scalper's entrant in the shadow line whose drawn place the line has
// passed reads, on the item page, what any person waiting reads: its place, an estimate, and that the line
// ahead is longer than the stock (those the line lets in first), never its turn.
func TestShadowedPageLooksLikeWaiting(t *testing.T) {
	testenv.Long(t)
	s := startLive(t, liveOpts{only: []string{"queue", "sold_out_flags", "preheat"}})
	act, item := queueSale(t, s.DB, s, 1)
	if err := s.DB.Model(&act).Update("rule_one_per_address", true).Error; err != nil {
		t.Fatal(err)
	}
	id := itoa(item.ID)
	testenv.Eventually(t, 5*time.Second, "the catalog to show the rule", func() bool {
		return newBrowser(t, s.URL).call("GET", "/api/activities/"+itoa(act.ID), nil).json(t)["rules"].(map[string]any)["one_per_address"] == true
	})
	// Six people, and ten of the scalper's entrants (fourteen accounts in one browser, ten addresses): one
	// unit lets one in at a time; with five people's turns missed, the line has passed a scalper's place but
	// for one chance in seven hundred.
	people, scalper := crowdWithScalper(t, s, item.ID, 6, 14, 10)
	status := func(b *browser) map[string]any { return b.call("GET", "/api/items/"+id+"/queue", nil).json(t) }
	line := func() map[string]any { return newBrowser(t, s.URL).call("GET", "/api/items/"+id+"/line", nil).json(t) }

	start := time.Now().Add(time.Minute + time.Second)
	s.Clock.Set(start)
	turns := 0
	for round := 0; turns < 5 && round < 20; round++ {
		testenv.Eventually(t, 10*time.Second, "a turn", func() bool {
			n := 0
			for _, b := range people {
				if st := status(b)["state"]; st == "your_turn" || st == "missed" {
					n++
				}
			}
			if n > turns {
				turns = n
				return true
			}
			return false
		})
		for _, b := range scalper[:10] {
			if st := status(b)["state"]; st != "waiting" {
				t.Fatalf("a scalper's entrant after %d people's turns: %s; want waiting", turns, st)
			}
		}
		if turns >= 5 {
			break // the sixth person stays waiting: ahead of the scalper's entrants the line has passed
		}
		start = start.Add(s.Cfg.QueueTurn + 5*time.Second) // the turn, seen at once, runs out unused
		s.Clock.Set(start)
	}
	letIn := line()["let_in"].(float64)
	var passed *browser
	var who string
	for i, b := range scalper[:10] {
		if q := status(b); q["position"].(float64) <= letIn {
			passed, who = b, "bulk_"+itoa(int64(i))
			break
		}
	}
	if passed == nil {
		t.Fatalf("after 5 turns the line (let in to %v) passed no scalper's place", letIn)
	}
	if q := status(passed); q["state"] != "waiting" || q["ahead"].(float64) < 1 {
		t.Fatalf("%s's standing: %v; want waiting with the last person ahead", who, q)
	}

	cdp := chrome(t)
	loginInBrowser(t, cdp, s.URL, who, passwordOf(who))
	var said string
	run(t, cdp, "the shadowed entrant's item page",
		chromedp.Navigate(s.URL+"/items/"+id),
		chromedp.WaitVisible(`#queue-status:not([hidden])`, chromedp.ByQuery),
		chromedp.Sleep(2500*time.Millisecond), // a few polls of the line
		chromedp.Text("#queue-status", &said, chromedp.ByID),
	)
	if !strings.Contains(said, "You're in line: #") || !strings.Contains(said, "longer than the stock") || strings.Contains(said, "Your turn") {
		t.Errorf("the shadowed entrant's page says %q; want its place and that the line ahead is longer than the stock", said)
	}
}
