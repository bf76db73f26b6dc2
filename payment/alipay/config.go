package alipay

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"net/url"
	"strings"

	sdk "github.com/smartwalle/alipay/v3"
)

// Config is what the shop needs of its Alipay app (开放平台 → 我的应用). docs/payments-alipay.md says
// where each value is found in Alipay's console.
//
// Signing keys (https://opendocs.alipay.com/common/02kipk, 密钥工具): the app signs its requests with
// its own RSA2 private key; Alipay's answers and notifications are checked either with Alipay's public
// key (公钥模式) or with Alipay's public-key certificate (证书模式, which also sends the app's and the root
// certificate's serial numbers with every request). Exactly one of the two modes is configured.
type Config struct {
	AppID string // ALIPAY_APP_ID: the app's APPID (digits)
	// PrivateKeyPEM is the app's RSA2 private key (应用私钥, ALIPAY_PRIVATE_KEY): PKCS#1 or PKCS#8 PEM, or
	// the bare base64 that Alipay's key tool writes.
	PrivateKeyPEM string
	// AlipayPublicKey is Alipay's public key (支付宝公钥, ALIPAY_PUBLIC_KEY), PEM or bare base64: public-key
	// mode.
	AlipayPublicKey string
	// Certificate mode: the app's public-key certificate (appCertPublicKey_<APPID>.crt, ALIPAY_APP_CERT),
	// Alipay's root certificate (alipayRootCert.crt, ALIPAY_ROOT_CERT) and Alipay's public-key certificate
	// (alipayCertPublicKey_RSA2.crt, ALIPAY_PUBLIC_CERT), all PEM.
	AppCertPEM    string
	RootCertPEM   string
	AlipayCertPEM string
	// Sandbox talks to Alipay's sandbox (沙箱环境, openapi-sandbox.dl.alipaydev.com) instead of
	// openapi.alipay.com (ALIPAY_SANDBOX).
	Sandbox bool
	// NotifyURL is where Alipay posts its asynchronous notifications: BASE_URL +
	// "/api/payments/notify/alipay", https and reachable from the internet.
	NotifyURL string
}

// CertMode reports whether the config is in certificate mode.
func (c Config) CertMode() bool {
	return c.AppCertPEM != "" || c.RootCertPEM != "" || c.AlipayCertPEM != ""
}

// Check returns every problem of the config, each naming the environment variable to fix; none for a
// config New takes.
func (c Config) Check() []error {
	var errs []error
	bad := func(env, format string, a ...any) {
		errs = append(errs, fmt.Errorf("%s: "+format, append([]any{env}, a...)...))
	}

	switch {
	case c.AppID == "":
		bad("ALIPAY_APP_ID", "missing: the APPID of the app in Alipay's open platform (开放平台)")
	case len(c.AppID) > 32 || strings.Trim(c.AppID, "0123456789") != "":
		bad("ALIPAY_APP_ID", "%q is not an APPID (digits, as the open platform shows it)", c.AppID)
	}

	var priv *rsa.PrivateKey
	if c.PrivateKeyPEM == "" {
		bad("ALIPAY_PRIVATE_KEY", "missing: the app's RSA2 private key (应用私钥)")
	} else if k, err := parsePrivateKey(c.PrivateKeyPEM); err != nil {
		bad("ALIPAY_PRIVATE_KEY", "%v", err)
	} else {
		priv = k
	}

	switch {
	case c.AlipayPublicKey != "" && c.CertMode():
		bad("ALIPAY_PUBLIC_KEY", "set together with ALIPAY_APP_CERT/ALIPAY_ROOT_CERT/ALIPAY_PUBLIC_CERT: choose public-key mode (ALIPAY_PUBLIC_KEY) or certificate mode (the three certificates), not both")
	case c.AlipayPublicKey == "" && !c.CertMode():
		bad("ALIPAY_PUBLIC_KEY", "missing: Alipay's public key (支付宝公钥), or in certificate mode ALIPAY_APP_CERT, ALIPAY_ROOT_CERT and ALIPAY_PUBLIC_CERT")
	case c.AlipayPublicKey != "":
		if _, err := parsePublicKey(c.AlipayPublicKey); err != nil {
			bad("ALIPAY_PUBLIC_KEY", "%v", err)
		}
	default:
		if c.AppCertPEM == "" {
			bad("ALIPAY_APP_CERT", "missing: the app's public-key certificate (appCertPublicKey_<APPID>.crt)")
		} else if cert, err := parseCert(c.AppCertPEM); err != nil {
			bad("ALIPAY_APP_CERT", "%v", err)
		} else if pub, ok := cert.PublicKey.(*rsa.PublicKey); !ok || priv != nil && !pub.Equal(priv.Public()) {
			bad("ALIPAY_APP_CERT", "is not the certificate of ALIPAY_PRIVATE_KEY's key")
		}
		if c.RootCertPEM == "" {
			bad("ALIPAY_ROOT_CERT", "missing: Alipay's root certificate (alipayRootCert.crt)")
		} else if n := rootCertCount(c.RootCertPEM); n == 0 {
			bad("ALIPAY_ROOT_CERT", "holds no RSA-signed certificate (it must be alipayRootCert.crt as downloaded)")
		}
		if c.AlipayCertPEM == "" {
			bad("ALIPAY_PUBLIC_CERT", "missing: Alipay's public-key certificate (alipayCertPublicKey_RSA2.crt)")
		} else if cert, err := parseCert(c.AlipayCertPEM); err != nil {
			bad("ALIPAY_PUBLIC_CERT", "%v", err)
		} else if _, ok := cert.PublicKey.(*rsa.PublicKey); !ok {
			bad("ALIPAY_PUBLIC_CERT", "does not hold an RSA key")
		}
	}

	if c.NotifyURL == "" {
		bad("BASE_URL", "missing: Alipay's notify URL is BASE_URL + %q", NotifyPath)
	} else if u, err := url.Parse(c.NotifyURL); err != nil || u.Scheme != "https" || u.Host == "" {
		bad("BASE_URL", "Alipay's notify URL %q must be an https URL reachable from the internet", c.NotifyURL)
	}
	return errs
}

