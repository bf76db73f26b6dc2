package wechatpay

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/wechatpay-apiv3/wechatpay-go/utils"
)

// Config is what the shop needs of its WeChat Pay merchant account (docs/payments-wechat.md says where
// each value is found in the merchant console, 商户平台).
type Config struct {
	MchID     string // 商户号 (WECHAT_PAY_MCH_ID)
	AppID     string // the AppID bound to the merchant number (WECHAT_PAY_APP_ID)
	MchSerial string // the merchant API certificate's serial number, 商户API证书序列号 (WECHAT_PAY_MCH_SERIAL)
	MchKeyPEM string // the merchant API private key, apiclient_key.pem (WECHAT_PAY_MCH_KEY)
	APIv3Key  string // APIv3密钥, 32 bytes (WECHAT_PAY_API_V3_KEY)
	// PublicKeyPEM and PublicKeyID are the WeChat Pay public key (微信支付公钥) and its id
	// ("PUB_KEY_ID_…"), for merchants in public-key mode. Without them the platform certificates
	// (平台证书) are downloaded from /v3/certificates and kept current.
	PublicKeyPEM string // WECHAT_PAY_PUBLIC_KEY
	PublicKeyID  string // WECHAT_PAY_PUBLIC_KEY_ID
	// NotifyURL is where WeChat Pay calls the shop back: https, no query
	// (BASE_URL + "/api/payments/notify/wechat").
	NotifyURL string
}

// Check returns every problem of the configuration, each naming its environment variable; none for a
// configuration New can use.
func (c Config) Check() []error {
	var errs []error
	bad := func(env, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: "+format, append([]any{env}, args...)...))
	}
	if c.MchID == "" {
		bad("WECHAT_PAY_MCH_ID", "missing: the merchant number (商户号)")
	} else if !allDigits(c.MchID) || len(c.MchID) > 32 {
		bad("WECHAT_PAY_MCH_ID", "must be the merchant number, digits only")
	}
	if c.AppID == "" {
		bad("WECHAT_PAY_APP_ID", "missing: the AppID bound to the merchant number")
	}
	if c.MchSerial == "" {
		bad("WECHAT_PAY_MCH_SERIAL", "missing: the merchant API certificate's serial number")
	} else if !isHex(c.MchSerial) {
		bad("WECHAT_PAY_MCH_SERIAL", "must be the certificate's serial number in hex")
	}
	if c.MchKeyPEM == "" {
		bad("WECHAT_PAY_MCH_KEY", "missing: the merchant API private key (apiclient_key.pem)")
	} else if _, err := utils.LoadPrivateKey(c.MchKeyPEM); err != nil {
		bad("WECHAT_PAY_MCH_KEY", "not an RSA private key in PEM: %v", err)
	}
	if c.APIv3Key == "" {
		bad("WECHAT_PAY_API_V3_KEY", "missing: the API v3 key (APIv3密钥)")
	} else if len(c.APIv3Key) != 32 {
		bad("WECHAT_PAY_API_V3_KEY", "must be 32 bytes, it is %d", len(c.APIv3Key))
	}
	switch {
	case c.PublicKeyPEM != "" && c.PublicKeyID == "":
		bad("WECHAT_PAY_PUBLIC_KEY_ID", "missing: the WeChat Pay public key needs its id (PUB_KEY_ID_…)")
	case c.PublicKeyPEM == "" && c.PublicKeyID != "":
		bad("WECHAT_PAY_PUBLIC_KEY", "missing: WECHAT_PAY_PUBLIC_KEY_ID is set, so is the key it names")
	}
	if c.PublicKeyPEM != "" {
		if _, err := utils.LoadPublicKey(c.PublicKeyPEM); err != nil {
			bad("WECHAT_PAY_PUBLIC_KEY", "not an RSA public key in PEM: %v", err)
		}
	}
	if c.PublicKeyID != "" && !strings.HasPrefix(c.PublicKeyID, "PUB_KEY_ID_") {
		bad("WECHAT_PAY_PUBLIC_KEY_ID", "must start with PUB_KEY_ID_")
	}
	if err := checkNotifyURL(c.NotifyURL); err != nil {
		bad("BASE_URL", "the WeChat Pay notify URL %q %v", c.NotifyURL, err)
	}
	return errs
}

// checkNotifyURL: WeChat Pay calls back only an https URL reachable from the internet, without a query
// (notify_url in https://pay.weixin.qq.com/doc/v3/merchant/4012525095).
func checkNotifyURL(s string) error {
	u, err := url.Parse(s)
	switch {
	case s == "":
		return errors.New("is missing")
	case err != nil:
		return err
	case u.Scheme != "https" || u.Host == "":
		return errors.New("must be an https URL")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return errors.New("must have no query")
	case len(s) > 255:
		return errors.New("must be at most 255 bytes")
	}
	return nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		b := s[i]
		if !('0' <= b && b <= '9' || 'a' <= b && b <= 'f' || 'A' <= b && b <= 'F') {
			return false
		}
	}
	return s != ""
}
