package loadtest_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"seckill/internal/connlimit"
	"seckill/loadtest"
)

// pagesServer serves on loopback through the server's own connection limiter (caps of opts), counting
// the connections it accepted and the POST bodies it read.
func pagesServer(t *testing.T, opts connlimit.Options) (base string, accepted, posts *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := connlimit.New(opts)
	accepted, posts = new(atomic.Int64), new(atomic.Int64)
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost {
				_, _ = io.Copy(io.Discard, r.Body)
				posts.Add(1)
			}
			time.Sleep(2 * time.Millisecond) // long enough for the pages to overlap
			_, _ = w.Write([]byte(`{}`))
		}),
		ConnState: func(c net.Conn, st http.ConnState) {
			switch st {
			case http.StateNew:
				accepted.Add(1)
			case http.StateIdle:
				l.Idle(c)
			case http.StateActive:
				l.Active(c)
			}
		},
	}
	go func() { _ = srv.Serve(l.Listen(ln)) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String(), accepted, posts
}

func TestOwnConnections(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tests := []struct {
		name  string
		total int // the server's cap (0: none)
		users int
		// with a cap below the pages, each page's connection is shed or turned away and tried again
		reloaded bool
	}{
		{"each page keeps its connection", 0, 8, false},
		{"pages beyond the cap reload until answered", 3, 12, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base, accepted, posts := pagesServer(t, connlimit.Options{Total: tt.total})
			c := loadtest.NewClient(base, 4)
			c.OwnConnections()
			defer c.Close()
			const each = 10
			var wg sync.WaitGroup
			var failed atomic.Int64
			for i := range tt.users {
				u := &loadtest.User{Name: "page" + string(rune('a'+i))}
				wg.Go(func() {
					for j := range each {
						method, body := http.MethodGet, any(nil)
						if j == each-1 { // a POST turned away at accept was never read: sent again, read once
							method, body = http.MethodPost, map[string]int{"n": j}
						}
						a, err := c.Do(ctx, method, "/x", body, u)
						if err != nil || a.Status != 200 {
							failed.Add(1)
							t.Errorf("%s request %d: %d %v", u.Name, j, a.Status, err)
						}
					}
				})
			}
			wg.Wait()
			rl := c.Reloads()
			if failed.Load() > 0 {
				return
			}
			if got := posts.Load(); got != int64(tt.users) {
				t.Errorf("the server read %d POSTs, want one a page (%d)", got, tt.users)
			}
			if !tt.reloaded {
				if got := accepted.Load(); got != int64(tt.users) || rl != (loadtest.Reloads{}) {
					t.Errorf("%d connections and %+v reloads for %d pages, want one connection each and none", got, rl, tt.users)
				}
				return
			}
			if rl.Refused+rl.Lost == 0 {
				t.Errorf("%d pages past a cap of %d: reloads %+v; want some turned away and tried again", tt.users, tt.total, rl)
			}
			t.Logf("%d connections admitted for %d pages, reloads %+v", accepted.Load(), tt.users, rl)
		})
	}
}

// A crowd spread over processes: each shops for its shard, shopper i in process i mod n, and sends back
// an outcome for every one of them, by their index in the plan.
func TestShopShards(t *testing.T) {
	plan := &loadtest.CrowdPlan{Mode: "queue", Until: time.Now().Add(-time.Second)} // over: nobody shops
	for i := range 10 {
		plan.Shoppers = append(plan.Shoppers, loadtest.PlannedShopper{ID: int64(100 + i), Name: "s", Arrive: time.Now()})
	}
	seen := map[int]int{}
	for shard := range 3 {
		c := loadtest.NewClient("http://127.0.0.1:1", 1)
		outs, _ := c.Shop(context.Background(), nil, plan, shard, 3)
		for _, o := range outs {
			if o.Who%3 != shard {
				t.Errorf("shard %d/3 shopped for shopper %d", shard, o.Who)
			}
			seen[o.Who]++
		}
	}
	for i := range plan.Shoppers {
		if seen[i] != 1 {
			t.Errorf("shopper %d has %d outcomes, want 1", i, seen[i])
		}
	}
}
