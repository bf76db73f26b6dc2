package app

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"seckill/handlers"
	"seckill/internal/testenv"
	"seckill/models"
)

// A page gets its long-lived device id with its first proof-of-work challenge, and keeps it; a forged
// one is replaced.
func TestDeviceCookieComesWithTheChallenge(t *testing.T) {
	s := startLive(t, liveOpts{noBackground: true})
	b := newBrowser(t, s.URL)
	b.altcha("purpose=register")
	first := b.cookie(handlers.DeviceCookie)
	if len(first) < 30 {
		t.Fatalf("device cookie after the first challenge: %q", first)
	}
	b.altcha("purpose=register")
	if again := b.cookie(handlers.DeviceCookie); again != first {
		t.Fatalf("the device cookie changed from %q to %q on the next challenge", first, again)
	}
	b.setCookie(handlers.DeviceCookie, first[:len(first)-2]+"AA")
	b.altcha("purpose=register")
	if got := b.cookie(handlers.DeviceCookie); got == first || got == first[:len(first)-2]+"AA" || len(got) < 30 {
		t.Fatalf("a forged device cookie was kept: %q", got)
	}
}

// crowdWithScalper has n people join the item's line (each their own browser and address), then a
// scalper's accounts in one browser (one device cookie) with addresses delivery addresses between them:
// the first `addresses` get in, the rest are refused by the address rule. The scalper's accounts are
// bulk_0, bulk_1, ...
func crowdWithScalper(t *testing.T, s *liveServer, itemID int64, n, accounts, addresses int) (people, scalper []*browser) {
	t.Helper()
	for i := range n {
		b := newBrowser(t, s.URL)
		b.register(fmt.Sprintf("person_%d", i), passwordOf(fmt.Sprintf("person_%d", i)))
		addr := b.addAddress(fmt.Sprintf("+86 138 0013 %04d", i), "Zhejiang", "Hangzhou", fmt.Sprintf("No. %d, Wensan Road", 10+i))
		id, answer := b.captcha()
		expect(t, "a person joins", b.joinFrom(itemID, addr, id, answer), 200, "")
		people = append(people, b)
	}
	device := ""
	for i := range accounts {
		b := newBrowser(t, s.URL)
		if device != "" {
			b.setCookie(handlers.DeviceCookie, device)
		}
		b.register(fmt.Sprintf("bulk_%d", i), passwordOf(fmt.Sprintf("bulk_%d", i)))
		device = b.cookie(handlers.DeviceCookie)
		addr := b.addAddress(fmt.Sprintf("+86 139 0000 %04d", i%addresses), "Guangdong", "Shenzhen", fmt.Sprintf("Warehouse %d", i%addresses))
		id, answer := b.captcha()
		want, code := 200, ""
		if i >= addresses {
			want, code = 409, "address_limit"
		}
		expect(t, fmt.Sprintf("the scalper's account %d joins", i), b.joinFrom(itemID, addr, id, answer), want, code)
		scalper = append(scalper, b)
	}
	return people, scalper
}

