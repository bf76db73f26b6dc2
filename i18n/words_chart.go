package i18n

// The live chart's legend (issue 34 row 14): each buy answer the chart draws (stock.AnswerKinds), which
// the legend showed as its code (queued, sold_out).
func init() {
	add(map[string]map[string]string{
		"en": {
			"chart.queued":         "queued",
			"chart.sold_out":       "sold out",
			"chart.already_bought": "already bought",
			"chart.invalid_path":   "link expired",
			"chart.rate_limited":   "too many tries",
			"chart.not_started":    "not started",
			"chart.ended":          "ended",
			"chart.paused":         "paused",
			"chart.other":          "other",
		},
		"zh": {
			"chart.queued":         "已排队",
			"chart.sold_out":       "售罄",
			"chart.already_bought": "已购买过",
			"chart.invalid_path":   "链接过期",
			"chart.rate_limited":   "过于频繁",
			"chart.not_started":    "未开始",
			"chart.ended":          "已结束",
			"chart.paused":         "已暂停",
			"chart.other":          "其他",
		},
	})
}
