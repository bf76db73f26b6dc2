package i18n

func init() {
	add(map[string]map[string]string{
		"en": {
			"cal.lineOpens":  "The line opens",
			"cal.saleStarts": "Flash sale",
			"cal.add":        "Add to calendar",
		},
		"zh": {
			"cal.lineOpens":  "排队开始",
			"cal.saleStarts": "秒杀",
			"cal.add":        "添加到日历",
		},
	})
}
