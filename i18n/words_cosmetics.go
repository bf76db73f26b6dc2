package i18n

// The words of the review's small fixes (issue 33): the colon a mail puts after a label, the answer to
// ending a device that is not logged in, the e-mail page's headings, and leaving an address's edit form.
func init() {
	add(map[string]map[string]string{
		"en": {
			"mail.colon":          ":",
			"msg.no_such_session": "This device is not logged in to your account (it was logged out already, or it is not yours).",
			"email.addTitle":      "Add an address",
			"email.changeTitle":   "Change the address",
			"addr.editCancel":     "Cancel",
		},
		"zh": {
			// Chinese text takes the full-width colon.
			"mail.colon":          "：",
			"msg.no_such_session": "该设备没有登录您的账号（可能已经退出登录，或不是您的设备）。",
			"email.addTitle":      "添加邮箱地址",
			"email.changeTitle":   "更换邮箱地址",
			"addr.editCancel":     "取消",
		},
	})
}
