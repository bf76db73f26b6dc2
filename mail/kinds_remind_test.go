package mail

import (
	"strings"
	"testing"
	"time"
)

// A reminder says its sale and time in the reader's language, in text and HTML, with the link to the
// sale and, in the footer, the link that stops it; a receipt has no unsubscribe link; a kind that
// needs a link refuses to render without one.
func TestRemindersAndReceiptsRender(t *testing.T) {
	at := time.Date(2026, 11, 11, 11, 50, 0, 0, time.UTC)
	data := map[string]string{"Username": "mei", "Sale": "Double <11>", "Time": When("zh", at), "Start": When("zh", at.Add(10*time.Minute)),
		"Link": "https://shop.test/items/4", "Unsubscribe": "https://shop.test/unsubscribe?token=1.2.ab"}
	r, err := Render(Message{Kind: KindRemindLineOpen, Lang: "zh", Data: data})
	if err != nil {
		t.Fatal(err)
	}
	if r.Lang != "zh" || r.Subject != "“Double <11>”的排队将于 2026年11月11日 19:50（北京时间） 开放" {
		t.Errorf("subject %q in %s", r.Subject, r.Lang)
	}
	for _, want := range []string{"mei，您好", "https://shop.test/items/4\n", "不再接收此活动的提醒：\nhttps://shop.test/unsubscribe?token=1.2.ab\n"} {
		if !strings.Contains(r.Text, want) {
			t.Errorf("the text lacks %q:\n%s", want, r.Text)
		}
	}
	if !strings.Contains(r.HTML, `<a href="https://shop.test/unsubscribe?token=1.2.ab"`) || !strings.Contains(r.HTML, "Double &lt;11&gt;") {
		t.Errorf("the HTML has no unsubscribe link or does not escape the sale's name:\n%s", r.HTML)
	}
	rc, err := Render(Message{Kind: KindReceipt, Lang: "en", Data: map[string]string{"Username": "ada", "OrderNo": "SK1", "Item": "Phone",
		"Amount": Money(990), "Time": When("en", at), "Link": "https://shop.test/orders/SK1"}})
	if err != nil {
		t.Fatal(err)
	}
	if rc.Subject != "Your receipt for order SK1" || !strings.Contains(rc.Text, "Amount paid: ¥9.90") ||
		!strings.Contains(rc.Text, "Paid at: 19:50 Beijing time (UTC+08:00), Wed 11 Nov 2026") || strings.Contains(rc.Text, "unsubscribe") {
		t.Errorf("the receipt: %q\n%s", rc.Subject, rc.Text)
	}
	delete(data, "Link")
	if _, err := Render(Message{Kind: KindRemindStart, Lang: "en", Data: data}); err == nil {
		t.Error("a reminder without its link rendered")
	}
}

// A mail's time is the shop's, Beijing time, in English as in Chinese: the same hour and the same day
// (20:00 UTC is the next morning in Beijing), the English saying its offset.
func TestWhenSaysTheShopsTimeInBothLanguages(t *testing.T) {
	for _, tc := range []struct {
		at     time.Time
		en, zh string
	}{
		{time.Date(2026, 11, 11, 12, 0, 0, 0, time.UTC), "20:00 Beijing time (UTC+08:00), Wed 11 Nov 2026", "2026年11月11日 20:00（北京时间）"},
		{time.Date(2026, 11, 11, 20, 30, 0, 0, time.UTC), "04:30 Beijing time (UTC+08:00), Thu 12 Nov 2026", "2026年11月12日 04:30（北京时间）"},
		{time.Date(2026, 11, 11, 4, 30, 0, 0, time.FixedZone("PST", -8*3600)), "20:30 Beijing time (UTC+08:00), Wed 11 Nov 2026", "2026年11月11日 20:30（北京时间）"},
	} {
		if got := When("en", tc.at); got != tc.en {
			t.Errorf("When(en, %v) = %q; want %q", tc.at, got, tc.en)
		}
		if got := When("zh", tc.at); got != tc.zh {
			t.Errorf("When(zh, %v) = %q; want %q", tc.at, got, tc.zh)
		}
	}
	r, err := Render(Message{Kind: KindRemindStart, Lang: "en", Data: map[string]string{"Sale": "Double 11",
		"Time": When("en", time.Date(2026, 11, 11, 12, 0, 0, 0, time.UTC)), "Link": "https://shop.test/items/4"}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Subject != "“Double 11” starts at 20:00 Beijing time (UTC+08:00), Wed 11 Nov 2026" {
		t.Errorf("an English reminder's subject: %q", r.Subject)
	}
}
