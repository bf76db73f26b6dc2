package i18n

// The words of a merchant running its own sales (issue 34): where each sale is as a person says it
// (sales.phase.*), the new decisions' badge, taking a sale back from review, the merchant's own emergency
// stop, and the mail of a reviewer's decision (decision.mail.*).
func init() {
	add(map[string]map[string]string{
		"en": {
			"sales.phase.draft":       "Draft",
			"sales.phase.in_review":   "In review",
			"sales.phase.rejected":    "Rejected",
			"sales.phase.upcoming":    "Upcoming",
			"sales.phase.live":        "Live",
			"sales.phase.paused":      "Paused",
			"sales.phase.over":        "Over",
			"sales.new":               "New",
			"sales.unseen":            "Sales approved or rejected since you last looked",
			"audit.activity.withdraw": "took a sale back from review",

			"sales.withdrawTitle":   "Take it back from review",
			"sales.withdrawHint":    "Found a mistake? Take the sale back to your drafts, fix it, and submit it again.",
			"sales.withdraw":        "Withdraw to draft",
			"sales.confirmWithdraw": "Take this sale back from review? It becomes a draft until you submit it again.",

			"sales.stopTitle":       "Stop this sale",
			"sales.stopHint":        "A wrong price or a problem with stock? Pause the sale at once, or end it now. The shop's staff see it with your reason.",
			"sales.stopReason":      "Reason (the shop's staff see it)",
			"sales.reasonMissing":   "Give a reason first.",
			"sales.adminPaused":     "Paused by the shop's staff: only they can resume it.",
			"stop.pausedByMerchant": "Paused by the merchant since",
			"stop.endedByMerchant":  "Ended early by the merchant:",
			"stop.over":             "This sale is over: there is nothing left to pause or end.",

			"decision.mail.action":           "Open the sale",
			"decision.mail.approved.subject": "Your sale “{sale}” is approved",
			"decision.mail.approved.body":    "Good news: “{sale}” was approved. It goes on sale at {time}.",
			"decision.mail.rejected.subject": "Your sale “{sale}” was rejected",
			"decision.mail.rejected.body":    "“{sale}” was not approved. Change it and submit it again.",
			"decision.mail.rejected.reason":  "The reviewer's reason: {reason}",
		},
		"zh": {
			"sales.phase.draft":       "草稿",
			"sales.phase.in_review":   "审核中",
			"sales.phase.rejected":    "已驳回",
			"sales.phase.upcoming":    "即将开始",
			"sales.phase.live":        "进行中",
			"sales.phase.paused":      "已暂停",
			"sales.phase.over":        "已结束",
			"sales.new":               "新",
			"sales.unseen":            "您上次查看后有活动通过或被驳回",
			"audit.activity.withdraw": "撤回了活动审核",

			"sales.withdrawTitle":   "撤回审核",
			"sales.withdrawHint":    "发现错误？把活动撤回到草稿，修改后重新提交。",
			"sales.withdraw":        "撤回为草稿",
			"sales.confirmWithdraw": "从审核中撤回此活动？在重新提交前它将是草稿。",

			"sales.stopTitle":       "停止此活动",
			"sales.stopHint":        "价格标错或库存有问题？可立即暂停活动，或立即结束。工作人员会看到此操作及原因。",
			"sales.stopReason":      "原因（工作人员可见）",
			"sales.reasonMissing":   "请先填写原因。",
			"sales.adminPaused":     "已被工作人员暂停：只有工作人员可以恢复。",
			"stop.pausedByMerchant": "已被商家暂停，自",
			"stop.endedByMerchant":  "已被商家提前结束：",
			"stop.over":             "此活动已结束：无法再暂停或结束。",

			"decision.mail.action":           "打开活动",
			"decision.mail.approved.subject": "您的活动“{sale}”已通过审核",
			"decision.mail.approved.body":    "好消息：“{sale}”已通过审核，将于 {time} 开售。",
			"decision.mail.rejected.subject": "您的活动“{sale}”未通过审核",
			"decision.mail.rejected.body":    "“{sale}”未通过审核。请修改后重新提交。",
			"decision.mail.rejected.reason":  "审核原因：{reason}",
		},
	})
}
