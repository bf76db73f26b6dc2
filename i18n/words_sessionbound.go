package i18n

// The bound on one account's logins: past it, a login waits (429 with Retry-After).
func init() {
	add(map[string]map[string]string{
		"en": {
			"msg.logins_per_account": "This account has logged in too many times lately: wait a few minutes, then log in again.",
		},
		"zh": {
			"msg.logins_per_account": "此账号近期登录次数过多：请等待几分钟后再登录。",
		},
	})
}
