package app

import (
	"context"
	"strings"
	"testing"
	"time"

	"seckill/handlers"
	"seckill/internal/testenv"
	"seckill/models"
)

// A shopper in a queue sale's line asks a person to look: only from the line, with a message of 1 to 500
// characters, one open appeal an item, under a limit; they read their latest appeal; the admins list the
// appeals by state, newest first, a page at a time, and answer each (audited), which the shopper reads.
func TestAppealsFromTheLine(t *testing.T) {
	s := startLive(t, liveOpts{only: []string{"preheat"}})
	_, item := queueSale(t, s.DB, s, 5)
	_, firstCome := testenv.Sale(t, s.DB, 5, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	admin := withRole(t, s, "appeal_chief", models.RoleAdmin)
	shopper, outsider := newBrowser(t, s.URL), newBrowser(t, s.URL)
	shopperID := shopper.register("appealing_one", passwordOf("appealing_one"))
	outsider.register("not_in_line", passwordOf("not_in_line"))
	path := "/api/items/" + itoa(item.ID) + "/appeal"
	body := map[string]string{"message": "My place looks wrong: I joined a minute after the room opened."}

	expect(t, "an appeal without a session", newBrowser(t, s.URL).call("POST", path, body), 401, "")
	expect(t, "an appeal from outside the line", outsider.call("POST", path, body), 409, "not_in_line")
	expect(t, "an appeal about a first-come item", outsider.call("POST", "/api/items/"+itoa(firstCome.ID)+"/appeal", body), 409, "not_in_line")
	expect(t, "an appeal about no item", outsider.call("POST", "/api/items/999999/appeal", body), 404, "not_found")
	expect(t, "joining the line", shopper.join(item.ID), 200, "")

	noToken := newBrowser(t, s.URL)
	noToken.c.Jar = shopper.c.Jar
	noToken.noAutoCSRF = true
	expect(t, "an appeal without the CSRF token", noToken.call("POST", path, body), 403, "csrf")
	for name, msg := range map[string]string{"empty": "  \n ", "501 characters": strings.Repeat("长", 501), "a control character": "a\x00b",
		"a C1 control character": "a\u0085b", "only a zero-width space": "\u200b", "a right-to-left override": "\u202eevil txt.exe"} {
		r := shopper.call("POST", path, map[string]string{"message": msg})
		expect(t, "a message "+name, r, 400, "bad_request")
		if f, _ := r.json(t)["fields"].(map[string]any); f["message"] == nil {
			t.Errorf("a message %s: %s; want fields.message", name, r.Body)
		}
	}
	expect(t, "the latest appeal before any", shopper.call("GET", path, nil), 404, "not_found")

	r := shopper.call("POST", path, map[string]string{"message": strings.Repeat("长", 500)})
	expect(t, "an appeal of 500 characters", r, 201, "")
	a := r.json(t)
	if a["item_id"] != float64(item.ID) || a["state"] != "open" || a["answer"] != nil || a["id"] == nil || a["message"] != strings.Repeat("长", 500) {
		t.Errorf("the appeal: %s", r.Body)
	}
	if _, err := time.Parse(time.RFC3339, a["created_at"].(string)); err != nil {
		t.Errorf("created_at %v: %v", a["created_at"], err)
	}
	expect(t, "a second appeal while one is open", shopper.call("POST", path, body), 409, "appeal_open")
	if got := shopper.call("GET", path, nil); got.Status != 200 || got.json(t)["id"] != a["id"] {
		t.Errorf("the latest appeal: %d %s", got.Status, got.Body)
	}
	expect(t, "another's appeal", outsider.call("GET", path, nil), 404, "not_found")

	// The admins' list.
	expect(t, "a shopper reading the admins' list", shopper.call("GET", "/api/admin/appeals", nil), 403, "forbidden")
	expect(t, "a list of no state", admin.call("GET", "/api/admin/appeals?state=closed", nil), 400, "bad_request")
	list := admin.call("GET", "/api/admin/appeals?state=open", nil).json(t)
	appeals := list["appeals"].([]any)
	if list["total"] != float64(1) || list["page"] != float64(1) || list["per_page"] != float64(50) || len(appeals) != 1 {
		t.Fatalf("the open appeals: %v", list)
	}
	row := appeals[0].(map[string]any)
	if row["id"] != a["id"] || row["user_id"] != float64(shopperID) || row["username"] != "appealing_one" || row["state"] != "open" {
		t.Errorf("the open appeal as the admins read it: %v", row)
	}

	// The answer.
	answerPath := "/api/admin/appeals/" + itoa(int64(a["id"].(float64))) + "/answer"
	expect(t, "a shopper answering", shopper.call("POST", answerPath, map[string]string{"answer": "yes"}), 403, "forbidden")
	if r := admin.call("POST", answerPath, map[string]string{"answer": " "}); r.Status != 400 || r.json(t)["fields"].(map[string]any)["answer"] == nil {
		t.Errorf("an empty answer: %d %s; want 400 with fields.answer", r.Status, r.Body)
	}
	expect(t, "an answer to no appeal", admin.call("POST", "/api/admin/appeals/999999/answer", map[string]string{"answer": "yes"}), 404, "not_found")
	r = admin.call("POST", answerPath, map[string]string{"answer": "We looked: your place is the draw's, fair and square."})
	expect(t, "the answer", r, 200, "")
	if got := r.json(t); got["state"] != "answered" || got["answer"] != "We looked: your place is the draw's, fair and square." || got["username"] != "appealing_one" {
		t.Errorf("the answered appeal: %s", r.Body)
	}
	expect(t, "answering twice", admin.call("POST", answerPath, map[string]string{"answer": "again"}), 409, "conflict")
	if got := auditActions(t, s, "appeal:"+itoa(int64(a["id"].(float64)))); len(got) != 1 || got[0] != "appeal.answer" {
		t.Errorf("the audit of the answer: %v", got)
	}
	admin.setCookie("lang", "zh")
	if page := string(admin.call("GET", "/admin/audit", nil).Body); !strings.Contains(page, "答复了申诉") || !strings.Contains(page, "fair and square") {
		t.Errorf("the audit page does not say the answer in words:\n%.2000s", page)
	}
	admin.setCookie("lang", "en")
	if got := shopper.call("GET", path, nil).json(t); got["state"] != "answered" || got["answer"] == nil {
		t.Errorf("the shopper's appeal after the answer: %v", got)
	}
	if list := admin.call("GET", "/api/admin/appeals", nil).json(t); list["total"] != float64(0) {
		t.Errorf("the open appeals after the answer: %v", list)
	}
	if list := admin.call("GET", "/api/admin/appeals?state=answered", nil).json(t); list["total"] != float64(1) {
		t.Errorf("the answered appeals: %v", list)
	}

	// Answered, the shopper may ask again; then the limit (three at once, ten an hour) slows them.
	expect(t, "an appeal after the answer", shopper.call("POST", path, body), 201, "")
	limited := false
	for range 5 {
		if r := shopper.call("POST", path, body); r.Status == 429 {
			limited = true
			break
		}
	}
	if !limited {
		t.Error("appeals sent one after another were never limited")
	}
}

// The admins' list is paged in the database, newest first.
func TestAppealsArePagedNewestFirst(t *testing.T) {
	s := startLive(t, liveOpts{noBackground: true})
	admin := withRole(t, s, "paging_chief", models.RoleAdmin)
	users := testenv.Users(t, s.DB, "appealer", 53)
	ctx := context.Background()
	at := time.Now().UTC()
	for i, u := range users {
		if _, err := models.CreateAppeal(ctx, s.DB, u.ID, 7, "look "+itoa(int64(i)), at.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	first := admin.call("GET", "/api/admin/appeals?state=open&page=1", nil).json(t)
	second := admin.call("GET", "/api/admin/appeals?state=open&page=2", nil).json(t)
	one, two := first["appeals"].([]any), second["appeals"].([]any)
	if first["total"] != float64(53) || len(one) != 50 || len(two) != 3 || second["page"] != float64(2) {
		t.Fatalf("pages of 53 appeals: total %v, %d then %d", first["total"], len(one), len(two))
	}
	if one[0].(map[string]any)["message"] != "look 52" || two[2].(map[string]any)["message"] != "look 0" {
		t.Errorf("the newest first: %v … %v", one[0], two[2])
	}
	expect(t, "page 0", admin.call("GET", "/api/admin/appeals?page=0", nil), 400, "bad_request")
	// The page past the last sends to the last, which shows the oldest.
	if r := admin.call("GET", "/admin/appeals?state=open&page=99999", nil); r.Status != 302 || r.Header.Get("Location") != "/admin/appeals?state=open&page=2" {
		t.Errorf("page 99999: %d to %q, want the last page", r.Status, r.Header.Get("Location"))
	}
	if page := string(admin.call("GET", "/admin/appeals?state=open&page=2", nil).Body); !strings.Contains(page, "look 0") || !strings.Contains(page, "2 / 2") {
		t.Error("the last page does not show the oldest appeal and its number")
	}
}

// A shadowed entrant appeals as anyone in the line does: the answers do not tell them apart.
func TestAShadowedEntrantMayAppeal(t *testing.T) {
	s := startLive(t, liveOpts{only: []string{"queue", "sold_out_flags", "preheat"}})
	act, item := queueSale(t, s.DB, s, 2)
	if err := s.DB.Model(&act).Update("rule_one_per_address", true).Error; err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 5*time.Second, "the catalog to show the rule", func() bool {
		return newBrowser(t, s.URL).call("GET", "/api/activities/"+itoa(act.ID), nil).json(t)["rules"].(map[string]any)["one_per_address"] == true
	})
	join := func(b *browser, phone, street string) reply {
		id, answer := b.captcha()
		return b.joinFrom(item.ID, b.addAddress(phone, "Guangdong", "Shenzhen", street), id, answer)
	}
	person := newBrowser(t, s.URL)
	person.register("plain_person", passwordOf("plain_person"))
	expect(t, "a person joins", join(person, "+86 138 0013 8000", "No. 10, Wensan Road"), 200, "")
	// Six accounts in one browser, four of them refused by the address rule: the two entrants are flagged.
	var bulk []*browser
	device := ""
	for i := range 6 {
		b := newBrowser(t, s.URL)
		if device != "" {
			b.setCookie(handlers.DeviceCookie, device)
		}
		name := "shadowed_" + itoa(int64(i))
		b.register(name, passwordOf(name))
		device = b.cookie(handlers.DeviceCookie)
		join(b, "+86 139 0000 000"+itoa(int64(i%2)), "Warehouse "+itoa(int64(i%2)))
		bulk = append(bulk, b)
	}
	s.Clock.Set(time.Now().Add(time.Minute + time.Second)) // the start: the draw
	admin := withRole(t, s, "shadow_reader", models.RoleAdmin)
	testenv.Eventually(t, 30*time.Second, "the draw", func() bool {
		return bulk[0].call("GET", "/api/items/"+itoa(item.ID)+"/queue", nil).json(t)["position"] != nil
	})
	testenv.Eventually(t, 15*time.Second, "the report to count the two shadowed (it is made at most every 5 s)", func() bool {
		r := admin.call("GET", "/api/activities/"+itoa(act.ID)+"/report", nil).json(t)["items"].([]any)[0].(map[string]any)
		return r["shadowed"] == 2.0
	})
	path := "/api/items/" + itoa(item.ID) + "/appeal"
	msg := map[string]string{"message": "Why am I still waiting?"}
	shadowed, plain := bulk[0].call("POST", path, msg), person.call("POST", path, msg)
	expect(t, "a shadowed entrant's appeal", shadowed, 201, "")
	expect(t, "a person's appeal", plain, 201, "")
	for _, k := range []string{"state", "answer", "message", "item_id"} {
		if shadowed.json(t)[k] != plain.json(t)[k] {
			t.Errorf("%s: the shadowed entrant's %v, the person's %v", k, shadowed.json(t)[k], plain.json(t)[k])
		}
	}
	expect(t, "a refused account's appeal (not in the line)", bulk[2].call("POST", path, msg), 409, "not_in_line")
}
