package i18n

// The words of an order's story on the admins' orders page that no audit row writes: its cancel, said
// from the order's own columns (the reason "unpaid" in the words of the buyer's own page).
func init() {
	add(map[string]map[string]string{
		"en": {
			"story.cancelled": "cancelled the order",
			"story.why.buyer": "The buyer cancelled it",
		},
		"zh": {
			"story.cancelled": "取消了订单",
			"story.why.buyer": "买家取消",
		},
	})
}
