package loadtest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
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

// A crowd shopper answered 202 unconfirmed follows their result as item.js does: a sold_out (or none)
// read before the result settles is not their final answer, for a failover may have lost their take
// and the result says so (failed, reason lost) only about 30 s later, or their order may still come.
// It becomes final when the follow-up's bound ends; after a 202 queued, sold_out is final at once.
func TestCrowdFollowUpWaitsForAnUnconfirmedBuyToSettle(t *testing.T) {
	answers := map[string][]string{ // each session's results, in turn; the last one repeats
		"kept":    {`{"status":"queued"}`, `{"status":"sold_out"}`, `{"status":"none"}`, `{"status":"success","order_no":"SK1"}`},
		"lost":    {`{"status":"sold_out"}`, `{"status":"none"}`, `{"status":"failed","reason":"lost"}`},
		"soldout": {`{"status":"sold_out"}`},
		"nothing": {`{"status":"none"}`},
	}
	asked := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ck, _ := r.Cookie("sk_session")
		if ck == nil || !strings.HasSuffix(r.URL.Path, "/result") || answers[ck.Value] == nil {
			http.NotFound(w, r)
			return
		}
		list := answers[ck.Value]
		n := min(asked[ck.Value], len(list)-1)
		asked[ck.Value]++
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(list[n]))
	}))
	defer srv.Close()
	c := NewClient(srv.URL, 1)
	bound := int(unconfirmedWithin / (2 * time.Second)) // the follow-up's polls of a result that never settles
	for _, tc := range []struct {
		session     string
		unconfirmed bool
		want        string
		polls       int // the result's polls; 0: not counted (at least the bound's)
	}{
		{"kept", true, "bought", 4},
		{"kept", false, "sold out", 2}, // after a 202 queued, sold_out is the answer
		{"lost", true, "sold out", 3},  // told it did not go through
		{"soldout", true, "sold out", 0},
		{"nothing", true, "", 0},
	} {
		t.Run(fmt.Sprintf("%s unconfirmed=%v", tc.session, tc.unconfirmed), func(t *testing.T) {
			asked[tc.session] = 0
			s := &crowdShopper{u: &User{session: tc.session}, Outcome: newOutcome(0)}
			got := c.followResult(context.Background(), &Sale{ItemID: 1}, s, func(time.Duration) bool { return true }, tc.unconfirmed)
			if got != tc.want {
				t.Errorf("final answer %q, want %q", got, tc.want)
			}
			switch {
			case tc.polls > 0 && asked[tc.session] != tc.polls:
				t.Errorf("the result was polled %d times, want %d", asked[tc.session], tc.polls)
			case tc.polls == 0 && asked[tc.session] <= bound:
				t.Errorf("the result was polled %d times, want more than %d: a result that never settles is followed to the bound", asked[tc.session], bound)
			}
		})
	}
}
