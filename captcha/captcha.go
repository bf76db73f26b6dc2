// Package captcha draws the captchas in front of the purchase path and checks their answers. Answers live
// in Redis at captcha:{id}, single use, so that every instance can check them (and, as the contract
// allows, an operator's load tool can read them).
package captcha

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/mojocn/base64Captcha"
	"github.com/redis/go-redis/v9"

	"seckill/errs"
	"seckill/internal/gate"
	"seckill/internal/hexid"
)

// TTL is how long an answer waits to be used.
const TTL = 5 * time.Minute

// Key is where the answer of captcha id is kept.
func Key(id string) string { return "captcha:" + id }

// Captchas draws captchas and checks answers. It keeps a pool of captchas drawn ahead of need (Fill), so
// that the crowd at a sale's start is handed captchas at the cost of a channel read and one Redis write;
// it draws on demand only when the pool is empty.
type Captchas struct {
	rdb    redis.UniversalClient
	driver *base64Captcha.DriverDigit
	gate   *gate.Gate // drawing is costly: a few at once, so a crowd cannot starve buying
	wait   time.Duration

	pool chan drawn    // drawn and not handed out: an answer is kept in Redis only once its captcha is handed out
	kick chan struct{} // wakes the fillers after a hand-out
	keep int           // the pool is refilled to at least this many

	// Expected, when set, tells how many shoppers to expect soon (the sales about to start): the pool is
	// filled to that many, within its size.
	Expected func() int

	fromPool, onDemand atomic.Int64

	sounds *lru.Cache[soundKey, []byte] // captchas' digits spoken, made once per captcha and language
}

type soundKey struct{ id, lang string }

// soundCacheSize is how many spoken captchas an instance keeps: each is a WAV of about 93 KB, so at
// most about 12 MB. A person who plays a captcha again (the page's button) is answered from memory.
const soundCacheSize = 128

type drawn struct{ image, answer string }

// New returns a captcha maker that draws in the turns of costly; a draw on demand waits at most wait for
// a turn. The pool holds at most size captchas (0: no pool), about 2.5 kB each.
func New(rdb redis.UniversalClient, costly *gate.Gate, wait time.Duration, size int) *Captchas {
	sounds, _ := lru.New[soundKey, []byte](soundCacheSize)
	return &Captchas{
		sounds: sounds,
		rdb:    rdb,
		// Digits kept apart and upright enough to read (a 9 that looks like an 8, a 4 like an A, came from
		// a skew of 0.7), with a little noise: the captcha stops scripts by its cost, not by its obscurity.
		driver: base64Captcha.NewDriverDigit(80, 240, 5, 0.25, 24),
		gate:   costly,
		wait:   wait,
		pool:   make(chan drawn, max(size, 0)),
		kick:   make(chan struct{}, 1),
		keep:   min(size, 200),
	}
}

// Draw hands out a captcha, from the pool when it holds one, and keeps its answer. It answers the id and
// a data:image/png;base64 image.
func (c *Captchas) Draw(ctx context.Context) (id, image string, err error) {
	var d drawn
	select {
	case d = <-c.pool:
		c.fromPool.Add(1)
		select {
		case c.kick <- struct{}{}:
		default:
		}
	default:
		if d, err = c.drawNow(ctx); err != nil {
			return "", "", err
		}
		c.onDemand.Add(1)
	}
	raw := make([]byte, 16)
	if _, err := rand.Read(raw); err != nil {
		return "", "", err
	}
	id = hex.EncodeToString(raw)
	if err := c.rdb.Set(ctx, Key(id), d.answer, TTL).Err(); err != nil {
		return "", "", fmt.Errorf("keep captcha answer: %w", err)
	}
	return id, d.image, nil
}

// drawNow draws a captcha in a turn of the gate, waiting at most c.wait for one.
func (c *Captchas) drawNow(ctx context.Context) (drawn, error) {
	var d drawn
	var err error
	if gerr := c.gate.DoWithin(ctx, c.wait, func() { d, err = c.draw() }); gerr != nil {
		return drawn{}, gerr
	}
	return d, err
}

func (c *Captchas) draw() (drawn, error) {
	_, question, answer := c.driver.GenerateIdQuestionAnswer()
	item, err := c.driver.DrawCaptcha(question)
	if err != nil {
		return drawn{}, fmt.Errorf("draw captcha: %w", err)
	}
	return drawn{image: item.EncodeB64string(), answer: answer}, nil
}

