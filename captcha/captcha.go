// Package captcha draws the captchas in front of the purchase path and checks their answers. Answers live
// in Redis at captcha:{id}, single use, so that every instance can check them (and, as the contract
// allows, an operator's load tool can read them).
package captcha

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mojocn/base64Captcha"
	"github.com/redis/go-redis/v9"

	"seckill/internal/gate"
)

// TTL is how long an answer waits to be used.
const TTL = 5 * time.Minute

// Key is where the answer of captcha id is kept.
func Key(id string) string { return "captcha:" + id }

// Captchas draws captchas and checks answers.
type Captchas struct {
	rdb    redis.UniversalClient
	driver *base64Captcha.DriverDigit
	gate   *gate.Gate // drawing is costly: a few at once, so a crowd cannot starve buying
	wait   time.Duration
}

// New returns a captcha maker that draws in the turns of costly; a draw waits at most wait for a turn.
func New(rdb redis.UniversalClient, costly *gate.Gate, wait time.Duration) *Captchas {
	return &Captchas{
		rdb:    rdb,
		driver: base64Captcha.NewDriverDigit(80, 240, 5, 0.7, 80),
		gate:   costly,
		wait:   wait,
	}
}

// Draw makes a captcha and keeps its answer. It answers the id and a data:image/png;base64 image.
func (c *Captchas) Draw(ctx context.Context) (id, image string, err error) {
	var item base64Captcha.Item
	var answer string
	if gerr := c.gate.DoWithin(ctx, c.wait, func() {
		var question string
		_, question, answer = c.driver.GenerateIdQuestionAnswer()
		item, err = c.driver.DrawCaptcha(question)
	}); gerr != nil {
		return "", "", gerr
	}
	if err != nil {
		return "", "", fmt.Errorf("draw captcha: %w", err)
	}
	raw := make([]byte, 16)
	if _, err := rand.Read(raw); err != nil {
		return "", "", err
	}
	id = hex.EncodeToString(raw)
	if err := c.rdb.Set(ctx, Key(id), answer, TTL).Err(); err != nil {
		return "", "", fmt.Errorf("keep captcha answer: %w", err)
	}
	return id, item.EncodeB64string(), nil
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
