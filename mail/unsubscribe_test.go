package mail

import (
	"strings"
	"testing"
)

// An unsubscribe token is accepted only as Token wrote it: the same ids and mac spelled another way
// (leading zeros, a sign, spaces, upper-case hex) are refused, as are another reminder's and another
// key's tokens.
func TestUnsubscribeTokenIsCanonical(t *testing.T) {
	u := NewUnsubscribes("a secret of the tests, long enough")
	good := u.Token(3, 1)
	if uid, aid, ok := u.Check(good); !ok || uid != 3 || aid != 1 {
		t.Fatalf("Check(%q) = %d, %d, %v; want 3, 1, true", good, uid, aid, ok)
	}
	mac := good[strings.LastIndex(good, ".")+1:]
	for _, bad := range []string{
		"03.1." + mac, "3.01." + mac, "003.001." + mac, "+3.1." + mac, "3.+1." + mac, "-0.1." + mac,
		" 3.1." + mac, "3 .1." + mac, "3.1 ." + mac, "3.1. " + mac, "3.1." + mac + " ", "3.1." + mac + "\n",
		"3.1." + strings.ToUpper(mac), "3.1." + strings.ToUpper(mac[:1]) + mac[1:], "3.1." + mac[:len(mac)-1],
		"3.1." + mac + "0", "3.1.." + mac, "3.1", "", "3.1." + mac + ".", "0x3.1." + mac, "3_0.1." + mac,
		"3.2." + mac, NewUnsubscribes("another secret, long enough too").Token(3, 1),
	} {
		if bad == good {
			continue
		}
		if uid, aid, ok := u.Check(bad); ok {
			t.Errorf("Check(%q) = %d, %d, true; want it refused", bad, uid, aid)
		}
	}
}

// Whatever a token says, Check accepts it only when it is, byte for byte, the token of what it names.
func FuzzUnsubscribeCheck(f *testing.F) {
	u := NewUnsubscribes("a secret of the tests, long enough")
	for _, seed := range []string{u.Token(3, 1), "03.1." + u.mac(3, 1), "3.1." + strings.ToUpper(u.mac(3, 1)), "1.2.ab", ""} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, token string) {
		if uid, aid, ok := u.Check(token); ok && token != u.Token(uid, aid) {
			t.Errorf("Check(%q) accepted %d, %d, whose token is %q", token, uid, aid, u.Token(uid, aid))
		}
	})
}
