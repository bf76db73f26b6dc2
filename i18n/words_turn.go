package i18n

// The words of "your turn, announced" and of the item page's corrections (issue 33): the offer to be told
// when the turn comes, the sound's switch, the notification and the title, and what the page says of a
// cancelled order, a wait under a minute, a paused sale to those not in line and a join without the
// captcha's answer. The item page's script reads the "queue." and "buy." keys.
func init() {
	add(map[string]map[string]string{
		"en": {
			"queue.notifyOffer":   "Tell me when it's my turn",
			"queue.notifyOn":      "You'll get a notification when it's your turn, even in another tab.",
			"queue.notifyBlocked": "Notifications are blocked for this site: keep this tab open, its title and a sound will tell you.",
			"queue.soundSwitch":   "Sound when it's my turn",
			"queue.alertTitle":    "Your turn: %s",
			"queue.alertBody":     "%d s left to buy. Open the tab and press Buy.",
			"queue.titleTurn":     "Your turn",
			"queue.waitSoon":      "less than a minute",
			"queue.waitMin":       "about %d min",
			"queue.pausedOut":     "This sale is paused by the shop's staff. Buying and joining wait until it resumes.",
			"queue.typeCaptcha":   "To join the line, type the characters in the picture.",
			"buy.cancelled":       "Your order %s was cancelled. Each shopper has one chance at this item in this sale.",
		},
		"zh": {
			"queue.notifyOffer":   "轮到我时通知我",
			"queue.notifyOn":      "轮到您时会收到通知，即使在其他标签页中。",
			"queue.notifyBlocked": "此网站的通知已被浏览器阻止：请保持此标签页打开，轮到您时标题和提示音会提醒您。",
			"queue.soundSwitch":   "轮到我时播放提示音",
			"queue.alertTitle":    "轮到您了：%s",
			"queue.alertBody":     "还剩 %d 秒购买。请打开标签页并点击购买。",
			"queue.titleTurn":     "轮到您了",
			"queue.waitSoon":      "不到一分钟",
			"queue.waitMin":       "约 %d 分钟",
			"queue.pausedOut":     "活动已被工作人员暂停。恢复后才能购买或加入排队。",
			"queue.typeCaptcha":   "加入排队前，请输入图片中的字符。",
			"buy.cancelled":       "您的订单 %s 已取消。每位用户在本场活动中对该商品只有一次购买机会。",
		},
	})
}
