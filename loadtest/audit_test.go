package loadtest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A 202 unconfirmed is not a promise: the audit follows its buyer's result, and counts an order and a
// "did not go through" (failed, reason lost) apart; a 202 queued is not followed there.
func TestAuditFollowsUnconfirmedBuyers(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ck, _ := r.Cookie("sk_session")
		w.Header().Set("Content-Type", "application/json")
		switch {
		case ck == nil || !strings.HasSuffix(r.URL.Path, "/result"):
			http.NotFound(w, r)
		case ck.Value == "made":
			_, _ = w.Write([]byte(`{"status":"success","order_no":"SK1"}`))
		case ck.Value == "lost":
			_, _ = w.Write([]byte(`{"status":"failed","reason":"lost"}`))
		default:
			t.Errorf("the audit followed %q, a queued buyer", ck.Value)
			_, _ = w.Write([]byte(`{"status":"queued"}`))
		}
	}))
	defer srv.Close()
	c := NewClient(srv.URL, 2)
	users := []*User{{session: "made"}, {session: "lost"}, {session: "queued"}}
	res := &Result{Queued: map[int]int{2: 1}, Unconfirmed: map[int]int{0: 1, 1: 1, 2: 1}}
	made, lost, neither := c.followUnconfirmed(context.Background(), &Sale{ItemID: 1}, users, res)
	if made != 1 || lost != 1 || neither != 0 {
		t.Errorf("%d made, %d lost, %d neither; want 1, 1, 0", made, lost, neither)
	}
}
