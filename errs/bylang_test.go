package errs

import (
	"strings"
	"testing"

	"seckill/i18n"
)

// A ByLang argument is said in each reader's words: the not_eligible refusal's moment read "2026-11-26
// 16:47 UTC" on a Chinese page while the pages and mails say local and Beijing time (issue 34 row 14).
func TestSayWithByLang(t *testing.T) {
	when := ByLang(func(lang string) string {
		if lang == "zh" {
			return "2026年11月26日 16:47（北京时间）"
		}
		return "16:47 Beijing time"
	})
	e := SayWith(NotEligible, "not_eligible_since", when)
	if !strings.Contains(e.Message, "announced, at 16:47 Beijing time;") {
		t.Errorf("English: %q", e.Message)
	}
	zh := e.Localize("zh", i18n.For("zh").T)
	if !strings.Contains(zh.Message, "仅限 2026年11月26日 16:47（北京时间） 活动公布前") {
		t.Errorf("Chinese: %q", zh.Message)
	}
}
