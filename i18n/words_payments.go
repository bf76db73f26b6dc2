package i18n

// The payment providers a shopper chooses among, and what the pay request says of a wrong choice.
func init() {
	add(map[string]map[string]string{
		"en": {
			"code.payment_refused": "This payment method cannot take this payment: choose another.",
			"field.provider":       "Payment method",
			"why.provider_one_of":  "must be one of: {0}",
			"pay.provider.wechat":  "WeChat Pay",
			"pay.provider.alipay":  "Alipay",
			"pay.provider.http":    "Online payment",
			"pay.provider.sandbox": "Sandbox (no money moves)",
			"pay.choose":           "Pay with",
			"pay.scanWith.wechat":  "Scan with WeChat to pay",
			"pay.scanWith.alipay":  "Scan with Alipay to pay",
			"pay.scanWith.http":    "Scan to pay",
			"pay.scanWith.sandbox": "Scan to pay (sandbox: no money moves)",
			"msg.pay_refused":      "This payment method cannot take this payment: choose another, or ask the shop (your order keeps its deadline).",
			"msg.pay_in_progress":  "This order is being paid right now: finish or cancel the payment in your payment app, then try again (your order is unchanged).",
		},
		"zh": {
			"code.payment_refused": "该支付方式无法受理这笔付款，请换一种支付方式。",
			"field.provider":       "支付方式",
			"why.provider_one_of":  "须为以下之一：{0}",
			"pay.provider.wechat":  "微信支付",
			"pay.provider.alipay":  "支付宝",
			"pay.provider.http":    "在线支付",
			"pay.provider.sandbox": "沙箱（不扣款）",
			"pay.choose":           "支付方式",
			"pay.scanWith.wechat":  "请用微信扫一扫付款",
			"pay.scanWith.alipay":  "请用支付宝扫一扫付款",
			"pay.scanWith.http":    "扫码付款",
			"pay.scanWith.sandbox": "扫码付款（沙箱：不扣款）",
			"msg.pay_refused":      "该支付方式无法受理这笔付款：请换一种支付方式，或联系商家（订单的支付期限不变）。",
			"msg.pay_in_progress":  "该订单正在付款中：请先在支付应用中完成或取消付款，再重试（订单未变）。",
		},
	})
}
