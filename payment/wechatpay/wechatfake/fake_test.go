package wechatfake

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A request without the merchant's signature is refused 401 SIGN_ERROR, and even that answer is signed
// with the platform key, as WeChat Pay signs its answers.
func TestUnsignedRequestRefused(t *testing.T) {
	f := Start(t, Options{})
	resp, err := f.Client().Post("https://api.mch.weixin.qq.com/v3/pay/transactions/native", "application/json",
		strings.NewReader(`{"mchid":"1900000109"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var e struct{ Code string }
	if resp.StatusCode != http.StatusUnauthorized || json.Unmarshal(body, &e) != nil || e.Code != "SIGN_ERROR" {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	h := resp.Header
	msg := h.Get("Wechatpay-Timestamp") + "\n" + h.Get("Wechatpay-Nonce") + "\n" + string(body) + "\n"
	if h.Get("Wechatpay-Serial") != f.Keys.PlatformSerial || !verifySHA256RSA(&f.Keys.PlatformKey.PublicKey, msg, h.Get("Wechatpay-Signature")) {
		t.Fatal("the answer is not signed with the platform key")
	}
	if f.Calls("POST /v3/pay/transactions/native") != 0 {
		t.Fatal("an unsigned request was served")
	}
}

// Only WeChat Pay's hosts reach the fake.
func TestClientRoutesOnlyWeChatPay(t *testing.T) {
	f := Start(t, Options{})
	c := f.Client()
	c.Timeout = time.Second
	if _, err := c.Get("https://example.com/"); err == nil {
		t.Fatal("another host was reached")
	}
	resp, err := c.Get("https://api2.mch.weixin.qq.com/v3/certificates")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("unsigned certificate download: %d", resp.StatusCode)
	}
}
