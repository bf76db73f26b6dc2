package stock

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/models"
)

// A waiting room's seed is the draw's proof: its hash is published when the room opens, and the seed at
// the draw. Redis alone would lose it with the room (a Redis lost, a failover to a replica that had not
// received the room), and a room reopened with a fresh seed publishes another hash: the draw could no
// longer be checked against the hash shoppers saw. So where the seeds are kept (Line.KeepSeeds):
//
//   - the seed is written to PostgreSQL before its hash is published, sealed (AES-256-GCM, under a key
//     only the app holds), and never changes: a room reopened after a loss takes it back, same hash;
//   - Redis holds only the hash until the draw is closed, and the seed from then on (the draw orders by
//     it, and publishes it): nobody who reads Redis or the database — the shop's own staff included —
//     learns the seed while it could still pick a ticket's place.

// SeedKeyLen is the length of the key that seals the seeds: AES-256's.
const SeedKeyLen = 32

// SeedStore is where the sealed seeds are kept: models.DrawSeeds on the shop's database.
type SeedStore interface {
	// KeepSeed writes the seed unless the item has one, and answers the one kept.
	KeepSeed(ctx context.Context, s models.DrawSeed) (models.DrawSeed, error)
	// SeedOf answers the item's kept seed (found false: none).
	SeedOf(ctx context.Context, itemID int64) (s models.DrawSeed, found bool, err error)
}

var _ SeedStore = models.DrawSeeds{}

// Seeds seals the waiting rooms' seeds and keeps them in a SeedStore.
type Seeds struct {
	store SeedStore
	aead  cipher.AEAD
	now   func() time.Time
	log   *slog.Logger
}

