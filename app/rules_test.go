package app

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"seckill/internal/testenv"
	"seckill/mail"
	"seckill/models"
)

// Merchants and admins never join a line or buy, in their own sales or others'.
func TestStaffDoNotTakePart(t *testing.T) {
	s := startLive(t, liveOpts{})
	now := s.Clock.Now()
	_, queued := queueSale(t, s.DB, s, 10)
	_, firstCome := testenv.Sale(t, s.DB, 10, now.Add(-time.Minute), now.Add(time.Hour))
	for _, role := range []string{models.RoleMerchant, models.RoleAdmin} {
		b := withRole(t, s, "staff_"+role, role)
		expect(t, role+" joining a line", b.join(queued.ID), 403, "staff")
		id, answer := b.captcha()
		expect(t, role+" asking a purchase path", b.call("POST", "/api/items/"+itoa(firstCome.ID)+"/path",
			map[string]string{"captcha_id": id, "captcha_answer": answer}), 403, "staff")
		expect(t, role+" buying", b.call("POST", "/api/items/"+itoa(firstCome.ID)+"/buy/"+strings.Repeat("a", 32), nil), 403, "staff")
		id, answer = b.captcha()
		expect(t, role+" asking a queue item's path", b.call("POST", "/api/items/"+itoa(queued.ID)+"/path",
			map[string]string{"captcha_id": id, "captcha_answer": answer}), 403, "staff")
	}
	shopper := newBrowser(t, s.URL)
	shopper.register("plain_shopper", passwordOf("plain_shopper"))
	expect(t, "a shopper joining", shopper.join(queued.ID), 200, "")
}

