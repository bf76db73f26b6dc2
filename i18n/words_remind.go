package i18n

// The words of reminders and receipts: the "Remind me" button (remind.*), the mails (remind.mail.*,
// receipt.mail.*), the unsubscribe page (unsub.*) and the errors.
func init() {
	add(map[string]map[string]string{
		"en": {
			"remind.button":      "Remind me",
			"remind.on":          "Reminding you ✓",
			"remind.off":         "Stop reminding me",
			"remind.note":        "We mail you a few minutes before the start, and when the line opens if the sale has one.",
			"remind.needEmail":   "Reminders are mailed: add and verify an e-mail address first.",
			"remind.addEmail":    "Add an e-mail address",
			"remind.login":       "Log in to be reminded",
			"remind.calendar":    "Add to calendar",
			"remind.failed":      "The reminder could not be saved: try again.",
			"remind.mail.action": "Open the sale",

			"remind.mail.open.subject":  "The line for “{sale}” opens at {time}",
			"remind.mail.open.body":     "You asked to be reminded: the waiting line for “{sale}” opens at {time}, and the sale starts at {start}.",
			"remind.mail.open.join":     "Join the line on the sale's page before the start: places are drawn at the start, so any moment before it is as good as the first.",
			"remind.mail.start.subject": "“{sale}” starts at {time}",
			"remind.mail.start.body":    "You asked to be reminded: “{sale}” starts at {time}. Open the sale's page a minute early.",
			"remind.mail.unsubscribe":   "Stop reminders for this sale",

			"receipt.mail.subject": "Your receipt for order {orderno}",
			"receipt.mail.body":    "Thank you: your payment is received and your order is paid.",
			"receipt.mail.order":   "Order number: {orderno}",
			"receipt.mail.item":    "Item: {item}",
			"receipt.mail.amount":  "Amount paid: {amount}",
			"receipt.mail.time":    "Paid at: {time}",
			"receipt.mail.action":  "See the order",

			"unsub.title":  "Stop reminders",
			"unsub.ask":    "Stop the e-mail reminders of “{sale}”? Nothing else changes.",
			"unsub.submit": "Stop these reminders",
			"unsub.done":   "Done: no more reminders of this sale will be mailed to you.",
			"unsub.bad":    "This link is unknown, or its reminder was stopped already.",
			"unsub.home":   "Back to the shop",

			"code.email_required": "Reminders are mailed: add an e-mail address to your account and verify it first.",
			"msg.remind_started":  "This sale has started or ended: reminders are for sales to come.",
		},
		"zh": {
			"remind.button":      "提醒我",
			"remind.on":          "已设置提醒 ✓",
			"remind.off":         "取消提醒",
			"remind.note":        "开售前几分钟（以及排队开放时，如有排队）我们会发邮件提醒您。",
			"remind.needEmail":   "提醒通过邮件发送：请先添加并验证邮箱地址。",
			"remind.addEmail":    "添加邮箱地址",
			"remind.login":       "登录后设置提醒",
			"remind.calendar":    "添加到日历",
			"remind.failed":      "提醒未能保存，请重试。",
			"remind.mail.action": "打开活动页面",

			"remind.mail.open.subject":  "“{sale}”的排队将于 {time} 开放",
			"remind.mail.open.body":     "您设置了提醒：“{sale}”的排队将于 {time} 开放，活动于 {start} 开始。",
			"remind.mail.open.join":     "请在开始前到活动页面排队：名次在开始时抽取，开始前任何时候加入都与第一个加入的一样。",
			"remind.mail.start.subject": "“{sale}”将于 {time} 开始",
			"remind.mail.start.body":    "您设置了提醒：“{sale}”将于 {time} 开始，请提前一分钟打开活动页面。",
			"remind.mail.unsubscribe":   "不再接收此活动的提醒",

			"receipt.mail.subject": "订单 {orderno} 的付款凭证",
			"receipt.mail.body":    "感谢您的购买：我们已收到您的付款，订单已支付。",
			"receipt.mail.order":   "订单号：{orderno}",
			"receipt.mail.item":    "商品：{item}",
			"receipt.mail.amount":  "支付金额：{amount}",
			"receipt.mail.time":    "支付时间：{time}",
			"receipt.mail.action":  "查看订单",

			"unsub.title":  "取消提醒",
			"unsub.ask":    "不再接收“{sale}”的邮件提醒？其他设置不受影响。",
			"unsub.submit": "取消这些提醒",
			"unsub.done":   "已完成：不会再向您发送此活动的提醒。",
			"unsub.bad":    "此链接无效，或该提醒已经取消。",
			"unsub.home":   "返回商城",

			"code.email_required": "提醒通过邮件发送：请先为账户添加邮箱地址并完成验证。",
			"msg.remind_started":  "此活动已经开始或结束：提醒仅适用于即将开始的活动。",
		},
	})
}
