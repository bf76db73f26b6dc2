package app

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"seckill/internal/testenv"
	"seckill/jobs"
	"seckill/models"
)

// TestNoAnswerTellsTheSeedBeforeTheDraw: before the draw, no GET route of the app — asked by a shopper in
// the line, by the sale's own merchant and by an admin, on the sale's and its item's ids — answers
// anything that holds the seed the draw then reveals (as text, or its bytes in base64); the database
// keeps it sealed. After the draw the public record shows it.
func TestNoAnswerTellsTheSeedBeforeTheDraw(t *testing.T) {
	db := testenv.Postgres(t)
	act, item := queueSale(t, db, nil, 2)
	s := startLive(t, liveOpts{db: db, only: []string{"queue", "preheat"}})
	if _, err := s.Srv.Ledger.Preheat(context.Background(), jobs.DBBooks{DB: db}, item.ID); err != nil {
		t.Fatal(err)
	}
	merchant := withRole(t, s, "seed_merchant", models.RoleMerchant)
	var me struct{ ID int64 }
	if err := db.Raw("SELECT id FROM users WHERE username = ?", "seed_merchant").Scan(&me).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Model(&act).Update("merchant_id", me.ID).Error; err != nil {
		t.Fatal(err)
	}
	admin := withRole(t, s, "seed_admin", models.RoleAdmin)
	shopper := newBrowser(t, s.URL)
	shopper.register("seed_shopper", passwordOf("seed_shopper"))
	if r := shopper.join(item.ID); r.Status != 200 {
		t.Fatalf("joining: %d %s", r.Status, r.Body)
	}

	param := regexp.MustCompile(`:[a-z_]+`)
	var answers [][]byte
	asked := 0
	for _, rt := range s.Srv.Fiber.GetRoutes(true) {
		if rt.Method != http.MethodGet || strings.Contains(rt.Path, "*") {
			continue
		}
		paths := []string{rt.Path}
		if param.MatchString(rt.Path) {
			paths = []string{param.ReplaceAllString(rt.Path, itoa(item.ID)), param.ReplaceAllString(rt.Path, itoa(act.ID))}
		}
		for _, p := range paths {
			for _, b := range []*browser{shopper, merchant, admin} {
				r := b.call("GET", p, nil)
				answers = append(answers, append([]byte(p+" "), r.Body...))
				if r.Status == 200 {
					asked++
				}
			}
		}
	}
	if asked < 50 {
		t.Fatalf("only %d routes answered 200: the test looked at too little", asked)
	}
	kept, found, err := models.DrawSeeds{DB: db}.SeedOf(context.Background(), item.ID)
	if err != nil || !found {
		t.Fatalf("the seed kept in the database: %v, found %v", err, found)
	}

	s.Clock.Set(time.Now().Add(time.Minute + time.Second)) // the sale starts: the draw is written
	var seed string
	testenv.Eventually(t, 10*time.Second, "the draw to be published", func() bool {
		seed, _ = newBrowser(t, s.URL).call("GET", "/api/items/"+itoa(item.ID)+"/draw", nil).json(t)["seed"].(string)
		return seed != ""
	})
	raw, err := hex.DecodeString(seed)
	if err != nil || len(raw) != 32 {
		t.Fatalf("the revealed seed %q is not 32 bytes as hex", seed)
	}
	tells := [][]byte{[]byte(seed), []byte(strings.ToUpper(seed)), []byte(base64.StdEncoding.EncodeToString(raw)),
		[]byte(base64.RawURLEncoding.EncodeToString(raw))}
	for _, a := range answers {
		for _, tell := range tells {
			if bytes.Contains(a, tell) {
				path, _, _ := bytes.Cut(a, []byte(" "))
				t.Errorf("GET %s answered the seed before the draw", path)
			}
		}
	}
	for _, tell := range append(tells, raw) {
		if bytes.Contains(kept.Sealed, tell) {
			t.Error("the database keeps the seed in the clear")
		}
	}
	t.Logf("%d answers (%d of them 200) looked at before the draw", len(answers), asked)
}

// TestLostRoomComesBackWithItsSeed: the shop's Redis loses everything while a queue sale's room is open
// (no shopper joins or looks at the draw after); at the start the queue job opens the room again, with
// the hash published before the loss, and draws it.
func TestLostRoomComesBackWithItsSeed(t *testing.T) {
	db := testenv.Postgres(t)
	_, item := queueSale(t, db, nil, 2)
	s := startLive(t, liveOpts{db: db, only: []string{"queue", "preheat"}})
	ctx := context.Background()
	var published string
	testenv.Eventually(t, 10*time.Second, "the queue job to open the room", func() bool {
		room, err := s.Srv.Line.RoomOf(ctx, item.ID)
		published = room.SeedHash
		return err == nil && published != ""
	})
	if err := s.Redis.FlushDB(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Srv.Ledger.Preheat(ctx, jobs.DBBooks{DB: db}, item.ID); err != nil {
		t.Fatal(err)
	}
	s.Clock.Set(time.Now().Add(time.Minute + time.Second)) // the sale starts
	var got string
	testenv.EventuallySaw(t, 10*time.Second, "the room back and drawn", func() (bool, string) {
		room, err := s.Srv.Line.RoomOf(ctx, item.ID)
		got = room.SeedHash
		return err == nil && room.State == "drawn", room.State
	})
	if got != published {
		t.Fatalf("the room came back with the hash %s, want %s as published before the loss", got, published)
	}
}