// NewSeeds returns the seeds kept in store, sealed under key (SeedKeyLen bytes: LINE_SEED_KEY), on the
// clock now, logging to log what Redis and PostgreSQL disagree on.
func NewSeeds(store SeedStore, key []byte, now func() time.Time, log *slog.Logger) (*Seeds, error) {
	if len(key) != SeedKeyLen {
		return nil, fmt.Errorf("the seeds' key has %d bytes, want %d", len(key), SeedKeyLen)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("the seeds' key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("the seeds' key: %w", err)
	}
	return &Seeds{store: store, aead: aead, now: now, log: log}, nil
}

// sealedFor is what a seal is bound to besides the key: the item, so that a sealed seed copied to
// another item's row does not open there.
func sealedFor(itemID int64) []byte {
	return []byte("seckill draw seed of item " + strconv.FormatInt(itemID, 10))
}

// seal encrypts the item's seed: a random nonce, then the ciphertext and its tag.
func (s *Seeds) seal(itemID int64, seed string) ([]byte, error) {
	nonce := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(seed)+s.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return s.aead.Seal(nonce, nonce, []byte(seed), sealedFor(itemID)), nil
}

// open decrypts what seal made for the item, and checks it against the hash kept beside it.
func (s *Seeds) open(k models.DrawSeed) (string, error) {
	n := s.aead.NonceSize()
	if len(k.Sealed) < n+s.aead.Overhead() {
		return "", fmt.Errorf("the kept seed of item %d is too short to be sealed", k.ItemID)
	}
	plain, err := s.aead.Open(nil, k.Sealed[:n], k.Sealed[n:], sealedFor(k.ItemID))
	if err != nil {
		return "", fmt.Errorf("the kept seed of item %d does not open: another key (LINE_SEED_KEY, or SESSION_SECRET it is derived from, changed?) or a changed row: %w", k.ItemID, err)
	}
	if seed := string(plain); SeedHash(seed) == k.SeedHash {
		return seed, nil
	}
	return "", fmt.Errorf("the kept seed of item %d does not match the hash kept beside it (the row was changed)", k.ItemID)
}

// kept answers the item's kept seed, opened; found is false when none is kept.
func (s *Seeds) kept(ctx context.Context, itemID int64) (seed string, found bool, err error) {
	k, found, err := s.store.SeedOf(ctx, itemID)
	if err != nil || !found {
		return "", found, err
	}
	seed, err = s.open(k)
	return seed, err == nil, err
}

// keep writes the seed for the item unless one is kept already, and answers the one kept (of two
// instances opening the room at once, the first one written).
func (s *Seeds) keep(ctx context.Context, itemID int64, seed string) (string, error) {
	sealed, err := s.seal(itemID, seed)
	if err != nil {
		return "", err
	}
	k, err := s.store.KeepSeed(ctx, models.DrawSeed{ItemID: itemID, SeedHash: SeedHash(seed), Sealed: sealed, CreatedAt: s.now().UTC()})
	if err != nil {
		return "", err
	}
	return s.open(k)
}

// KeepSeeds has the line keep its rooms' seeds in seeds (nil: in Redis only, which loses them with it).
func (l *Line) KeepSeeds(s *Seeds) { l.seeds = s }

// newSeed makes a draw's seed: 32 random bytes, as hex.
func newSeed() (string, error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	return hex.EncodeToString(raw), nil
}

// openKept is OpenRoom where the seeds are kept: the seed is kept first (or found kept), then the room
// opens with its hash, so that no hash is published whose seed PostgreSQL does not hold.
func (l *Line) openKept(ctx context.Context, itemID int64, w Window) error {
	k := roomKeysOf(itemID)
	cur, err := l.rdb.HMGet(ctx, k.Room, "state", "seed").Result()
	if err != nil {
		return fmt.Errorf("open the waiting room of item %d: %w", itemID, err)
	}
	state, _ := cur[0].(string)
	inRedis, _ := cur[1].(string)
	seed, found, err := l.seeds.kept(ctx, itemID)
	if err != nil {
		if state != "" {
			// The room is open in Redis and goes on: only its check against PostgreSQL waits (for the next
			// open, or the draw, which needs the kept seed).
			l.seeds.log.ErrorContext(ctx, "waiting room: the kept draw seed cannot be read; the room in Redis goes on unchecked", "item", itemID, "err", err)
			return nil
		}
		return fmt.Errorf("open the waiting room of item %d: %w", itemID, err)
	}
	if !found {
		// A room opened before the seeds were kept keeps its seed, and the hash it published.
		seed = inRedis
		if seed == "" {
			if seed, err = newSeed(); err != nil {
				return err
			}
		}
		if seed, err = l.seeds.keep(ctx, itemID, seed); err != nil {
			return fmt.Errorf("open the waiting room of item %d: %w", itemID, err)
		}
	}
	res, err := roomScript.Run(ctx, l.rdb, []string{k.Room}, "", SeedHash(seed), w.Opens.UnixMilli(), w.Starts.UnixMilli(),
		w.Ends.UnixMilli(), w.Ends.Add(roomKeep).UnixMilli(), "kept").StringSlice()
	if err != nil || len(res) < 2 {
		return fmt.Errorf("open the waiting room of item %d: %w %q", itemID, err, res)
	}
	// PostgreSQL's seed wins a disagreement: it was sealed under the app's key and written before any hash
	// of it was published, and it never changes; Redis's room can have been made anew (a loss, a failover,
	// a restore from a backup) or written by anyone who reaches Redis, who could so choose the seed, and
	// with it the places, of a draw still open.
	switch res[0] {
	case "replaced":
		l.seeds.log.ErrorContext(ctx, "waiting room: Redis published another seed's hash than the one kept in PostgreSQL; the room has the kept one now",
			"item", itemID, "redis_seed_hash", res[1], "kept_seed_hash", SeedHash(seed))
	case "differs":
		l.seeds.log.ErrorContext(ctx, "waiting room: Redis's seed hash is not the one kept in PostgreSQL, and its draw is closed: the kept seed is revealed at the draw",
			"item", itemID, "redis_seed_hash", res[1], "kept_seed_hash", SeedHash(seed))
	}
	return nil
}

// revealScript writes the draw's seed into the room once its draw is closed (not before: until then the
// seed could still choose places), and only into a room that is there.
var revealScript = redis.NewScript(`local s = redis.call('HGET', KEYS[1], 'state')
if s == 'drawing' or s == 'drawn' then redis.call('HSET', KEYS[1], 'seed', ARGV[1], 'seed_hash', ARGV[2]) return 1 end
return 0`)

// drawSeed answers the seed the item's draw orders by. Where the seeds are kept, a draw being written
// (drawing) orders by the kept one, which the room then holds for the draw's record: whatever seed Redis
// holds then was not sealed by the app (a seed written into Redis by hand would choose the places). A
// drawn room's seed is the one its places were written by; so is a room's where the seeds are not kept.
func (l *Line) drawSeed(ctx context.Context, itemID int64) (string, error) {
	k := roomKeysOf(itemID)
	v, err := l.rdb.HMGet(ctx, k.Room, "state", "seed", "seed_hash").Result()
	if err != nil {
		return "", fmt.Errorf("the seed of item %d: %w", itemID, err)
	}
	state, _ := v[0].(string)
	seed, _ := v[1].(string)
	hash, _ := v[2].(string)
	switch {
	case seed != "" && (l.seeds == nil || state == RoomDrawn):
		return seed, nil
	case l.seeds == nil:
		return "", fmt.Errorf("the seed of item %d: the room has none", itemID)
	case state != RoomDrawing && state != RoomDrawn:
		return "", fmt.Errorf("the seed of item %d: the draw is not closed (room %q)", itemID, state)
	}
	kept, found, err := l.seeds.kept(ctx, itemID)
	if err == nil && !found {
		err = errors.New("none is kept") // never a fresh one: the draw would match no published hash
	}
	if err != nil {
		return "", fmt.Errorf("the seed of item %d: %w", itemID, err)
	}
	if SeedHash(kept) != hash || seed != "" && seed != kept {
		// PostgreSQL's wins, as in openKept: the record published shows the kept seed and its hash.
		l.seeds.log.ErrorContext(ctx, "waiting room: the draw orders by the seed kept in PostgreSQL, not the one Redis holds",
			"item", itemID, "redis_seed_hash", hash, "kept_seed_hash", SeedHash(kept))
	}
	if err := revealScript.Run(ctx, l.rdb, []string{k.Room}, kept, SeedHash(kept)).Err(); err != nil {
		return "", fmt.Errorf("reveal the seed of item %d: %w", itemID, err)
	}
	return kept, nil
}
