package models_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"gorm.io/gorm"

	"seckill/internal/testenv"
	"seckill/models"
)

// A draw seed is kept once: the first one written stays, and is what a second writer is answered (two
// instances opening one room publish one hash); on PostgreSQL and on SQLite (demo mode).
func TestDrawSeedIsKeptOnce(t *testing.T) {
	for _, d := range []struct {
		name string
		open func(testing.TB) *gorm.DB
	}{{"postgres", testenv.Postgres}, {"sqlite", testenv.SQLite}} {
		t.Run(d.name, func(t *testing.T) {
			ctx := context.Background()
			seeds := models.DrawSeeds{DB: d.open(t)}
			if _, found, err := seeds.SeedOf(ctx, 7); found || err != nil {
				t.Fatalf("an item without a seed: found %v, %v", found, err)
			}
			now := time.Now().UTC().Truncate(time.Second)
			first := models.DrawSeed{ItemID: 7, SeedHash: "aa", Sealed: []byte{1, 2, 3}, CreatedAt: now}
			second := models.DrawSeed{ItemID: 7, SeedHash: "bb", Sealed: []byte{4, 5, 6}, CreatedAt: now.Add(time.Second)}
			for _, s := range []models.DrawSeed{first, second} {
				kept, err := seeds.KeepSeed(ctx, s)
				if err != nil || kept.SeedHash != "aa" || !bytes.Equal(kept.Sealed, first.Sealed) || !kept.CreatedAt.Equal(now) {
					t.Fatalf("keeping %q: kept %+v, %v; want the first", s.SeedHash, kept, err)
				}
			}
			if other, err := seeds.KeepSeed(ctx, models.DrawSeed{ItemID: 8, SeedHash: "cc", Sealed: []byte{9}, CreatedAt: now}); err != nil || other.SeedHash != "cc" {
				t.Fatalf("another item's seed: %+v, %v", other, err)
			}
		})
	}
}
