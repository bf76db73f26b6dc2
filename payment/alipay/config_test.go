package alipay_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"strings"
	"testing"

	"seckill/payment"
	"seckill/payment/alipay"
	"seckill/payment/alipay/alipayfake"
)

func envsOf(errs []error) string {
	var s []string
	for _, e := range errs {
		env, _, _ := strings.Cut(e.Error(), ":")
		s = append(s, env)
	}
	return strings.Join(s, " ")
}

func TestConfigCheck(t *testing.T) {
	f := alipayfake.Start(t, alipayfake.Options{})
	good := f.Config(notifyURL)
	if errs := good.Check(); len(errs) != 0 {
		t.Fatalf("the fake's config: %v", errs)
	}
	cf := alipayfake.Start(t, alipayfake.Options{CertMode: true})
	if errs := cf.Config(notifyURL).Check(); len(errs) != 0 {
		t.Fatalf("the fake's certificate config: %v", errs)
	}

	if got := envsOf(alipay.Config{}.Check()); got != "ALIPAY_APP_ID ALIPAY_PRIVATE_KEY ALIPAY_PUBLIC_KEY BASE_URL" {
		t.Fatalf("empty config: %s", got)
	}
	bad := good
	bad.AppID = "app 1"
	bad.PrivateKeyPEM = "-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----"
	bad.AlipayPublicKey = "bm90IGEga2V5"
	bad.NotifyURL = "http://shop.example/api/payments/notify/alipay"
	if got := envsOf(bad.Check()); got != "ALIPAY_APP_ID ALIPAY_PRIVATE_KEY ALIPAY_PUBLIC_KEY BASE_URL" {
		t.Fatalf("bad config: %s (%v)", got, bad.Check())
	}
	if _, err := alipay.New(bad, nil); err == nil {
		t.Fatal("New took a bad config")
	}

	both := cf.Config(notifyURL)
	both.AlipayPublicKey = good.AlipayPublicKey
	if got := envsOf(both.Check()); got != "ALIPAY_PUBLIC_KEY" {
		t.Fatalf("both modes: %s", got)
	}
	partial := cf.Config(notifyURL)
	partial.RootCertPEM, partial.AlipayCertPEM = "", ""
	if got := envsOf(partial.Check()); got != "ALIPAY_ROOT_CERT ALIPAY_PUBLIC_CERT" {
		t.Fatalf("certificate mode without two certificates: %s", got)
	}
	otherApp := cf.Config(notifyURL)
	otherApp.PrivateKeyPEM = cf.OtherKeyPEM()
	if got := envsOf(otherApp.Check()); got != "ALIPAY_APP_CERT" {
		t.Fatalf("an app certificate of another key: %s", got)
	}

	// The key tool's bare base64 (with its line breaks), and PKCS#1 PEM, are taken.
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	p8, _ := x509.MarshalPKCS8PrivateKey(k)
	b64 := base64.StdEncoding.EncodeToString(p8)
	pkix, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
	for name, key := range map[string]string{
		"PKCS#8 base64": "\n" + b64[:64] + "\n" + b64[64:] + "\n",
		"PKCS#1 PEM":    string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})),
		"PKCS#1 base64": base64.StdEncoding.EncodeToString(x509.MarshalPKCS1PrivateKey(k)),
	} {
		c := good
		c.PrivateKeyPEM = key
		c.AlipayPublicKey = base64.StdEncoding.EncodeToString(pkix)
		if errs := c.Check(); len(errs) != 0 {
			t.Fatalf("%s: %v", name, errs)
		}
		if _, err := alipay.New(c, nil); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	small, _ := rsa.GenerateKey(rand.Reader, 1024)
	c := good
	c.PrivateKeyPEM = string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(small)}))
	if got := envsOf(c.Check()); got != "ALIPAY_PRIVATE_KEY" {
		t.Fatalf("a 1024-bit key: %s", got)
	}

	for s, want := range map[string]bool{"on": true, "ON": true, "true": true, "1": true, "": false, "off": false, "0": false} {
		if got, err := alipay.ParseSandbox(s); err != nil || got != want {
			t.Fatalf("ParseSandbox(%q) = %v %v", s, got, err)
		}
	}
	if _, err := alipay.ParseSandbox("maybe"); err == nil || !strings.HasPrefix(err.Error(), "ALIPAY_SANDBOX") {
		t.Fatalf("ParseSandbox(maybe): %v", err)
	}
}

// TestKeyToolKeyTalks checks that a key in the key tool's format signs requests the gateway takes.
func TestKeyToolKeyTalks(t *testing.T) {
	f := alipayfake.Start(t, alipayfake.Options{})
	cfg := f.Config(notifyURL)
	b, _ := pem.Decode([]byte(cfg.PrivateKeyPEM))
	cfg.PrivateKeyPEM = base64.StdEncoding.EncodeToString(b.Bytes)
	p, err := alipay.New(cfg, f.HTTPClient())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Query(context.Background(), "P_keytool_1"); !errors.Is(err, payment.ErrNotFound) {
		t.Fatalf("query: %v", err)
	}
}