// Under accounts_before_approval, the accounts made after the sale's approval may not join or buy; those
// made before may. Approval records the newest account then.
func TestAccountsMadeAfterApprovalMayNotTakePart(t *testing.T) {
	s := startLive(t, liveOpts{})
	ctx := context.Background()
	early := newBrowser(t, s.URL)
	early.register("early_bird", passwordOf("early_bird"))

	// A sale made and approved through the models as the console does, with the rule on.
	merchant, err := models.CreateUser(ctx, s.DB, "rules_merchant", "hash", models.RoleMerchant)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := models.CreateUser(ctx, s.DB, "rules_admin", "hash", models.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	now := s.Clock.Now()
	act, err := models.CreateActivity(ctx, s.DB, models.Actor{ID: merchant.ID}, models.ActivityInput{Name: "Members' sale",
		StartsAt: now.Add(-time.Minute), EndsAt: now.Add(2 * time.Hour), SaleMode: models.SaleFirstCome,
		Rules: &models.Rules{AccountsBeforeApproval: true}}, now)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DB.Create(&models.Item{ActivityID: act.ID, Name: "Kettle", OriginalPriceCents: 2000, SeckillPriceCents: 900, StockTotal: 5,
		CreatedAt: now, UpdatedAt: now}).Error; err != nil {
		t.Fatal(err)
	}
	if err := s.DB.Model(&models.Activity{}).Where("id = ?", act.ID).Update("state", models.ActivityPendingReview).Error; err != nil {
		t.Fatal(err)
	}
	approved, err := models.Review(ctx, s.DB, models.Actor{ID: admin.ID}, act.ID, true, "", 10*time.Minute, now, nil)
	if err != nil {
		t.Fatal(err)
	}
	if approved.EligibleThrough == nil || *approved.EligibleThrough != admin.ID {
		t.Fatalf("approval recorded the newest account as %v; want %d", approved.EligibleThrough, admin.ID)
	}
	var item models.Item
	if err := s.DB.Where("activity_id = ?", act.ID).Take(&item).Error; err != nil {
		t.Fatal(err)
	}
	late := newBrowser(t, s.URL)
	late.register("late_comer", passwordOf("late_comer"))
	path := func(b *browser) reply {
		id, answer := b.captcha()
		return b.call("POST", "/api/items/"+itoa(item.ID)+"/path", map[string]string{"captcha_id": id, "captcha_answer": answer})
	}
	r := path(late)
	expect(t, "an account made after approval asking a path", r, 403, "not_eligible")
	if _, msg := errorOf(t, r); !strings.Contains(msg, mail.When("en", *approved.ReviewedAt)) {
		t.Errorf("the refusal does not say since when: %q", msg)
	}
	late.setCookie("lang", "zh")
	if _, msg := errorOf(t, path(late)); !strings.Contains(msg, "公布前注册") {
		t.Errorf("the refusal in Chinese: %q", msg)
	}
	expect(t, "an account made before approval asking a path", path(early), 200, "")
}

// addAddress adds a delivery address to the browser's book and answers its id.
func (b *browser) addAddress(phone, region, city, street string) int64 {
	b.t.Helper()
	r := b.call("POST", "/api/addresses", map[string]string{"recipient": "Someone", "phone": phone, "region": region, "city": city,
		"street": street, "postcode": "310012"})
	if r.Status != 201 && r.Status != 200 {
		b.t.Fatalf("adding an address: %d %s", r.Status, r.Body)
	}
	return int64(r.json(b.t)["id"].(float64))
}

func (b *browser) joinFrom(itemID, addressID int64, id, answer string) reply {
	b.t.Helper()
	return b.call("POST", "/api/items/"+itoa(itemID)+"/queue", map[string]any{"captcha_id": id, "captcha_answer": answer, "address_id": addressID,
		"altcha": b.altcha("purpose=join&item_id=" + itoa(itemID))})
}

// Under one_per_address a queue sale's entrants each give a delivery address; another entrant's place or
// phone, however spelled, is refused without saying whose, the captcha staying usable; probing is slowed.
func TestOneEntrantPerDeliveryAddress(t *testing.T) {
	s := startLive(t, liveOpts{})
	act, item := queueSale(t, s.DB, s, 10)
	if err := s.DB.Model(&act).Update("rule_one_per_address", true).Error; err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 5*time.Second, "the catalog to show the rule", func() bool {
		b := newBrowser(t, s.URL)
		return b.call("GET", "/api/activities/"+itoa(act.ID), nil).json(t)["rules"].(map[string]any)["one_per_address"] == true
	})
	first, second, third := newBrowser(t, s.URL), newBrowser(t, s.URL), newBrowser(t, s.URL)
	first.register("first_entrant", passwordOf("first_entrant"))
	second.register("second_entrant", passwordOf("second_entrant"))
	third.register("third_entrant", passwordOf("third_entrant"))
	home := first.addAddress("+86 138 0013 8000", "Zhejiang", "Hangzhou", "No. 18, Wensan Road, Flat 3-201")

	expect(t, "joining without an address", first.join(item.ID), 400, "bad_request")
	if f := first.join(item.ID).json(t)["fields"].(map[string]any); f["address_id"] == nil {
		t.Errorf("the refusal does not name address_id: %v", f)
	}
	someoneElses := second.addAddress("13900139000", "Jiangsu", "Nanjing", "1 Zhongshan Road")
	id, answer := first.captcha()
	expect(t, "joining with another shopper's address", first.joinFrom(item.ID, someoneElses, id, answer), 400, "bad_request")
	expect(t, "the first entrant", first.joinFrom(item.ID, home, id, answer), 200, "")

	samePlace := second.addAddress("13900139001", "ZHEJIANG Province", "hangzhou", "no 18 wensan\u200broad, flat 3 201")
	id, answer = second.captcha()
	r := second.joinFrom(item.ID, samePlace, id, answer)
	expect(t, "the same place spelled otherwise", r, 409, "address_limit")
	if strings.Contains(string(r.Body), "first_entrant") || strings.Contains(string(r.Body), "138") {
		t.Errorf("the refusal tells whose: %s", r.Body)
	}
	expect(t, "the same captcha with an address of one's own", second.joinFrom(item.ID, someoneElses, id, answer), 200, "")

	samePhone := third.addAddress("138-0013-8000", "Guangdong", "Shenzhen", "8 Keyuan Road")
	for i := range 5 {
		id, answer = third.captcha()
		expect(t, "the same phone, try "+itoa(int64(i+1)), third.joinFrom(item.ID, samePhone, id, answer), 409, "address_limit")
	}
	id, answer = third.captcha()
	sixth := third.joinFrom(item.ID, samePhone, id, answer)
	expect(t, "a sixth try within the hour", sixth, 429, "rate_limited")
	if _, msg := errorOf(t, sixth); !strings.Contains(msg, "addresses") || sixth.Header.Get("Retry-After") == "" {
		t.Errorf("the probes' refusal says %q, Retry-After %q", msg, sixth.Header.Get("Retry-After"))
	}
	// Past the probes every address gets the same answer: a free one too, so the answers tell nothing.
	free := third.addAddress("13700137000", "Sichuan", "Chengdu", "9 Tianfu Avenue")
	expect(t, "a free address past the probes", third.joinFrom(item.ID, free, id, answer), 429, "rate_limited")
	second.setCookie("lang", "zh")
	id, answer = second.captcha()
	if _, msg := errorOf(t, second.joinFrom(item.ID, samePlace, id, answer)); !strings.Contains(msg, "每个地址") {
		t.Errorf("the refusal in Chinese: %q", msg)
	}
}

