package i18n

// The words of a buy or a join the Redis replicas had not acknowledged in time (issue 36): the unit or
// the place is taken on the master, but the promise is not made yet; and of one a failover then lost.
// The item page's script reads the "buy." and "queue." keys, the live chart "chart.".
func init() {
	add(map[string]map[string]string{
		"en": {
			"buy.unconfirmed":   "Not confirmed yet: your result will say…",
			"chart.unconfirmed": "unconfirmed",
			"queue.unconfirmed": "You joined, but your place is not confirmed yet: if this page later shows you out of the line, join again",
			"queue.lost":        "Your place in the line was lost before it was confirmed: join again.",
			"buy.lost":          "Your purchase did not go through: it was lost before it was confirmed. Nothing was taken from you, the unit is back on sale, and you may buy again.",
		},
		"zh": {
			"buy.unconfirmed":   "尚未确认：请等待您的结果…",
			"chart.unconfirmed": "未确认",
			"queue.unconfirmed": "您已加入，但位置尚未确认：如果此页面之后显示您不在队伍中，请重新加入",
			"queue.lost":        "您的排队位置在确认之前丢失了：请重新加入。",
			"buy.lost":          "您的购买未能完成：在确认之前已丢失。您没有任何损失，该商品已重新开售，您可以再次购买。",
		},
	})
}
