package wechatfake

import (
	"crypto"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"time"
)

// Keys are a merchant's and WeChat Pay's keys, made fresh for each fake (never committed).
type Keys struct {
	MchKey         *rsa.PrivateKey // the merchant API private key (apiclient_key.pem)
	MchSerial      string          // the merchant API certificate's serial number
	PlatformKey    *rsa.PrivateKey // WeChat Pay's signing key
	PlatformCert   *x509.Certificate
	PlatformSerial string // the platform certificate's serial (Wechatpay-Serial)
	PublicKeyID    string // the WeChat Pay public key's id, PUB_KEY_ID_ and 32 digits
	APIv3Key       string // 32 bytes
}

// NewKeys makes a merchant key and certificate serial, a platform key and self-signed certificate, a
// public key id and an API v3 key.
func NewKeys() (*Keys, error) {
	mch, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	plat, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	mchCert, err := selfSignedCert(mch, "merchant")
	if err != nil {
		return nil, err
	}
	cert, err := selfSignedCert(plat, "Tenpay.com Root CA (fake)")
	if err != nil {
		return nil, err
	}
	return &Keys{
		MchKey: mch, MchSerial: fmt.Sprintf("%X", mchCert.SerialNumber.Bytes()),
		PlatformKey: plat, PlatformCert: cert, PlatformSerial: fmt.Sprintf("%X", cert.SerialNumber.Bytes()),
		PublicKeyID: "PUB_KEY_ID_01" + digits(30), APIv3Key: randomString(32),
	}, nil
}

func selfSignedCert(k *rsa.PrivateKey, cn string) (*x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 159))
	if err != nil {
		return nil, err
	}
	tpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: cn, Organization: []string{"WeChat Pay fake"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(5 * 365 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &k.PublicKey, k)
	if err != nil {
		return nil, err
	}
	return x509.ParseCertificate(der)
}

// PrivateKeyPEM writes a key as apiclient_key.pem is written: PKCS #8 in PEM.
func PrivateKeyPEM(k *rsa.PrivateKey) string {
	der, _ := x509.MarshalPKCS8PrivateKey(k)
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

// PublicKeyPEM writes a public key as WeChat Pay's pub_key.pem is written: PKIX in PEM.
func PublicKeyPEM(k *rsa.PublicKey) string {
	der, _ := x509.MarshalPKIXPublicKey(k)
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

// CertPEM writes a certificate in PEM.
func CertPEM(c *x509.Certificate) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw}))
}

// signSHA256RSA is WeChat Pay's signature: SHA256 with RSA (PKCS #1 v1.5), base64.
func signSHA256RSA(k *rsa.PrivateKey, message string) string {
	h := sha256.Sum256([]byte(message))
	sig, err := rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, h[:])
	if err != nil {
		panic(err)
	}
	return base64.StdEncoding.EncodeToString(sig)
}

func verifySHA256RSA(k *rsa.PublicKey, message, sig string) bool {
	raw, err := base64.StdEncoding.DecodeString(sig)
	if err != nil {
		return false
	}
	h := sha256.Sum256([]byte(message))
	return rsa.VerifyPKCS1v15(k, crypto.SHA256, h[:], raw) == nil
}

// seal is AEAD_AES_256_GCM with the API v3 key, as certificates and callbacks are sealed
// (https://wechatpay-api.gitbook.io/wechatpay-api-v3/qian-ming-zhi-nan-1/zheng-shu-he-hui-tiao-bao-wen-jie-mi):
// a 12-character nonce, associated data, the ciphertext and tag in base64.
func seal(apiV3Key, associated string, plaintext []byte) (nonce, ciphertext string) {
	block, err := aes.NewCipher([]byte(apiV3Key))
	if err != nil {
		panic(err)
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		panic(err)
	}
	nonce = randomString(12)
	return nonce, base64.StdEncoding.EncodeToString(gcm.Seal(nil, []byte(nonce), plaintext, []byte(associated)))
}

const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

func randomString(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

func digits(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	for i := range b {
		b[i] = '0' + b[i]%10
	}
	return string(b)
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}
