package i18n

// The words of a buy held after a Redis failover (issue 36): the shop checks its books against the
// database before it sells again, which takes a second or two. Not sold out, not failed: try again.
func init() {
	add(map[string]map[string]string{
		"en": {
			"msg.redis_failover":    "The shop is switching to its standby stock server and checking its books: try again in a moment.",
			"msg.redis_no_replicas": "The shop's stock server is waiting for its standby to answer: try again in a moment.",
		},
		"zh": {
			"msg.redis_failover":    "商城正在切换到备用库存服务器并核对账目：请稍后再试。",
			"msg.redis_no_replicas": "商城的库存服务器正在等待备用服务器响应：请稍后再试。",
		},
	})
}
