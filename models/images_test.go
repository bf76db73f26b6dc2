package models_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"seckill/internal/testenv"
	"seckill/models"
)

// Two merchants' items taking the same file at once: while one item lets the file go (removed, or
// replaced), the other's taking it must not lose its images to the cleanup of unused uploads.
func TestSharedUploadIsNotDeletedUnderAnotherItem(t *testing.T) {
	db := testenv.Postgres(t)
	ctx := context.Background()
	now := time.Now().UTC()
	var who [2]models.Actor
	var acts [2]int64
	var items [2]int64
	for i := range who {
		u, err := models.CreateUser(ctx, db, fmt.Sprintf("shop%d", i), "hash", models.RoleMerchant)
		if err != nil {
			t.Fatal(err)
		}
		who[i] = models.Actor{ID: u.ID, Username: u.Username}
		a, err := models.CreateActivity(ctx, db, who[i], models.ActivityInput{Name: "A", StartsAt: now.Add(time.Hour), EndsAt: now.Add(2 * time.Hour)}, now)
		if err != nil {
			t.Fatal(err)
		}
		it, err := models.AddItem(ctx, db, who[i], a.ID, models.ItemInput{Name: "I", OriginalPriceCents: 2, SeckillPriceCents: 1, Stock: 1}, now)
		if err != nil {
			t.Fatal(err)
		}
		acts[i], items[i] = a.ID, it.ID
	}
	sizes := map[string][]byte{"960": []byte("large"), "480": []byte("small")}
	for round := range 60 {
		sum := fmt.Sprintf("%032x", round)
		if _, err := models.SetItemImage(ctx, db, who[0], acts[0], items[0], sum, sizes, now); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { // the first lets it go
			defer wg.Done()
			if _, err := models.RemoveItemImage(ctx, db, who[0], acts[0], items[0], now); err != nil {
				t.Error(err)
			}
		}()
		go func() { // the second takes the same file
			defer wg.Done()
			if _, err := models.SetItemImage(ctx, db, who[1], acts[1], items[1], sum, sizes, now); err != nil {
				t.Error(err)
			}
		}()
		wg.Wait()
		if _, err := models.ImageData(ctx, db, models.ImageName(sum, "960")); err != nil {
			t.Fatalf("round %d: the second item shows an upload whose image is gone: %v", round, err)
		}
	}
}