// NotifyPath is where the shop takes Alipay's notifications, under BASE_URL.
const NotifyPath = "/api/payments/notify/alipay"

// ParseSandbox reads ALIPAY_SANDBOX: on/off, true/false, yes/no, 1/0 ("" is off).
func ParseSandbox(s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "off", "false", "no", "0":
		return false, nil
	case "on", "true", "yes", "1":
		return true, nil
	}
	return false, fmt.Errorf("ALIPAY_SANDBOX: %q is not on or off", s)
}

// normalizeKey gives the SDK a key it reads: PEM without the blanks around it, or the key tool's bare
// base64 without its line breaks and spaces.
func normalizeKey(s string) string {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "-----") {
		return s
	}
	return strings.Join(strings.Fields(s), "")
}

func decodeKey(s string) ([]byte, error) {
	s = normalizeKey(s)
	if strings.HasPrefix(s, "-----") {
		b, _ := pem.Decode([]byte(s))
		if b == nil {
			return nil, errors.New("is not PEM")
		}
		return b.Bytes, nil
	}
	der, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, errors.New("is neither PEM nor base64")
	}
	return der, nil
}

// parsePrivateKey reads the app's key as the SDK will (PKCS#1, else PKCS#8), and checks that it is an
// RSA key of 2048 bits at least (RSA2).
func parsePrivateKey(s string) (*rsa.PrivateKey, error) {
	der, err := decodeKey(s)
	if err != nil {
		return nil, err
	}
	k, err := x509.ParsePKCS1PrivateKey(der)
	if err != nil {
		any, err8 := x509.ParsePKCS8PrivateKey(der)
		if err8 != nil {
			return nil, errors.New("is not an RSA private key (PKCS#1 or PKCS#8)")
		}
		var ok bool
		if k, ok = any.(*rsa.PrivateKey); !ok {
			return nil, errors.New("is not an RSA key (RSA2 signs with RSA)")
		}
	}
	if k.N.BitLen() < 2048 {
		return nil, fmt.Errorf("is an RSA key of %d bits: RSA2 needs 2048", k.N.BitLen())
	}
	// The SDK must read it too.
	if _, err := sdk.New("0", normalizeKey(s), false); err != nil {
		return nil, fmt.Errorf("is not read by the Alipay SDK: %v", err)
	}
	return k, nil
}

func parsePublicKey(s string) (*rsa.PublicKey, error) {
	der, err := decodeKey(s)
	if err != nil {
		return nil, err
	}
	k, err := x509.ParsePKIXPublicKey(der)
	if err != nil {
		return nil, errors.New("is not a public key (the 支付宝公钥 as the console shows it)")
	}
	pub, ok := k.(*rsa.PublicKey)
	if !ok {
		return nil, errors.New("is not an RSA public key")
	}
	return pub, nil
}

func parseCert(s string) (*x509.Certificate, error) {
	der, err := decodeKey(s)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, errors.New("is not a certificate")
	}
	return cert, nil
}

// rootCertCount counts the root bundle's RSA-signed certificates, those the SDK takes into
// alipay_root_cert_sn.
func rootCertCount(s string) int {
	n := 0
	rest := []byte(strings.TrimSpace(s))
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return n
		}
		cert, err := x509.ParseCertificate(b.Bytes)
		if err == nil && (cert.SignatureAlgorithm == x509.SHA256WithRSA || cert.SignatureAlgorithm == x509.SHA1WithRSA) {
			n++
		}
	}
}
