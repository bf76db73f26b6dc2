package payment_test

import (
	"bytes"
	"encoding/json"
	"math/big"
	"strings"
	"testing"
	"time"

	"seckill/payment"
)

func fzIsLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if b := s[i]; !('0' <= b && b <= '9' || 'a' <= b && b <= 'f') {
			return false
		}
	}
	return true
}

// FuzzVerify: a callback's signature checks out for its own body and secret only, and a signature that
// was changed, cut or lengthened does not.
func FuzzVerify(f *testing.F) {
	good := `{"payment_id":"sbx_0123456789abcdef01234567","order_no":"SK1","amount_cents":990,"status":"paid","at":1790000000}`
	f.Add("0123456789abcdef0123456789abcdef", []byte(good), []byte(good+" "), "", uint8(0), uint8(1))
	f.Add("", []byte(""), []byte("x"), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", uint8(63), uint8(15))
	f.Add("s", []byte("{}"), []byte("{}\n"), "zz", uint8(200), uint8(0))
	f.Add("s\x00e", []byte("\xff\xfe"), []byte("\xff\xfe\x00"), " ", uint8(7), uint8(8))
	f.Add("secret", []byte(good), []byte(strings.Replace(good, "990", "99000", 1)), "00", uint8(1), uint8(255))
	f.Fuzz(func(t *testing.T, secret string, body, other []byte, sig string, pos, flip uint8) {
		want := payment.Sign(secret, body)
		if len(want) != 64 || !fzIsLowerHex(want) {
			t.Fatalf("Sign = %q: not 64 lowercase hex digits", want)
		}
		if payment.Sign(secret, body) != want {
			t.Fatal("Sign is not deterministic")
		}
		if !payment.Verify(secret, body, want) {
			t.Fatalf("Verify(%q, %q, Sign(...)) = false", secret, body)
		}
		if !bytes.Equal(body, other) && payment.Verify(secret, other, want) {
			t.Fatalf("the signature of %q verifies body %q too", body, other)
		}
		if payment.Verify(secret+"x", body, want) {
			t.Fatalf("the signature with secret %q verifies with secret %q", secret, secret+"x")
		}
		// Change one hex digit to another value: the signature names other bytes.
		i := int(pos) % len(want)
		nibble := strings.IndexByte("0123456789abcdef", want[i])
		changed := want[:i] + string("0123456789abcdef"[nibble^(int(flip)%15+1)]) + want[i+1:]
		if payment.Verify(secret, body, changed) {
			t.Fatalf("mutated signature %q (digit %d of %q) verifies", changed, i, want)
		}
		for _, bad := range []string{want[:len(want)-2], want + "00", want[:len(want)-1], " " + want, want + "\n", ""} {
			if payment.Verify(secret, body, bad) {
				t.Fatalf("signature %q (from %q) verifies", bad, want)
			}
		}
		// A fuzzed signature verifies only when it is the signature, in either case of hex digits.
		got := payment.Verify(secret, body, sig)
		if exp := len(sig) == 64 && fzIsLowerHex(strings.ToLower(sig)) && strings.ToLower(sig) == want; got != exp {
			t.Fatalf("Verify(%q, %q, %q) = %v, want %v (signature %s)", secret, body, sig, got, exp, want)
		}
	})
}

// FuzzNotification: any callback body either fails to decode or decodes to a notification that survives
// a round trip, and Fresh(now) holds exactly when the notification was made less than five minutes
// before now and less than a minute after it (computed without overflow), whatever "at" says.
func FuzzNotification(f *testing.F) {
	f.Add([]byte(`{"payment_id":"sbx_1","order_no":"SK1","amount_cents":990,"status":"paid","at":1790000000}`), int64(1790000000), int64(0))
	f.Add([]byte(`{"at":1790000299}`), int64(1790000000), int64(999999999))
	f.Add([]byte(`{"at":1790000060}`), int64(1790000000), int64(0))
	f.Add([]byte(`{"at":1789999700}`), int64(1790000000), int64(1))
	f.Add([]byte(`{"at":9223372036854775807}`), int64(-9223372036854775808), int64(0))
	f.Add([]byte(`{"at":-9223372036854775808}`), int64(9223372036854775807), int64(0))
	f.Add([]byte(`{"at":1e3}`), int64(1000), int64(0))
	f.Add([]byte(`{"at":"1790000000"}`), int64(1790000000), int64(0))
	f.Add([]byte(`{"amount_cents":-1,"status":"PAID","payment_id":"\u0000","At":5}`), int64(5), int64(0))
	f.Add([]byte(`[{"at":1}]`), int64(1), int64(0))
	f.Add([]byte(`{"at":1,"at":2}`), int64(2), int64(0))
	f.Add([]byte(`null`), int64(0), int64(0))
	f.Fuzz(func(t *testing.T, body []byte, nowSec, nowNsec int64) {
		var n payment.Notification
		if err := json.Unmarshal(body, &n); err != nil {
			return
		}
		again, err := json.Marshal(n)
		if err != nil {
			t.Fatalf("re-encode %+v: %v", n, err)
		}
		var m payment.Notification
		if err := json.Unmarshal(again, &m); err != nil || m != n {
			t.Fatalf("round trip of %+v gave %+v (%v)", n, m, err)
		}
		// The server's clock, not the caller, says what now is: any moment from 1970 to the 2240s.
		now := time.Unix(int64(uint64(nowSec)%(1<<33)), int64(uint64(nowNsec)%1e9))
		// The true distance now - at in nanoseconds, in big integers.
		nowNs := new(big.Int).Add(new(big.Int).Mul(big.NewInt(now.Unix()), big.NewInt(1e9)), big.NewInt(int64(now.Nanosecond())))
		atNs := new(big.Int).Mul(big.NewInt(n.At), big.NewInt(1e9))
		age := new(big.Int).Sub(nowNs, atNs)
		want := age.Cmp(big.NewInt(int64(5*time.Minute))) < 0 && age.Cmp(big.NewInt(-int64(time.Minute))) > 0
		if got := n.Fresh(now); got != want {
			t.Fatalf("notification at %d, now %v (%d.%09d): Fresh = %v, want %v", n.At, now.UTC(), now.Unix(), now.Nanosecond(), got, want)
		}
	})
}
