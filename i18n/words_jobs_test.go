package i18n

import "testing"

// The admin's jobs table says a round's counts in words, never the code's keys ("items 4 cancelled 0").
func TestJobCountsInWords(t *testing.T) {
	counts := map[string]int64{"items": 4, "cancelled": 0}
	for lang, want := range map[string]string{"en": "cancelled 0 · items 4", "zh": "已取消 0，商品 4"} {
		if got := For(lang).JobCounts(counts); got != want {
			t.Errorf("%s: JobCounts = %q, want %q", lang, got, want)
		}
	}
	if got := For("zh").Job("payment_poll"); got != "支付核对" {
		t.Errorf("zh: payment_poll reads %q", got)
	}
	if got := For("zh").Job("new_job"); got != "new_job" {
		t.Errorf("a job without words reads %q, want its name", got)
	}
}