// A first-come sale of one entrant per address checks it when an order's address is chosen.
func TestFirstComeAddressIsCheckedWhenChosen(t *testing.T) {
	s := startLive(t, liveOpts{})
	now := s.Clock.Now()
	act, item := testenv.Sale(t, s.DB, 10, now.Add(-time.Minute), now.Add(time.Hour))
	if err := s.DB.Model(&act).Update("rule_one_per_address", true).Error; err != nil {
		t.Fatal(err)
	}
	buyers := []*browser{newBrowser(t, s.URL), newBrowser(t, s.URL)}
	var orders []string
	for i, b := range buyers {
		uid := b.register("fc_buyer_"+itoa(int64(i)), passwordOf("fc_buyer"))
		no := "SKRULES" + itoa(int64(i))
		if err := s.DB.Create(&models.Order{OrderNo: no, UserID: uid, ItemID: item.ID, ActivityID: act.ID, PriceCents: 100,
			Status: models.OrderPendingPayment, PayDeadline: now.Add(15 * time.Minute), CreatedAt: now, UpdatedAt: now}).Error; err != nil {
			t.Fatal(err)
		}
		orders = append(orders, no)
	}
	a := buyers[0].addAddress("13800138000", "Zhejiang", "Hangzhou", "Wensan Road 18")
	expect(t, "the first buyer's address", buyers[0].call("POST", "/api/orders/"+orders[0]+"/address", map[string]int64{"address_id": a}), 200, "")
	b := buyers[1].addAddress("+86 138 0013 8000", "Jiangsu", "Nanjing", "1 Zhongshan Road")
	expect(t, "the second buyer giving the same phone", buyers[1].call("POST", "/api/orders/"+orders[1]+"/address", map[string]int64{"address_id": b}), 409, "address_limit")
}

// A sale's rules: a queue sale made without them protects its line, a first-come one keeps them off, and
// what the merchant chose is kept and shown.
func TestActivityRulesDefaultsAndChoice(t *testing.T) {
	s := startLive(t, liveOpts{})
	m := withRole(t, s, "rules_shop", models.RoleMerchant)
	now := s.Clock.Now()
	rulesOf := func(body map[string]any) map[string]any {
		t.Helper()
		r := m.call("POST", "/api/merchant/activities", body)
		if r.Status != 201 {
			t.Fatalf("create: %d %s", r.Status, r.Body)
		}
		return r.json(t)["rules"].(map[string]any)
	}
	body := activityBody(now.Add(time.Hour), now.Add(2*time.Hour))
	body["sale_mode"] = "queue"
	if r := rulesOf(body); r["one_per_address"] != true || r["accounts_before_approval"] != true {
		t.Errorf("a queue sale without rules: %v; want both on", r)
	}
	body["sale_mode"] = "first_come"
	if r := rulesOf(body); r["one_per_address"] != false || r["accounts_before_approval"] != false {
		t.Errorf("a first-come sale without rules: %v; want both off", r)
	}
	body["sale_mode"] = "queue"
	body["rules"] = map[string]bool{"one_per_address": true, "accounts_before_approval": false}
	if r := rulesOf(body); r["one_per_address"] != true || r["accounts_before_approval"] != false {
		t.Errorf("a queue sale's chosen rules: %v", r)
	}
	body["rules"] = map[string]bool{"one_per_adress": true} // misspelt: must not turn both off unsaid
	r := m.call("POST", "/api/merchant/activities", body)
	expect(t, "a misspelt rule", r, 400, "bad_request")
	if f, _ := r.json(t)["fields"].(map[string]any); f["rules"] == nil {
		t.Errorf("the refusal does not name rules: %s", r.Body)
	}
}

