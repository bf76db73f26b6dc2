package payment

import (
	"errors"
	"strconv"
	"strings"
)

// Amounts: the shop keeps money in cents of its currency, CNY with WeChat Pay and Alipay, so a cent is a
// fen. WeChat Pay takes fen as an integer; Alipay takes yuan as a decimal with at most two places
// ("0.01" to "100000000.00").

// MaxCents is the largest amount Alipay takes: 100,000,000.00 yuan. WeChat Pay's is smaller, an int32
// of fen (21,474,836.47 yuan): package wechatpay refuses more.
const MaxCents = 100_000_000_00

// Yuan writes cents as Alipay's yuan with two decimals: 1 → "0.01", 12345 → "123.45".
func Yuan(cents int64) string {
	neg := cents < 0
	if neg {
		cents = -cents
	}
	s := strconv.FormatInt(cents/100, 10) + "." + strconv.FormatInt(100+cents%100, 10)[1:]
	if neg {
		return "-" + s
	}
	return s
}

var errBadYuan = errors.New("not an amount in yuan with at most two decimals")

// ParseYuan reads Alipay's yuan ("123.45", "123.4", "123") as cents; anything else (a sign, an exponent,
// a third decimal, more than MaxCents) is an error.
func ParseYuan(s string) (int64, error) {
	whole, frac, dot := strings.Cut(s, ".")
	if whole == "" || len(whole) > 9 || len(frac) > 2 || dot && frac == "" || !digits(whole) || !digits(frac) {
		return 0, errBadYuan
	}
	w, _ := strconv.ParseInt(whole, 10, 64)
	f := int64(0)
	if frac != "" {
		f, _ = strconv.ParseInt(frac, 10, 64)
		if len(frac) == 1 {
			f *= 10
		}
	}
	c := w*100 + f
	if c > MaxCents {
		return 0, errBadYuan
	}
	return c, nil
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// ValidPaymentNo reports whether no can be the shop's number of a payment at WeChat Pay and Alipay: 6 to
// 32 letters, digits or "_" (WeChat Pay takes 6–32 of letters, digits, "_-|*"; Alipay up to 64 of letters,
// digits and "_").
func ValidPaymentNo(no string) bool {
	if len(no) < 6 || len(no) > 32 {
		return false
	}
	for i := 0; i < len(no); i++ {
		if b := no[i]; !('0' <= b && b <= '9' || 'A' <= b && b <= 'Z' || 'a' <= b && b <= 'z' || b == '_') {
			return false
		}
	}
	return true
}
