package alipayfake

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	sdk "github.com/smartwalle/alipay/v3"
)

// post sends a request the SDK encoded (signed with key) to the fake, and answers the raw body.
func post(t *testing.T, f *Fake, key string, p sdk.Param) []byte {
	t.Helper()
	c, err := sdk.New(AppID, key, true, sdk.WithTimeLocation(beijing))
	if err != nil {
		t.Fatal(err)
	}
	form, err := c.EncodeParam(p)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := f.HTTPClient().Post("https://openapi.alipay.com/gateway.do", "application/x-www-form-urlencoded;charset=utf-8", strings.NewReader(form))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return b
}

// TestAnswersAsDocumented checks the answers' shape (https://opendocs.alipay.com/common/02mse7): the
// method's response object, and a sign over its bytes exactly as written; the gateway's refusal of a
// request signed with another key is isv.invalid-signature, unsigned.
func TestAnswersAsDocumented(t *testing.T) {
	f := Start(t, Options{})
	b := post(t, f, privatePEMOf(f.appKey), sdk.TradeQuery{OutTradeNo: "P_doc_0001"})
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	inner := raw["alipay_trade_query_response"]
	var sign string
	_ = json.Unmarshal(raw["sign"], &sign)
	if !rsa2Verify(&f.alipayKey.PublicKey, inner, sign) {
		t.Fatalf("the answer's sign does not verify: %s", b)
	}
	var a map[string]string
	_ = json.Unmarshal(inner, &a)
	if a["code"] != "40004" || a["sub_code"] != "ACQ.TRADE_NOT_EXIST" {
		t.Fatalf("query of an unknown trade: %s", inner)
	}

	b = post(t, f, privatePEMOf(f.otherKey), sdk.TradeQuery{OutTradeNo: "P_doc_0001"})
	raw = nil
	_ = json.Unmarshal(b, &raw)
	a = nil
	_ = json.Unmarshal(raw["alipay_trade_query_response"], &a)
	if a["code"] != "40002" || a["sub_code"] != "isv.invalid-signature" || raw["sign"] != nil {
		t.Fatalf("a request signed with another key: %s", b)
	}
}

// TestNotificationSigned checks a notification's signature as documented: over every field but sign and
// sign_type, sorted.
func TestNotificationSigned(t *testing.T) {
	f := Start(t, Options{})
	var got url.Values
	f.Deliver = DeliverTo(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Content-Type") != "application/x-www-form-urlencoded; charset=utf-8" {
			t.Errorf("content type %q", r.Header.Get("Content-Type"))
		}
		_ = r.ParseForm()
		got = r.PostForm
		_, _ = w.Write([]byte("success"))
	}))
	b := post(t, f, privatePEMOf(f.appKey), sdk.TradePreCreate{Trade: sdk.Trade{NotifyURL: "https://shop.example/n", OutTradeNo: "P_doc_0002", Subject: "x", TotalAmount: "1.00"}})
	if !bytes.Contains(b, []byte(`"qr_code"`)) {
		t.Fatalf("precreate: %s", b)
	}
	if err := f.Pay("P_doc_0002"); err != nil {
		t.Fatal(err)
	}
	if got.Get("trade_status") != TradeSuccess || got.Get("total_amount") != "1.00" || got.Get("sign_type") != "RSA2" {
		t.Fatalf("notification %v", got)
	}
	if !rsa2Verify(&f.alipayKey.PublicKey, []byte(signingString(got, "sign", "sign_type")), got.Get("sign")) {
		t.Fatal("the notification's sign does not verify")
	}
	if s := f.Sent(); len(s) != 1 || !s[0].Acked() {
		t.Fatalf("sent %+v", s)
	}
}

// TestResend checks that a notification the shop did not take is sent again, signed anew.
func TestResend(t *testing.T) {
	f := Start(t, Options{})
	answers := []string{"fail", "success"}
	var forms []url.Values
	f.Deliver = DeliverTo(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		forms = append(forms, r.PostForm)
		_, _ = w.Write([]byte(answers[len(forms)-1]))
	}))
	_ = post(t, f, privatePEMOf(f.appKey), sdk.TradePreCreate{Trade: sdk.Trade{NotifyURL: "https://shop.example/n", OutTradeNo: "P_doc_0003", Subject: "x", TotalAmount: "2.00"}})
	if err := f.Pay("P_doc_0003"); err != nil {
		t.Fatal(err)
	}
	f.Advance(4 * time.Minute)
	if n := f.Resend(context.Background(), "P_doc_0003"); n != 1 {
		t.Fatalf("resent %d", n)
	}
	if n := f.Resend(context.Background(), "P_doc_0003"); n != 0 {
		t.Fatalf("resent %d after it was taken", n)
	}
	s := f.Sent()
	if len(s) != 2 || s[0].Acked() || !s[1].Acked() || len(forms) != 2 {
		t.Fatalf("sent %+v", s)
	}
	if forms[0].Get("notify_time") == forms[1].Get("notify_time") || forms[0].Get("notify_id") != forms[1].Get("notify_id") {
		t.Fatalf("the retry's notify_time %q, notify_id %q; the first's %q, %q", forms[1].Get("notify_time"), forms[1].Get("notify_id"), forms[0].Get("notify_time"), forms[0].Get("notify_id"))
	}
	if !rsa2Verify(&f.alipayKey.PublicKey, []byte(signingString(forms[1], "sign", "sign_type")), forms[1].Get("sign")) {
		t.Fatal("the retry's sign does not verify")
	}
}
