package handlers

import (
	"strings"
	"testing"
	"time"

	"seckill/i18n"
	"seckill/stock"
)

// The chart's grid reads in whole numbers whatever the peak, and an empty chart says so.
func TestChartScaleAndEmpty(t *testing.T) {
	for peak, want := range map[int64]int64{1: 4, 3: 4, 5: 8, 9: 20, 41: 80, 150: 200, 1999: 2000, 2001: 4000} {
		if got := niceTop(peak); got != want || got%4 != 0 {
			t.Errorf("niceTop(%d) = %d, want %d", peak, got, want)
		}
	}
	one := []stock.Point{{At: time.Now(), Counts: map[string]int64{"queued": 1}}, {At: time.Now(), Counts: map[string]int64{"queued": 0}}}
	svg := string(chartSVG(one, "t", i18n.For("en")))
	for _, label := range []string{">4</text>", ">3</text>", ">2</text>", ">1</text>", ">0</text>"} {
		if !strings.Contains(svg, label) {
			t.Errorf("a peak of 1: the grid lacks %s", label)
		}
	}
	if empty := string(chartSVG(nil, "t", i18n.For("en"))); !strings.Contains(empty, "No buy answers") {
		t.Error("an empty chart says nothing")
	}
}

// The legend says each answer in the reader's words, never its code (issue 34 row 14).
func TestChartLegendInChinese(t *testing.T) {
	both := []stock.Point{{At: time.Now(), Counts: map[string]int64{"queued": 3, "sold_out": 2}}}
	svg := string(chartSVG(both, "t", i18n.For("zh")))
	for _, word := range []string{">已排队</text>", ">售罄</text>"} {
		if !strings.Contains(svg, word) {
			t.Errorf("the Chinese legend lacks %s", word)
		}
	}
	for _, code := range []string{">queued<", ">sold_out<"} {
		if strings.Contains(svg, code) {
			t.Errorf("the Chinese legend shows the code %s", code)
		}
	}
	if en := string(chartSVG(both, "t", i18n.For("en"))); !strings.Contains(en, ">sold out</text>") {
		t.Error("the English legend does not say sold out in words")
	}
}