// A scalper's accounts sharing one browser, most refused by the address rule, are flagged before the
// draw; at the draw their entrants keep drawn places but every person is let in first; the admin sees the
// cluster with its evidence, and clears it with a reason, audited.
func TestScalperEntrantsWaitInTheShadowLine(t *testing.T) {
	s := startLive(t, liveOpts{only: []string{"queue", "sold_out_flags", "preheat"}})
	act, item := queueSale(t, s.DB, s, 2)
	if err := s.DB.Model(&act).Update("rule_one_per_address", true).Error; err != nil {
		t.Fatal(err)
	}
	id := itoa(item.ID)
	testenv.Eventually(t, 5*time.Second, "the catalog to show the rule", func() bool {
		return newBrowser(t, s.URL).call("GET", "/api/activities/"+itoa(act.ID), nil).json(t)["rules"].(map[string]any)["one_per_address"] == true
	})

	people, scalper := crowdWithScalper(t, s, item.ID, 3, 6, 2)

	admin := withRole(t, s, "fair_admin", models.RoleAdmin)
	clustersPath := "/api/admin/items/" + id + "/clusters"
	expect(t, "a shopper asking for the clusters", people[0].call("GET", clustersPath, nil), 403, "")
	got := admin.call("GET", clustersPath, nil).json(t)
	clusters := got["clusters"].([]any)
	if len(clusters) != 1 || got["room"] != "open" || got["shadow_line"] != true {
		t.Fatalf("clusters before the draw: %v; want the scalper's one, room open", got)
	}
	c := clusters[0].(map[string]any)
	var signals []string
	for _, s := range c["signals"].([]any) {
		signals = append(signals, s.(string))
	}
	if c["entrants"] != 2.0 || c["devices"] != 1.0 || c["refused"] != 4.0 || c["decision"] != nil ||
		!slices.Contains(signals, "device_shared") || !slices.Contains(signals, "device_refused") {
		t.Fatalf("the scalper's cluster: %v; want 2 entrants from one device with 4 refused joins, shared and refusing, undecided", c)
	}
	key := c["key"].(string)

	// The start: 2 units × 1.5 lets three in at once; the three people, whatever the draw said.
	s.Clock.Set(time.Now().Add(time.Minute + time.Second))
	status := func(b *browser) map[string]any { return b.call("GET", "/api/items/"+id+"/queue", nil).json(t) }
	testenv.Eventually(t, 10*time.Second, "every person's turn", func() bool {
		for _, b := range people {
			if status(b)["state"] != "your_turn" {
				return false
			}
		}
		return true
	})
	for i, b := range scalper[:2] {
		if q := status(b); q["state"] != "waiting" || q["position"] == nil || q["ahead"] == nil {
			t.Errorf("the scalper's entrant %d: %v; want waiting, with a place and some ahead", i, q)
		}
	}
	report := func() map[string]any {
		return admin.call("GET", "/api/activities/"+itoa(act.ID)+"/report", nil).json(t)["items"].([]any)[0].(map[string]any)
	}
	if r := report(); r["flagged"] != 2.0 || r["shadowed"] != 2.0 || r["cleared"] != 0.0 || r["entrants"] != 5.0 {
		t.Errorf("the report after the draw: %v; want 5 entrants, 2 flagged and shadowed", r)
	}

	clear := "/api/admin/items/" + id + "/clusters/" + key + "/clear"
	if r := admin.call("POST", clear, map[string]string{"reason": " "}); r.Status != 400 || r.json(t)["fields"].(map[string]any)["reason"] == nil {
		t.Fatalf("a clear without a reason: %d %s; want 400 naming the reason", r.Status, r.Body)
	}
	expect(t, "a cluster that is not there", admin.call("POST", "/api/admin/items/"+id+"/clusters/u1/clear", map[string]string{"reason": "appeal"}), 404, "")
	confirm := "/api/admin/items/" + id + "/clusters/" + key + "/confirm"
	if r := admin.call("POST", confirm, map[string]string{"reason": "one browser, one warehouse"}); r.Status != 200 || r.json(t)["decision"] != "confirmed" {
		t.Fatalf("confirming the cluster: %d %s", r.Status, r.Body)
	}
	if r := admin.call("POST", confirm, map[string]string{"reason": "again"}); r.Status != 409 || !strings.Contains(r.json(t)["message"].(string), "confirmed already") {
		t.Fatalf("confirming it again: %d %s; want 409 saying it is confirmed already", r.Status, r.Body)
	}
	r := admin.call("POST", clear, map[string]string{"reason": "two flatmates, appeal heard"})
	if r.Status != 200 || r.json(t)["decision"] != "cleared" || r.json(t)["shadowed"] != 0.0 {
		t.Fatalf("clearing the cluster: %d %s", r.Status, r.Body)
	}
	if r := admin.call("POST", confirm, map[string]string{"reason": "changed my mind"}); r.Status != 409 || !strings.Contains(r.json(t)["message"].(string), "was cleared") {
		t.Fatalf("confirming a cleared cluster: %d %s; want 409 saying it was cleared", r.Status, r.Body)
	}
	var audit models.AuditLog
	if err := s.DB.Where("action = ?", "cluster.cleared").Take(&audit).Error; err != nil || audit.Target != "item:"+id || audit.Actor != "fair_admin" {
		t.Fatalf("the clear's audit row: %+v, %v", audit, err)
	}
	// The report keeps what happened: shadowed at the draw, confirmed, then cleared.
	testenv.Eventually(t, 10*time.Second, "the report to count the clear (it is made at most every 5 s)", func() bool {
		r := report()
		return r["flagged"] == 2.0 && r["shadowed"] == 2.0 && r["confirmed"] == 2.0 && r["cleared"] == 2.0
	})
}

// A first-come item's clusters page says once that such a sale has no line, and asks for no clusters.
func TestClustersPageOfAFirstComeItem(t *testing.T) {
	s := startLive(t, liveOpts{noBackground: true})
	now := time.Now()
	_, item := testenv.Sale(t, s.DB, 5, now.Add(time.Minute), now.Add(time.Hour))
	admin := withRole(t, s, "first_come_admin", models.RoleAdmin)
	r := admin.call("GET", "/admin/items/"+itoa(item.ID)+"/clusters", nil)
	page := string(r.Body)
	if r.Status != 200 || strings.Count(page, "it has no line, so no clusters") != 1 {
		t.Fatalf("the page of a first-come item: %d, the notice %d times", r.Status, strings.Count(page, "it has no line, so no clusters"))
	}
	if strings.Contains(page, "clusters.js") || strings.Contains(page, `id="clusters-list"`) {
		t.Error("the page of a first-come item loads the clusters' list")
	}
}
