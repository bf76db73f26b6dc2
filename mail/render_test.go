package mail

import (
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// asciiColonAfterCJK is a colon typed the English way after Chinese text (a character or its
// punctuation), where Chinese takes the full-width "：".
var asciiColonAfterCJK = regexp.MustCompile(`[\p{Han}\x{3000}-\x{303F}\x{FF00}-\x{FFEF}“”]:`)

// Every kind of mail, rendered in Chinese, puts the full-width colon after its labels (the link's, the
// unsubscribe link's), in its subject, text and HTML; in English the same labels keep the ASCII one.
func TestEveryMailKindInChineseHasFullWidthColons(t *testing.T) {
	at := time.Date(2026, 11, 11, 11, 50, 0, 0, time.UTC)
	var all []string
	for k := range kinds {
		all = append(all, k)
	}
	for k := range renderers {
		all = append(all, k)
	}
	sort.Strings(all)
	if len(all) != 9 {
		t.Errorf("%d kinds of mail (%v): a new kind belongs in this test's data too", len(all), all)
	}
	for _, kind := range all {
		for _, lang := range []string{"zh", "en"} {
			data := map[string]string{"Username": "mei", "Email": "mei@example.com", "Link": "https://shop.test/x?token=ab",
				"Unsubscribe": "https://shop.test/unsubscribe?token=1.2.ab", "Sale": "双十一", "Time": When(lang, at),
				"Start": When(lang, at.Add(10*time.Minute)), "OrderNo": "SK1", "Item": "手机", "Amount": Money(990), "Reason": "价格有误"}
			r, err := Render(Message{Kind: kind, Lang: lang, Data: data})
			if err != nil {
				t.Fatalf("%s in %s: %v", kind, lang, err)
			}
			for part, s := range map[string]string{"subject": r.Subject, "text": r.Text, "HTML": r.HTML} {
				if m := asciiColonAfterCJK.FindStringIndex(s); m != nil {
					t.Errorf("%s in %s: the %s has an ASCII colon after Chinese at %q:\n%s", kind, lang, part, s[max(0, m[0]-12):m[1]], s)
				}
			}
			if _, linked := kinds[kind]; linked && kinds[kind].action == "" {
				continue // no label with a colon: the email-changed and password-changed mails
			}
			colon := map[string]string{"zh": "：\nhttps://shop.test/x?token=ab\n", "en": ":\nhttps://shop.test/x?token=ab\n"}[lang]
			if !strings.Contains(r.Text, colon) {
				t.Errorf("%s in %s: the link is not after its label and %q:\n%s", kind, lang, colon[:strings.Index(colon, "\n")], r.Text)
			}
		}
	}
}
