package i18n

// The words of a buy the Redis replicas had not acknowledged in time (issue 36): the unit is taken on
// the master, but the promise is not made yet. The item page's script reads the "buy." keys.
func init() {
	add(map[string]map[string]string{
		"en": {
			"buy.unconfirmed": "Not confirmed yet: your result will say…",
		},
		"zh": {
			"buy.unconfirmed": "尚未确认：请等待您的结果…",
		},
	})
}
