package i18n

// The words of a buy held after a Redis failover (issue 36): the shop checks its books against the
// database before it sells again, which takes a second or two. Not sold out, not failed: try again.
func init() {
	add(map[string]map[string]string{
		"en": {
			"msg.redis_failover": "The shop is switching to its standby stock server and checking its books: try again in a moment.",
		},
		"zh": {
			"msg.redis_failover": "商城正在切换到备用库存服务器并核对账目：请稍后再试。",
		},
	})
}
