package handlers

import (
	"strings"
	"testing"
	"time"

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
	svg := string(chartSVG(one, "t", "nothing"))
	for _, label := range []string{">4</text>", ">3</text>", ">2</text>", ">1</text>", ">0</text>"} {
		if !strings.Contains(svg, label) {
			t.Errorf("a peak of 1: the grid lacks %s", label)
		}
	}
	if empty := string(chartSVG(nil, "t", "No buy answers")); !strings.Contains(empty, "No buy answers") {
		t.Error("an empty chart says nothing")
	}
}
