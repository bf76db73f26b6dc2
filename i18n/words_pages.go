package i18n

// The shopper's pages made plainer (issue 33): a wrong captcha among registration's field errors, phone
// numbers checked by their country's rules, the home page's sold-out badge, why and when an order was
// cancelled, the orders list's filter, editing an address and a question before deleting one.
func init() {
	add(map[string]map[string]string{
		"en": {
			"why.captcha_wrong":    "is wrong: try the new picture",
			"why.phone_number":     "must be a phone number, such as 138 0013 8000 or +86 138 0013 8000",
			"why.phone_country":    "starts with a country code no country has: check the digits after +",
			"why.phone_short":      "is too short for a phone number of {0}: is a digit missing?",
			"why.phone_long":       "is too long for a phone number of {0}: is there a digit too many?",
			"why.phone_invalid":    "is not a phone number of {0}: check the digits",
			"why.my_orders_filter": "must be all, pending_payment, paid, shipped, cancelled or refunded",
			"home.soldOut":         "Sold out",
			"home.view":            "View",
			"orders.filter":        "Show orders",
			"orders.all":           "All",
			"orders.toPay":         "To pay",
			"orders.noneHere":      "No orders here.",
			"orders.cancelledAt":   "on",
			"orders.why.buyer":     "You cancelled it",
			"orders.why.unpaid":    "Not paid in time",
			"addr.phoneHelp":       "A number without a country code is read as a {0} number.",
			"addr.edit":            "Edit",
			"addr.save":            "Save this address",
			"addr.keep":            "Keep it",
			"addr.deleteAsk":       "Delete this address?",
			"addr.deleteYes":       "Delete",
		},
		"zh": {
			"why.captcha_wrong":    "错误，请输入新图片中的数字",
			"why.phone_number":     "须为电话号码，例如 138 0013 8000 或 +86 138 0013 8000",
			"why.phone_country":    "国家代码不存在：请检查 + 后面的数字",
			"why.phone_short":      "位数太少，不是 {0} 的电话号码：是否漏了数字？",
			"why.phone_long":       "位数太多，不是 {0} 的电话号码：是否多了数字？",
			"why.phone_invalid":    "不是 {0} 的有效电话号码：请检查数字",
			"why.my_orders_filter": "须为 all、pending_payment、paid、shipped、cancelled 或 refunded",
			"home.soldOut":         "已售罄",
			"home.view":            "查看",
			"orders.filter":        "筛选订单",
			"orders.all":           "全部",
			"orders.toPay":         "待支付",
			"orders.noneHere":      "这里没有订单。",
			"orders.cancelledAt":   "取消于",
			"orders.why.buyer":     "您已取消",
			"orders.why.unpaid":    "超时未支付",
			"addr.phoneHelp":       "不带国家代码的号码按 {0} 号码处理。",
			"addr.edit":            "编辑",
			"addr.save":            "保存地址",
			"addr.keep":            "保留",
			"addr.deleteAsk":       "删除这个地址？",
			"addr.deleteYes":       "删除",
		},
	})
}
