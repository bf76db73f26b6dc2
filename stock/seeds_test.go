package stock_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"seckill/internal/testenv"
	"seckill/jobs"
	"seckill/models"
	"seckill/stock"
)

// logBuffer is a log that tests read while the line writes to it.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}
func (b *logBuffer) String() string { b.mu.Lock(); defer b.mu.Unlock(); return b.buf.String() }

// seedRig is a queue sale whose waiting room keeps its seed in PostgreSQL, on a Redis server of the
// test's own (which the test may empty whole).
type seedRig struct {
	db     *gorm.DB
	rdb    *redis.Client
	clock  *clock
	ledger *stock.Ledger
	item   models.Item
	window stock.Window
	key    []byte
	log    *logBuffer
}

func newSeedRig(t *testing.T) *seedRig {
	t.Helper()
	now := time.Now()
	rdb, _ := testenv.RedisServer(t, "seeds")
	r := &seedRig{db: testenv.Postgres(t), rdb: rdb, clock: &clock{t: now}, key: bytes.Repeat([]byte{7}, stock.SeedKeyLen), log: &logBuffer{}}
	r.ledger = testenv.Ledger(r.rdb, r.clock.now)
	_, r.item = testenv.Sale(t, r.db, 10, now.Add(time.Minute), now.Add(time.Hour))
	r.preheat(t)
	r.window = stock.Window{Opens: now.Add(-time.Minute), Starts: now.Add(time.Minute), Ends: now.Add(time.Hour)}
	return r
}

func (r *seedRig) preheat(t *testing.T) {
	t.Helper()
	if _, err := r.ledger.Preheat(context.Background(), jobs.DBBooks{DB: r.db}, r.item.ID); err != nil {
		t.Fatal(err)
	}
}