// A queue sale's order goes to an address its buyer gave when joining; a first-come buyer gives a sale at
// most two addresses; a draft changed without rules keeps them.
func TestAnEntrantsAddressesAreBounded(t *testing.T) {
	s := startLive(t, liveOpts{})
	now := s.Clock.Now()
	qact, qitem := queueSale(t, s.DB, s, 10)
	fact, fitem := testenv.Sale(t, s.DB, 10, now.Add(-time.Minute), now.Add(time.Hour))
	for _, a := range []*models.Activity{&qact, &fact} {
		if err := s.DB.Model(a).Update("rule_one_per_address", true).Error; err != nil {
			t.Fatal(err)
		}
	}
	b := newBrowser(t, s.URL)
	uid := b.register("bounded_buyer", passwordOf("bounded_buyer"))
	joined := b.addAddress("13800138000", "Zhejiang", "Hangzhou", "1 Wensan Road")
	id, answer := b.captcha()
	expect(t, "joining", b.joinFrom(qitem.ID, joined, id, answer), 200, "")
	order := func(no string, a models.Activity, item models.Item) string {
		if err := s.DB.Create(&models.Order{OrderNo: no, UserID: uid, ItemID: item.ID, ActivityID: a.ID, PriceCents: 100,
			Status: models.OrderPendingPayment, PayDeadline: now.Add(15 * time.Minute), CreatedAt: now, UpdatedAt: now}).Error; err != nil {
			t.Fatal(err)
		}
		return no
	}
	choose := func(no string, addr int64) reply {
		return b.call("POST", "/api/orders/"+no+"/address", map[string]int64{"address_id": addr})
	}
	won := order("SKBOUNDQ", qact, qitem)
	elsewhere := b.addAddress("13900139000", "Jiangsu", "Nanjing", "2 Zhongshan Road")
	expect(t, "a queue order to an address not given when joining", choose(won, elsewhere), 409, "address_limit")
	expect(t, "a queue order to the joined address", choose(won, joined), 200, "")

	bought := order("SKBOUNDF", fact, fitem)
	third := b.addAddress("13700137000", "Sichuan", "Chengdu", "3 Tianfu Avenue")
	expect(t, "a first-come order's first address", choose(bought, joined), 200, "")
	expect(t, "its second", choose(bought, elsewhere), 200, "")
	expect(t, "a third address in one sale", choose(bought, third), 409, "address_limit")
	// Each refusal says its own reason, in the reader's language too.
	b.setCookie("lang", "zh")
	if _, msg := errorOf(t, choose(bought, third)); !strings.Contains(msg, "已达上限") {
		t.Errorf("a third address, in Chinese: %q", msg)
	}
	if _, msg := errorOf(t, choose(won, elsewhere)); !strings.Contains(msg, "排队时提交的地址") {
		t.Errorf("a queue order to another address, in Chinese: %q", msg)
	}

	m := withRole(t, s, "bounded_shop", models.RoleMerchant)
	body := activityBody(now.Add(time.Hour), now.Add(2*time.Hour))
	body["sale_mode"] = "queue"
	body["rules"] = map[string]bool{"one_per_address": false, "accounts_before_approval": false}
	r := m.call("POST", "/api/merchant/activities", body)
	id2 := itoa(int64(r.json(t)["id"].(float64)))
	delete(body, "rules")
	body["name"] = "Renamed"
	got := m.call("PUT", "/api/merchant/activities/"+id2, body).json(t)["rules"].(map[string]any)
	if got["one_per_address"] != false || got["accounts_before_approval"] != false {
		t.Errorf("a change without rules reset them: %v", got)
	}
}

