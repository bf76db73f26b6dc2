package mail

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
)

// Unsubscribes signs and checks the token of a reminder's unsubscribe link: "user.activity.mac", the
// mac 128 bits of HMAC-SHA256 under a key drawn from the shop's secret. The link needs no row of its
// own and works for as long as the reminder exists; it can only ever delete that one reminder.
type Unsubscribes struct{ key []byte }

// NewUnsubscribes draws the links' key from secret (SESSION_SECRET).
func NewUnsubscribes(secret string) *Unsubscribes {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("reminder unsubscribe links"))
	return &Unsubscribes{key: m.Sum(nil)}
}

// MaxTokenLen bounds a token a request may carry: two ids and 32 hex digits.
const MaxTokenLen = 80

func (u *Unsubscribes) mac(userID, activityID int64) string {
	m := hmac.New(sha256.New, u.key)
	m.Write([]byte(strconv.FormatInt(userID, 10) + "." + strconv.FormatInt(activityID, 10)))
	return hex.EncodeToString(m.Sum(nil)[:16])
}

// Token is the unsubscribe token of user's reminder of activity.
func (u *Unsubscribes) Token(userID, activityID int64) string {
	return strconv.FormatInt(userID, 10) + "." + strconv.FormatInt(activityID, 10) + "." + u.mac(userID, activityID)
}

// Check answers the user and activity a token names, when the token is one Token made, byte for byte:
// another spelling of its ids or its mac (leading zeros, a sign, upper-case hex) is not one it made.
func (u *Unsubscribes) Check(token string) (userID, activityID int64, ok bool) {
	if len(token) > MaxTokenLen {
		return 0, 0, false
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return 0, 0, false
	}
	uid, err1 := strconv.ParseInt(parts[0], 10, 64)
	aid, err2 := strconv.ParseInt(parts[1], 10, 64)
	if err1 != nil || err2 != nil || uid <= 0 || aid <= 0 {
		return 0, 0, false
	}
	if !hmac.Equal([]byte(token), []byte(u.Token(uid, aid))) {
		return 0, 0, false
	}
	return uid, aid, true
}
