package i18n

// The consoles' words of issue 34: the dashboard's units and money (live.*), the upload limit, the CSV
// summary, an empty "To ship", role and payment names, and the shop's contact for a blocked account.
func init() {
	add(map[string]map[string]string{
		"en": {
			"live.refunded":        "Refunded",
			"live.cancelledBack":   "Cancelled (back in Left)",
			"live.revenuePaid":     "Revenue paid",
			"live.revenueRefunded": "Money refunded",
			"live.unitsHelp":       "Every unit is in one of Left, Queued, Awaiting payment, Paid and Refunded: they add up to Stock. A cancelled order's unit goes back to Left; a refunded one is not sold again. Revenue paid counts the orders paid and kept (shipped ones too).",

			"why.file_too_large":  "is larger than {0} MB: send a smaller file",
			"why.image_too_large": "The image is larger than {0} MB: send a smaller one (a phone photo saved at a lower size, say).",
			"why.order_unknown":   "is not an order of this sale: check the number against the downloaded CSV",

			"ful.dismiss":     "Dismiss",
			"ful.noneToShip":  "Nothing left to ship: every paid order is shipped.",
			"ful.noneShipped": "No order is shipped yet.",

			"role.shopper":  "Shopper",
			"role.merchant": "Merchant",
			"role.admin":    "Admin",

			"payment.open":   "Open",
			"payment.paid":   "Paid",
			"payment.closed": "Closed",

			"msg.blocked_contact":     "This account is blocked: write to %s to ask why.",
			"msg.blocked_no_contact":  "This account is blocked by the shop's staff.",
			"forgot.noEmailContact":   "No verified e-mail on the account? Then its password cannot be reset by mail: write to {contact}.",
			"forgot.noEmailNoContact": "No verified e-mail on the account? Then its password cannot be reset by mail: ask the shop's staff.",
		},
		"zh": {
			"live.refunded":        "已退款",
			"live.cancelledBack":   "已取消（已回到剩余）",
			"live.revenuePaid":     "已收款",
			"live.revenueRefunded": "已退款金额",
			"live.unitsHelp":       "每件库存都在“剩余、排队中、待支付、已支付、已退款”之一，加起来等于库存。已取消订单的那件回到剩余；已退款的那件不再出售。已收款计入已支付且未退款的订单（含已发货）。",

			"why.file_too_large":  "大于 {0} MB：请上传更小的文件",
			"why.image_too_large": "图片大于 {0} MB：请上传更小的图片（例如以较小尺寸保存的手机照片）",
			"why.order_unknown":   "不是本活动的订单：请对照下载的 CSV 核对订单号",

			"ful.dismiss":     "关闭",
			"ful.noneToShip":  "没有待发货的订单：已付款订单均已发货。",
			"ful.noneShipped": "还没有已发货的订单。",

			"role.shopper":  "顾客",
			"role.merchant": "商家",
			"role.admin":    "管理员",

			"payment.open":   "待支付",
			"payment.paid":   "已支付",
			"payment.closed": "已关闭",

			"msg.blocked_contact":     "此账号已被封禁：如需了解原因，请联系 %s。",
			"msg.blocked_no_contact":  "此账号已被商城工作人员封禁。",
			"forgot.noEmailContact":   "账户没有已验证的邮箱？那就无法通过邮件重置密码，请联系 {contact}。",
			"forgot.noEmailNoContact": "账户没有已验证的邮箱？那就无法通过邮件重置密码，请联系商城工作人员。",
		},
	})
}
