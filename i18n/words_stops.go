package i18n

// The fairness report's count of the draw's own entrants, apart from all who joined the line.
func init() {
	add(map[string]map[string]string{
		"en": {
			"report.inDraw": "Of them, in the draw (joined before the start)",
		},
		"zh": {
			"report.inDraw": "其中参与抽签（开始前加入）",
		},
	})
}
