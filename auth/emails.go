package auth

import (
	"context"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"seckill/internal/follow"
	"seckill/internal/memo"
	"seckill/models"
)

// emailChannel carries the ids of the users whose e-mail changed, to every instance.
const emailChannel = "sk:emails"

// EmailState is an account's address and whether it is verified, as GET /api/me shows them.
type EmailState struct {
	Email    string
	Verified bool
}

// Emails keeps the accounts' addresses in memory, so that GET /api/me (a hot answer) makes no query:
// a user's first /api/me on an instance reads it (one statement), and later ones are answered from
// here until it changes. A change is published on a Redis channel the instances follow (Run), each
// forgetting the user; the whole map is also forgotten every refresh, for a message lost while Redis
// was away. Bounded: a map read under a read lock (internal/memo), all forgotten when it is full.
type Emails struct {
	db      *gorm.DB
	rdb     redis.UniversalClient
	log     *slog.Logger
	cache   *memo.Map[int64, EmailState]
	gen     atomic.Uint64 // bumped by every forgetting: a read that began before one is not kept
	refresh time.Duration
}

// NewEmails keeps up to size accounts' addresses.
func NewEmails(db *gorm.DB, rdb redis.UniversalClient, size int, log *slog.Logger) *Emails {
	return &Emails{db: db, rdb: rdb, log: log, cache: &memo.Map[int64, EmailState]{Max: max(size, 1)}, refresh: 10 * time.Minute}
}

// Of answers user id's address, from memory when this instance has it.
func (e *Emails) Of(ctx context.Context, id int64) (EmailState, error) {
	if st, ok := e.cache.Get(id); ok {
		return st, nil
	}
	gen := e.gen.Load()
	addr, verified, err := models.EmailOf(ctx, e.db, id)
	if err != nil {
		return EmailState{}, err
	}
	st := EmailState{Email: addr, Verified: verified}
	if e.gen.Load() == gen {
		e.cache.Add(id, st)
	}
	return st, nil
}

// Remember keeps u's address, read by the caller a moment ago (at login).
func (e *Emails) Remember(u *models.User) {
	st := EmailState{Verified: u.EmailVerifiedAt != nil}
	if u.Email != nil {
		st.Email = *u.Email
	}
	e.cache.Add(u.ID, st)
}

// Changed forgets user id's address here at once and on every instance through Redis.
func (e *Emails) Changed(ctx context.Context, id int64) {
	e.forget(id)
	if err := follow.Publish(ctx, e.rdb, emailChannel, strconv.FormatInt(id, 10)); err != nil {
		e.log.WarnContext(ctx, "e-mail change not published: other instances show the old address until their refresh", "user_id", id, "err", err)
	}
}

func (e *Emails) forget(id int64) {
	e.gen.Add(1)
	e.cache.Remove(id)
}

// Run follows the other instances' changes until ctx ends.
func (e *Emails) Run(ctx context.Context) error {
	return follow.Channel(ctx, e.rdb, emailChannel, e.refresh, func(payload string) {
		if id, err := strconv.ParseInt(payload, 10, 64); err == nil {
			e.forget(id)
		}
	}, func(context.Context) {
		e.gen.Add(1)
		e.cache.Clear()
	})
}