// Fill keeps the pool filled until ctx ends: to Expected() captchas, at least a few hundred, at most its
// size. It draws in turns of the gate, as many at once as the gate allows and waiting for free turns, so
// it never takes more than the gate's share of the cores (draws on demand compete for the same turns).
func (c *Captchas) Fill(ctx context.Context) error {
	if cap(c.pool) == 0 {
		<-ctx.Done()
		return ctx.Err()
	}
	var wg sync.WaitGroup
	for range c.gate.Turns() {
		wg.Go(func() { c.fill(ctx) })
	}
	wg.Wait()
	return ctx.Err()
}

func (c *Captchas) fill(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		for target := c.target(); len(c.pool) < target; {
			var d drawn
			var err error
			if c.gate.DoInLine(ctx, func() { d, err = c.draw() }) != nil {
				return // ctx ended
			}
			if err != nil {
				break // try again at the next tick
			}
			select {
			case c.pool <- d:
			default: // full: another filler got there first
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-c.kick:
		case <-tick.C:
		}
	}
}

// target is how many captchas the pool should hold now.
func (c *Captchas) target() int {
	n := c.keep
	if c.Expected != nil {
		n = max(n, c.Expected())
	}
	return min(n, cap(c.pool))
}

// PoolStats tells how many captchas the pool holds, and how many were handed out from it and drawn on
// demand since the start.
func (c *Captchas) PoolStats() (held int, fromPool, onDemand int64) {
	return len(c.pool), c.fromPool.Load(), c.onDemand.Load()
}

// Check uses up the captcha and reports whether answer was right. A captcha is checked once, right or
// wrong.
func (c *Captchas) Check(ctx context.Context, id, answer string) (bool, error) {
	if id == "" || len(id) > 64 {
		return false, nil
	}
	want, err := c.rdb.GetDel(ctx, Key(id)).Result()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("check captcha: %w", err)
	}
	return want != "" && strings.EqualFold(strings.TrimSpace(answer), want), nil
}

// Judge reports whether answer is right, using the captcha up only when it is wrong: a form refused for
// another field keeps its rightly answered captcha for the person's next send, while guesses still get
// one try each.
func (c *Captchas) Judge(ctx context.Context, id, answer string) (bool, error) {
	if id == "" || len(id) > 64 {
		return false, nil
	}
	want, err := c.rdb.Get(ctx, Key(id)).Result()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("judge captcha: %w", err)
	}
	if want != "" && strings.EqualFold(strings.TrimSpace(answer), want) {
		return true, nil
	}
	if err := c.rdb.Del(ctx, Key(id)).Err(); err != nil {
		return false, fmt.Errorf("judge captcha: %w", err)
	}
	return false, nil
}

// Audio answers the captcha's digits spoken (a WAV), in lang ("en" or "zh"), for a person who cannot see
// the picture: drawn in a turn of the gate, from the answer kept for id, once (about 3 ms of a core and
// 93 KB): playing it again is answered from memory. An unknown or used captcha answers errs.NotFound,
// whatever is kept.
func (c *Captchas) Audio(ctx context.Context, id, lang string) ([]byte, error) {
	if !hexid.Valid(id) { // a captcha id is 32 hex digits
		return nil, errNoCaptcha
	}
	answer, err := c.rdb.Get(ctx, Key(id)).Result()
	if errors.Is(err, redis.Nil) {
		return nil, errNoCaptcha
	}
	if err != nil {
		return nil, fmt.Errorf("captcha answer: %w", err)
	}
	if lang != "zh" {
		lang = "en"
	} else {
		lang = "zh" // the constant's bytes, not the caller's
	}
	key := soundKey{id, lang}
	if wav, ok := c.sounds.Get(key); ok {
		return wav, nil
	}
	var buf bytes.Buffer
	var derr error
	if err := c.gate.DoWithin(ctx, c.wait*5, func() {
		var item base64Captcha.Item
		if item, derr = base64Captcha.NewDriverAudio(len(answer), lang).DrawCaptcha(answer); derr == nil {
			_, derr = item.WriteTo(&buf)
		}
	}); err != nil {
		return nil, err
	}
	if derr != nil {
		return nil, fmt.Errorf("draw audio captcha: %w", derr)
	}
	// The cache keeps the key: a copy of id, which may live in the request's buffer (Fiber's path
	// parameter) that the server reuses for the next request.
	c.sounds.Add(soundKey{strings.Clone(id), lang}, buf.Bytes())
	return buf.Bytes(), nil
}

var errNoCaptcha = errs.New(errs.NotFound, "no such captcha: get a new one")
