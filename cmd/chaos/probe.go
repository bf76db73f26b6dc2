package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"seckill/loadtest"
)

// buyProbe is a small sale of its own beside a round's, whose buyers buy one after another once a fault
// strikes, until one is queued: the time from the strike to the first buy the shop makes again, whatever
// the round's own buyers were doing then (all answered already, or sold out).
type buyProbe struct {
	client *loadtest.Client
	admin  *loadtest.User
	sale   *loadtest.Sale
	users  []*loadtest.User
	paths  []string
}

// A buyer every probeEvery, each on a connection of its own: probeBuyers of them last 30 s.
const (
	probeBuyers = 200
	probeEvery  = 150 * time.Millisecond
)

// newProbe sets the probe's sale up and gives each of its buyers a path, before the round's sale starts.
// Its client and the admin's and merchant's sessions are the world's, logged in once: an account that
// logs in every round is soon refused (429).
func (w *world) newProbe(ctx context.Context) (*buyProbe, error) {
	if w.probeClient == nil {
		client := loadtest.NewClient(w.frontURL, probeBuyers)
		if err := client.Start(ctx); err != nil {
			return nil, err
		}
		admin := &loadtest.User{Name: adminName, Password: w.adminPass}
		merchant := &loadtest.User{Name: merchantName, Password: w.merchPass}
		for _, u := range []*loadtest.User{admin, merchant} {
			if err := client.Login(ctx, u); err != nil {
				return nil, fmt.Errorf("the probe's %s: %w", u.Name, err)
			}
		}
		w.probeClient, w.probeAdmin, w.probeMerchant = client, admin, merchant
	}
	p := &buyProbe{client: w.probeClient, admin: w.probeAdmin}
	var err error
	if p.users, err = w.seed(ctx, loadtest.Name("pr"), probeBuyers); err != nil {
		return nil, err
	}
	if err := p.client.LoginAll(ctx, p.users, nil); err != nil {
		return nil, err
	}
	if p.sale, err = p.client.SetUpSale(ctx, w.probeMerchant, w.probeAdmin, loadtest.Name("probe"), probeBuyers, 1, 2*time.Second); err != nil {
		return nil, err
	}
	if err := loadtest.WaitUntil(ctx, p.sale.StartsAt.Add(100*time.Millisecond)); err != nil {
		return nil, err
	}
	p.paths, err = p.client.GetPaths(ctx, w.rdb, p.users, p.sale.ItemID, nil)
	return p, err
}

// buy sends a buyer every probeEvery from now until done is closed (the fault's strike is over) or the
// buyers run out, and answers when the first sent after struck() was answered 202 queued (zero if none
// was: a buyer sent before the fault struck may have been answered by the master before it), and what
// they were answered, for the probe's audit. A 202 unconfirmed is no promise (its buyer's result will say):
// the audit counts it with the lost answers, whose orders are found or not and either is right.
func (p *buyProbe) buy(ctx context.Context, done <-chan struct{}, struck func() time.Time) (time.Time, *loadtest.Result) {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	res := &loadtest.Result{Kinds: map[string]int{}, Queued: map[int]int{}, Lost: map[int]int{}}
	var mu sync.Mutex
	var first time.Time
	var wg sync.WaitGroup
	t := time.NewTicker(probeEvery)
	defer t.Stop()
send:
	for i := range p.users {
		wg.Add(1)
		res.Requests++
		go func(i int) {
			defer wg.Done()
			sent := time.Now()
			a, err := p.client.Do(ctx, http.MethodPost, fmt.Sprintf("/api/items/%d/buy/%s", p.sale.ItemID, p.paths[i]), nil, p.users[i])
			at := time.Now()
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				res.Errors++
				res.Lost[i]++
				return
			case a.Status == http.StatusAccepted && bytes.Contains(a.Body, []byte(`"unconfirmed"`)):
				res.Kinds["202 unconfirmed"]++
				res.Lost[i]++
				return
			case a.Status == http.StatusAccepted:
				res.Kinds["202 queued"]++
				res.Queued[i]++
				if s := struck(); !s.IsZero() && sent.After(s) && (first.IsZero() || at.Before(first)) {
					first = at
				}
			default:
				res.Kinds[a.Kind()]++
				if a.Status == http.StatusBadGateway || a.Status == http.StatusGatewayTimeout {
					res.Lost[i]++
				}
			}
		}(i)
		select {
		case <-ctx.Done():
			break send
		case <-done:
			break send
		case <-t.C:
		}
	}
	// The buyers on their way are let go: the ones answered meanwhile still count.
	stop()
	wg.Wait()
	return first, res
}

// audit waits until the probe's orders are written and audits its sale as the load tool audits a round's.
func (p *buyProbe) audit(ctx context.Context, res *loadtest.Result) (*loadtest.Audit, error) {
	st, _, err := p.client.WaitDrained(ctx, p.admin, p.sale, 5*time.Minute)
	if err != nil {
		return nil, err
	}
	return p.client.AuditSale(ctx, p.sale, st, p.users, res), nil
}
