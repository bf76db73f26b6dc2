package i18n

// The words of a buy the Redis replicas had not acknowledged in time (issue 36): the unit is taken on
// the master, but the promise is not made yet. The item page's script reads the "buy." keys.
func init() {
	add(map[string]map[string]string{
		"en": {
			"buy.unconfirmed":   "Not confirmed yet: your result will say…",
			"chart.unconfirmed": "unconfirmed",
			"buy.lost":          "Your purchase did not go through: it was lost before it was confirmed. Nothing was taken from you, the unit is back on sale, and you may buy again.",
		},
		"zh": {
			"buy.unconfirmed":   "尚未确认：请等待您的结果…",
			"chart.unconfirmed": "未确认",
			"buy.lost":          "您的购买未能完成：在确认之前已丢失。您没有任何损失，该商品已重新开售，您可以再次购买。",
		},
	})
}
