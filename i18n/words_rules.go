package i18n

// The address rule's refusals that say more than its code's sentence ("already entered").
func init() {
	add(map[string]map[string]string{
		"en": {
			"msg.too_many_addresses": "You have given this sale as many delivery addresses as it takes: choose one you gave before.",
			"msg.not_your_entry":     "This sale's orders go to the address given when joining its line, as it was then: choose that address (add it again if it was changed since).",
		},
		"zh": {
			"msg.too_many_addresses": "您在本次活动中提交的收货地址已达上限：请选择之前提交过的地址。",
			"msg.not_your_entry":     "本次活动的订单须寄往排队时提交的地址（以当时的内容为准）：请选择该地址（如已修改，请重新添加）。",
		},
	})
}
