package i18n

// The words of an action a sale's state does not allow (models.NextActivityState), one an action: what
// the sale must be for it, and, where a page may have lost a race, to reload.
func init() {
	add(map[string]map[string]string{
		"en": {
			"msg.sale_state.edit":     "Only a draft or a rejected sale can be changed.",
			"msg.sale_state.submit":   "Only a draft or a rejected sale can be sent for review.",
			"msg.sale_state.approve":  "Only a sale in review can be approved: it was withdrawn or decided already. Reload the page.",
			"msg.sale_state.reject":   "Only a sale in review can be rejected: it was withdrawn or decided already. Reload the page.",
			"msg.sale_state.withdraw": "This sale is no longer in review: a reviewer has decided on it already. Reload the page.",
			"msg.sale_state.pause":    "Only an approved sale that has not ended can be paused.",
			"msg.sale_state.resume":   "Only an approved sale that has not ended can be resumed.",
			"msg.sale_state.end":      "Only an approved sale that has not ended can be ended.",
		},
		"zh": {
			"msg.sale_state.edit":     "只有草稿或被驳回的活动可以修改。",
			"msg.sale_state.submit":   "只有草稿或被驳回的活动可以提交审核。",
			"msg.sale_state.approve":  "只有审核中的活动可以通过：它已被撤回或已有审核结果，请刷新页面。",
			"msg.sale_state.reject":   "只有审核中的活动可以驳回：它已被撤回或已有审核结果，请刷新页面。",
			"msg.sale_state.withdraw": "该活动已不在审核中：审核员已作出决定，请刷新页面。",
			"msg.sale_state.pause":    "只有已通过且尚未结束的活动可以暂停。",
			"msg.sale_state.resume":   "只有已通过且尚未结束的活动可以恢复。",
			"msg.sale_state.end":      "只有已通过且尚未结束的活动可以结束。",
		},
	})
}