// A page that hands back the card its address book gave joins without the server reading the book (a
// crowd's joins cost PostgreSQL nothing); a card that is not the caller's, or damaged, is not trusted:
// the book is read, and another's address is refused as unknown.
func TestAJoinWithItsAddressCardReadsNoAddressBook(t *testing.T) {
	s := startLive(t, liveOpts{})
	act, item := queueSale(t, s.DB, s, 10)
	if err := s.DB.Model(&act).Update("rule_one_per_address", true).Error; err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 5*time.Second, "the catalog to show the rule", func() bool {
		b := newBrowser(t, s.URL)
		return b.call("GET", "/api/activities/"+itoa(act.ID), nil).json(t)["rules"].(map[string]any)["one_per_address"] == true
	})
	ada, bob, cy := newBrowser(t, s.URL), newBrowser(t, s.URL), newBrowser(t, s.URL)
	ada.register("card_ada", passwordOf("card_ada"))
	bob.register("card_bob", passwordOf("card_bob"))
	cy.register("card_cy", passwordOf("card_cy"))
	home := ada.addAddress("+86 138 0013 8000", "Zhejiang", "Hangzhou", "No. 18, Wensan Road, Flat 3-201")
	bobs := bob.addAddress("13900139000", "Jiangsu", "Nanjing", "1 Zhongshan Road")
	cardOf := func(b *browser, id int64) string {
		var book []map[string]any
		if err := json.Unmarshal(b.call("GET", "/api/addresses", nil).Body, &book); err != nil {
			t.Fatal(err)
		}
		for _, a := range book {
			if int64(a["id"].(float64)) == id {
				card, _ := a["card"].(string)
				return card
			}
		}
		t.Fatalf("address %d is not in the book", id)
		return ""
	}
	joinWith := func(b *browser, addressID int64, card string) reply {
		id, answer := b.captcha()
		return b.call("POST", "/api/items/"+itoa(item.ID)+"/queue", map[string]any{"captcha_id": id, "captcha_answer": answer,
			"address_id": addressID, "address_card": card, "altcha": b.altcha("purpose=join&item_id=" + itoa(item.ID))})
	}
	adaCard := cardOf(ada, home)
	if adaCard == "" {
		t.Fatal("the address book gives no card")
	}

	// Bob hands Ada's card for his own address, and for hers: neither is trusted.
	before := dbCounts(t, s.Srv)
	expect(t, "another's card for one's own address", joinWith(bob, bobs, adaCard), 200, "")
	if got := dbDelta(before, dbCounts(t, s.Srv))["addresses/read"]; got != 1 {
		t.Errorf("a join with a card not its own read the address book %v times, want once", got)
	}
	expect(t, "another's address with its card", joinWith(cy, home, adaCard), 400, "bad_request")
	damaged := []byte(adaCard)
	damaged[10] ^= 1
	expect(t, "a damaged card for an address not one's own", joinWith(cy, home, string(damaged)), 400, "bad_request")

	before = dbCounts(t, s.Srv)
	expect(t, "a join with its own card", joinWith(ada, home, adaCard), 200, "")
	if got := dbDelta(before, dbCounts(t, s.Srv))["addresses/read"]; got != 0 {
		t.Errorf("a join with its own card read the address book %v times, want none", got)
	}
	// The card claimed the address: the same place from another account is refused as before.
	same := cy.addAddress("13700137000", "ZHEJIANG Province", "hangzhou", "no 18 wensan road, flat 3 201")
	expect(t, "the same place, with its own card", joinWith(cy, same, cardOf(cy, same)), 409, "address_limit")
}
