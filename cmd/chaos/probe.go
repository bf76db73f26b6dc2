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
func (w *world) newProbe(ctx context.Context) (*buyProbe, error) {
	p := &buyProbe{client: loadtest.NewClient(w.frontURL, probeBuyers)}
	if err := p.client.Start(ctx); err != nil {
		return nil, err
	}
	admin := &loadtest.User{Name: adminName, Password: w.adminPass}
	merchant := &loadtest.User{Name: merchantName, Password: w.merchPass}
	for _, u := range []*loadtest.User{admin, merchant} {
		if err := p.client.Login(ctx, u); err != nil {
			return nil, fmt.Errorf("the probe's %s: %w", u.Name, err)
		}
	}
	var err error
	if p.users, err = w.seed(ctx, loadtest.Name("pr"), probeBuyers); err != nil {
		return nil, err
	}
	if err := p.client.LoginAll(ctx, p.users, nil); err != nil {
		return nil, err
	}
	if p.sale, err = p.client.SetUpSale(ctx, merchant, admin, loadtest.Name("buyProbe"), probeBuyers, 1, 2*time.Second); err != nil {
		return nil, err
	}
	if err := loadtest.WaitUntil(ctx, p.sale.StartsAt.Add(100*time.Millisecond)); err != nil {
		return nil, err
	}
	p.paths, err = p.client.GetPaths(ctx, w.rdb, p.users, p.sale.ItemID, nil)
	return p, err
}

// firstBuy sends a buyer every probeEvery from now until one is answered 202 queued, and answers when
// that was (zero if none was) and how many buyers were sent.
func (p *buyProbe) firstBuy(ctx context.Context) (time.Time, int) {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var mu sync.Mutex
	var first time.Time
	var wg sync.WaitGroup
	t := time.NewTicker(probeEvery)
	defer t.Stop()
	sent := 0
	for i := range p.users {
		wg.Add(1)
		sent++
		go func(i int) {
			defer wg.Done()
			a, err := p.client.Do(ctx, http.MethodPost, fmt.Sprintf("/api/items/%d/buy/%s", p.sale.ItemID, p.paths[i]), nil, p.users[i])
			if err != nil || a.Status != http.StatusAccepted || bytes.Contains(a.Body, []byte(`"unconfirmed"`)) {
				return
			}
			at := time.Now()
			mu.Lock()
			if first.IsZero() || at.Before(first) {
				first = at
			}
			mu.Unlock()
			stop() // (the buyers still on their way are let go: the probe's sale is not audited)
		}(i)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		if ctx.Err() != nil {
			break
		}
	}
	wg.Wait()
	return first, sent
}
