package stock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"seckill/internal/testenv"
	"seckill/models"
	"seckill/stock"
)

func TestOneEntrantPerAddressAndPhone(t *testing.T) {
	ctx := context.Background()
	claims := stock.NewClaims(testenv.Redis(t), "CN")
	a := &models.Activity{ID: 7001, EndsAt: time.Now().Add(time.Hour)}
	home := models.Delivery{Recipient: "Li Lei", Phone: "+86 138 0013 8000", Region: "Zhejiang", City: "Hangzhou", Street: "No. 18, Wensan Road, Flat 3-201", Postcode: "310012"}
	if err := claims.Claim(ctx, a, 1, claims.KeysOf(home)); err != nil {
		t.Fatalf("the first entrant: %v", err)
	}
	if err := claims.Claim(ctx, a, 1, claims.KeysOf(home)); err != nil {
		t.Fatalf("the same entrant again: %v", err)
	}
	sameSpelledOtherwise := models.Delivery{Recipient: "Han Meimei", Phone: "13900139000", Region: "ZHEJIANG", City: "hangzhou", Street: "no 18 wensan road flat 3 201", Postcode: "310012"}
	samePhone := models.Delivery{Recipient: "Han Meimei", Phone: "138-0013-8000", Region: "Jiangsu", City: "Nanjing", Street: "1 Zhongshan Road", Postcode: "210000"}
	for name, d := range map[string]models.Delivery{"the same place": sameSpelledOtherwise, "the same phone": samePhone} {
		if err := claims.Check(ctx, a, 2, claims.KeysOf(d)); !errors.Is(err, stock.ErrAddressTaken) {
			t.Errorf("%s, checked by another entrant: %v; want address_limit", name, err)
		}
		if err := claims.Claim(ctx, a, 2, claims.KeysOf(d)); !errors.Is(err, stock.ErrAddressTaken) {
			t.Errorf("%s, claimed by another entrant: %v; want address_limit", name, err)
		}
	}
	elsewhere := models.Delivery{Recipient: "Han Meimei", Phone: "13900139000", Region: "Jiangsu", City: "Nanjing", Street: "1 Zhongshan Road", Postcode: "210000"}
	if err := claims.Check(ctx, a, 2, claims.KeysOf(elsewhere)); err != nil {
		t.Fatalf("a free place and phone, checked: %v", err)
	}
	if err := claims.Claim(ctx, a, 3, claims.KeysOf(elsewhere)); err != nil {
		t.Fatalf("a check claims nothing: another entrant may claim it: %v", err)
	}
	// A refused claim claims nothing: user 2's refused place and phone stay free of user 2.
	other := &models.Activity{ID: 7002, EndsAt: time.Now().Add(time.Hour)}
	if err := claims.Claim(ctx, other, 2, claims.KeysOf(home)); err != nil {
		t.Fatalf("another activity's claims are its own: %v", err)
	}
}

// One entrant gives a sale at most two places and phones; an order of a queue sale goes only to what its
// buyer gave when joining.
func TestAnEntrantsShareOfAddresses(t *testing.T) {
	ctx := context.Background()
	claims := stock.NewClaims(testenv.Redis(t), "CN")
	a := &models.Activity{ID: 7004, EndsAt: time.Now().Add(time.Hour)}
	place := func(i int) models.Delivery {
		return models.Delivery{Phone: "1380013800" + string(rune('0'+i)), Region: "Zhejiang", City: "Hangzhou", Street: "Wensan Road " + string(rune('0'+i))}
	}
	for i := range 2 {
		if err := claims.Claim(ctx, a, 1, claims.KeysOf(place(i))); err != nil {
			t.Fatalf("address %d: %v", i, err)
		}
	}
	if err := claims.Claim(ctx, a, 1, claims.KeysOf(place(2))); !errors.Is(err, stock.ErrTooManyAddresses) {
		t.Fatalf("a third address: %v; want ErrTooManyAddresses", err)
	}
	if err := claims.Claim(ctx, a, 1, claims.KeysOf(place(1))); err != nil {
		t.Fatalf("an address given before, again: %v", err)
	}
	if err := claims.Claim(ctx, a, 2, claims.KeysOf(place(2))); err != nil {
		t.Fatalf("the refused third address stays free for others: %v", err)
	}
	if err := claims.Owned(ctx, a, 1, place(0)); err != nil {
		t.Errorf("the entrant's own address: %v", err)
	}
	if err := claims.Owned(ctx, a, 1, place(3)); !errors.Is(err, stock.ErrNotYourEntry) {
		t.Errorf("an address never given: %v; want ErrNotYourEntry", err)
	}
	if err := claims.Owned(ctx, a, 1, place(2)); !errors.Is(err, stock.ErrAddressTaken) {
		t.Errorf("another's address: %v; want ErrAddressTaken", err)
	}
}

// Entrants claiming one place at once: one of them has it.
func TestOneClaimWinsUnderConcurrency(t *testing.T) {
	ctx := context.Background()
	claims := stock.NewClaims(testenv.Redis(t), "CN")
	a := &models.Activity{ID: 7003, EndsAt: time.Now().Add(time.Hour)}
	d := models.Delivery{Phone: "13800138000", Region: "Zhejiang", City: "Hangzhou", Street: "Wensan Road 18", Postcode: "310012"}
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := 0
	for u := range 40 {
		wg.Go(func() {
			err := claims.Claim(ctx, a, int64(100+u), claims.KeysOf(d))
			if err != nil && !errors.Is(err, stock.ErrAddressTaken) {
				t.Error(err)
			}
			if err == nil {
				mu.Lock()
				won++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if won != 1 {
		t.Fatalf("%d of 40 entrants claimed one place; want 1", won)
	}
}