// line is one instance's line, keeping its seeds under key.
func (r *seedRig) line(t *testing.T, key []byte) *stock.Line {
	t.Helper()
	seeds, err := stock.NewSeeds(models.DrawSeeds{DB: r.db}, key, r.clock.now, slog.New(slog.NewTextHandler(r.log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	l := stock.NewLine(r.ledger)
	l.KeepSeeds(seeds)
	return l
}

func (r *seedRig) room(t *testing.T, l *stock.Line) stock.Room {
	t.Helper()
	room, err := l.RoomOf(context.Background(), r.item.ID)
	if err != nil {
		t.Fatal(err)
	}
	return room
}

func (r *seedRig) kept(t *testing.T) models.DrawSeed {
	t.Helper()
	k, found, err := models.DrawSeeds{DB: r.db}.SeedOf(context.Background(), r.item.ID)
	if err != nil || !found {
		t.Fatalf("the kept seed: %v, found %v", err, found)
	}
	return k
}

// TestSeedSurvivesALostRedis: the room's seed is in PostgreSQL, sealed, before its hash is published;
// Redis emptied whole, the room reopens with the same hash (not with a wrong key: then it does not open
// at all), and the draw orders the tickets as the seed it publishes says.
func TestSeedSurvivesALostRedis(t *testing.T) {
	r := newSeedRig(t)
	ctx := context.Background()
	line := r.line(t, r.key)
	if err := line.OpenRoom(ctx, r.item.ID, r.window); err != nil {
		t.Fatal(err)
	}
	published := r.room(t, line).SeedHash
	kept := r.kept(t)
	if len(published) != 64 || kept.SeedHash != published {
		t.Fatalf("published hash %q, kept beside the sealed seed %q: want the same", published, kept.SeedHash)
	}
	// Before the draw Redis holds no seed either: whoever reads Redis cannot learn it.
	if s := r.rdb.HGet(ctx, stock.RoomKey(r.item.ID), "seed").Val(); s != "" {
		t.Fatalf("the room in Redis holds the seed %q before the draw", s)
	}

	r.rdb.FlushAll(ctx)
	wrong := r.line(t, bytes.Repeat([]byte{8}, stock.SeedKeyLen))
	if err := wrong.OpenRoom(ctx, r.item.ID, r.window); err == nil || !strings.Contains(err.Error(), "does not open") {
		t.Fatalf("reopening with another key: %v; want the kept seed not to open", err)
	}
	if room := r.room(t, wrong); room.State != "" {
		t.Fatalf("with another key a room opened anyway, hash %s: a fresh seed was published", room.SeedHash)
	}

	// The stock is loaded again (the preheat's work after a loss), the shoppers join again: Join reopens
	// the room, with the kept seed.
	r.preheat(t)
	users := []int64{101, 102, 103, 104, 105, 106, 107, 108}
	tickets := map[int64]string{}
	for _, u := range users {
		j, err := line.Join(ctx, r.item.ID, u, r.window)
		if err != nil {
			t.Fatalf("user %d joins: %v", u, err)
		}
		tickets[u] = j.Ticket
	}
	if got := r.room(t, line).SeedHash; got != published {
		t.Fatalf("the reopened room publishes %s, want %s as before the loss", got, published)
	}
	if k := r.kept(t); !bytes.Equal(k.Sealed, kept.Sealed) {
		t.Fatal("reopening the room wrote another seed to PostgreSQL")
	}

	r.clock.add(2 * time.Minute)
	if drawn, err := line.Draw(ctx, r.item.ID); !drawn || err != nil {
		t.Fatalf("draw: %v %v", drawn, err)
	}
	room := r.room(t, line)
	if stock.SeedHash(room.Seed) != published {
		t.Fatalf("the draw reveals a seed whose hash is %s, want the published %s", stock.SeedHash(room.Seed), published)
	}
	// The sealed value is not the seed, as text or as its bytes.
	raw, _ := hex.DecodeString(room.Seed)
	if bytes.Contains(kept.Sealed, []byte(room.Seed)) || bytes.Contains(kept.Sealed, raw) {
		t.Fatal("PostgreSQL keeps the seed in the clear")
	}
	// Anyone can check the order: the tickets sorted by SHA-256(seed ‖ ticket), and each shopper placed so.
	order := make([]int64, len(users))
	copy(order, users)
	slices.SortFunc(order, func(a, b int64) int {
		return strings.Compare(stock.DrawKey(room.Seed, tickets[a]), stock.DrawKey(room.Seed, tickets[b]))
	})
	drawn, err := line.DrawnTickets(ctx, r.item.ID)
	if err != nil {
		t.Fatal(err)
	}
	for i, u := range order {
		st, err := line.StandingOf(ctx, r.item.ID, u)
		if err != nil {
			t.Fatal(err)
		}
		if st.Place.Place != int64(i+1) || drawn[i] != tickets[u] {
			t.Errorf("user %d: place %d, drawn ticket %d is %s; the published seed places them %d with ticket %s",
				u, st.Place.Place, i+1, drawn[i], i+1, tickets[u])
		}
	}
}

// TestKeptSeedWinsOverRedis: a room in Redis whose hash is not the kept one's (written by hand, or by
// a Redis restored from elsewhere) takes the kept seed while its draw is open, and says so loudly.
func TestKeptSeedWinsOverRedis(t *testing.T) {
	r := newSeedRig(t)
	ctx := context.Background()
	line := r.line(t, r.key)
	if err := line.OpenRoom(ctx, r.item.ID, r.window); err != nil {
		t.Fatal(err)
	}
	kept := r.kept(t).SeedHash
	chosen := strings.Repeat("ab", 32)
	r.rdb.HSet(ctx, stock.RoomKey(r.item.ID), "seed", chosen, "seed_hash", stock.SeedHash(chosen))

	other := r.line(t, r.key) // another instance, opening the room as it starts
	if err := other.OpenRoom(ctx, r.item.ID, r.window); err != nil {
		t.Fatal(err)
	}
	if got := r.room(t, other).SeedHash; got != kept {
		t.Fatalf("the room publishes %s, want the kept %s", got, kept)
	}
	if !strings.Contains(r.log.String(), "level=ERROR") || !strings.Contains(r.log.String(), stock.SeedHash(chosen)) {
		t.Fatalf("the disagreement was not logged as an error naming Redis's hash; the log:\n%s", r.log.String())
	}
	// Written again after every instance opened the room: the draw itself orders by the kept seed.
	r.rdb.HSet(ctx, stock.RoomKey(r.item.ID), "seed", chosen, "seed_hash", stock.SeedHash(chosen))
	for _, u := range []int64{1, 2, 3} {
		if _, err := other.Join(ctx, r.item.ID, u, r.window); err != nil {
			t.Fatal(err)
		}
	}
	r.clock.add(2 * time.Minute)
	if drawn, err := other.Draw(ctx, r.item.ID); !drawn || err != nil {
		t.Fatalf("draw: %v %v", drawn, err)
	}
	room := r.room(t, other)
	if room.Seed == chosen || stock.SeedHash(room.Seed) != kept || room.SeedHash != kept {
		t.Fatalf("the draw revealed %q (hash %s): want the kept seed, not the one written into Redis", room.Seed, room.SeedHash)
	}
	tickets, err := other.DrawnTickets(ctx, r.item.ID)
	if err != nil || len(tickets) != 3 {
		t.Fatalf("drawn tickets %v, %v", tickets, err)
	}
	for i := 1; i < len(tickets); i++ {
		if stock.DrawKey(room.Seed, tickets[i-1]) > stock.DrawKey(room.Seed, tickets[i]) {
			t.Fatalf("the drawn tickets %v are not in the revealed seed's order", tickets)
		}
	}
}

// TestRoomOpenedBeforeSeedsWereKeptKeepsItsHash: a room that an instance without kept seeds opened (a
// build of before, still running in a rolling deploy) keeps its published hash, and PostgreSQL keeps its
// seed from then on.
func TestRoomOpenedBeforeSeedsWereKeptKeepsItsHash(t *testing.T) {
	r := newSeedRig(t)
	ctx := context.Background()
	old := stock.NewLine(r.ledger)
	if err := old.OpenRoom(ctx, r.item.ID, r.window); err != nil {
		t.Fatal(err)
	}
	published := r.room(t, old).SeedHash
	if err := r.line(t, r.key).OpenRoom(ctx, r.item.ID, r.window); err != nil {
		t.Fatal(err)
	}
	if k := r.kept(t); k.SeedHash != published || r.room(t, old).SeedHash != published {
		t.Fatalf("kept %s, room %s; want both the published %s", k.SeedHash, r.room(t, old).SeedHash, published)
	}
	r.rdb.FlushAll(ctx)
	if err := r.line(t, r.key).OpenRoom(ctx, r.item.ID, r.window); err != nil {
		t.Fatal(err)
	}
	if got := r.room(t, old).SeedHash; got != published {
		t.Fatalf("after the loss the room publishes %s, want %s", got, published)
	}
}

// TestInstancesOpeningAtOncePublishOneHash: instances opening the same room at once all publish the
// first seed PostgreSQL kept.
func TestInstancesOpeningAtOncePublishOneHash(t *testing.T) {
	r := newSeedRig(t)
	ctx := context.Background()
	lines := make([]*stock.Line, 6)
	for i := range lines {
		lines[i] = r.line(t, r.key)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(lines))
	for i, l := range lines {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = l.OpenRoom(ctx, r.item.ID, r.window) }()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if kept, got := r.kept(t).SeedHash, r.room(t, lines[0]).SeedHash; kept != got {
		t.Fatalf("the room publishes %s, PostgreSQL keeps %s", got, kept)
	}
	if strings.Contains(r.log.String(), "level=ERROR") {
		t.Fatalf("opening at once logged a disagreement:\n%s", r.log.String())
	}
}
