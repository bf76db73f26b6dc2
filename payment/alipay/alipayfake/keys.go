package alipayfake

import (
	"crypto"
	"crypto/md5"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"math/big"
	"net/url"
	"sort"
	"strings"
	"time"
)

// NewKey makes an RSA2 key (2048 bits) as Alipay's key tool does, and answers its private key as PKCS#8
// PEM and its public key as PKIX PEM. Tests make every key they use: none is committed.
func NewKey() (privatePEM, publicPEM string, err error) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", "", err
	}
	return privatePEMOf(k), publicPEMOf(&k.PublicKey), nil
}

func privatePEMOf(k *rsa.PrivateKey) string {
	der, _ := x509.MarshalPKCS8PrivateKey(k)
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

func publicPEMOf(k *rsa.PublicKey) string {
	der, _ := x509.MarshalPKIXPublicKey(k)
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

// signingString is the string Alipay signs and checks (https://opendocs.alipay.com/common/02kf5q,
// https://opendocs.alipay.com/common/02mse7): every parameter with a value but those left out, as
// key=value (values not URL-encoded), sorted by key, joined by &.
func signingString(v url.Values, leaveOut ...string) string {
	skip := map[string]bool{}
	for _, k := range leaveOut {
		skip[k] = true
	}
	pairs := make([]string, 0, len(v))
	for k, vs := range v {
		if skip[k] {
			continue
		}
		for _, x := range vs {
			if x != "" {
				pairs = append(pairs, k+"="+x)
			}
		}
	}
	sort.Strings(pairs)
	return strings.Join(pairs, "&")
}

// rsa2Sign is RSA2: SHA256withRSA (PKCS#1 v1.5), in base64.
func rsa2Sign(k *rsa.PrivateKey, data []byte) string {
	h := sha256.Sum256(data)
	sig, err := rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, h[:])
	if err != nil {
		panic(err) // a key we made
	}
	return base64.StdEncoding.EncodeToString(sig)
}

func rsa2Verify(k *rsa.PublicKey, data []byte, sig string) bool {
	b, err := base64.StdEncoding.DecodeString(sig)
	if err != nil {
		return false
	}
	h := sha256.Sum256(data)
	return rsa.VerifyPKCS1v15(k, crypto.SHA256, h[:], b) == nil
}

// certs are certificate mode's (公钥证书, set up as https://opendocs.alipay.com/common/02kdnc says): a root, and the app's and
// Alipay's public-key certificates it issued.
type certs struct {
	rootPEM, appPEM, alipayPEM string
	rootSN, appSN, alipaySN    string
}

// certSN is a certificate's serial as Alipay computes it: md5 of the issuer's name (RFC 2253) followed by
// the serial number in decimal, in hex.
func certSN(c *x509.Certificate) string {
	s := md5.Sum([]byte(c.Issuer.String() + c.SerialNumber.String()))
	return hex.EncodeToString(s[:])
}

func makeCerts(app, alipay *rsa.PrivateKey) (*certs, error) {
	rootKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	rootTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1001), Subject: pkix.Name{Country: []string{"CN"}, Organization: []string{"Ant Financial (fake)"}, CommonName: "Ant Financial Certification Authority R1 (fake)"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign, SignatureAlgorithm: x509.SHA256WithRSA,
	}
	rootDER, err := x509.CreateCertificate(rand.Reader, rootTmpl, rootTmpl, &rootKey.PublicKey, rootKey)
	if err != nil {
		return nil, err
	}
	root, _ := x509.ParseCertificate(rootDER)
	leaf := func(serial int64, cn string, pub *rsa.PublicKey) (*x509.Certificate, []byte, error) {
		t := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{Country: []string{"CN"}, CommonName: cn},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
			SignatureAlgorithm: x509.SHA256WithRSA,
		}
		der, err := x509.CreateCertificate(rand.Reader, t, root, pub, rootKey)
		if err != nil {
			return nil, nil, err
		}
		c, err := x509.ParseCertificate(der)
		return c, der, err
	}
	appCert, appDER, err := leaf(2001, "app (fake)", &app.PublicKey)
	if err != nil {
		return nil, err
	}
	aliCert, aliDER, err := leaf(3001, "Alipay (fake)", &alipay.PublicKey)
	if err != nil {
		return nil, err
	}
	enc := func(der []byte) string {
		return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	}
	return &certs{
		rootPEM: enc(rootDER), appPEM: enc(appDER), alipayPEM: enc(aliDER),
		rootSN: certSN(root), appSN: certSN(appCert), alipaySN: certSN(aliCert),
	}, nil
}
