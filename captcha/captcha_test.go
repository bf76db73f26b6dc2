package captcha

import (
	"context"
	"strings"
	"testing"
	"time"

	"seckill/errs"
	"seckill/internal/gate"
	"seckill/internal/testenv"
)

func TestCaptchaIsSingleUseRightOrWrong(t *testing.T) {
	rdb := testenv.Redis(t)
	c := New(rdb, gate.New(1, time.Second), time.Second)
	ctx := context.Background()

	id, img, err := c.Draw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(img, "data:image/png;base64,") || len(id) != 32 {
		t.Fatalf("captcha %q with image %.30q", id, img)
	}
	answer, err := rdb.Get(ctx, Key(id)).Result()
	if err != nil || len(answer) != 5 {
		t.Fatalf("the answer is not kept at %s: %q, %v", Key(id), answer, err)
	}
	if ttl := rdb.TTL(ctx, Key(id)).Val(); ttl <= 4*time.Minute || ttl > TTL {
		t.Errorf("answer expires in %v, want about %v", ttl, TTL)
	}
	if ok, _ := c.Check(ctx, id, answer); !ok {
		t.Fatal("the right answer was refused")
	}
	if ok, _ := c.Check(ctx, id, answer); ok {
		t.Error("a used captcha passed again")
	}

	id2, _, _ := c.Draw(ctx)
	answer2 := rdb.Get(ctx, Key(id2)).Val()
	if ok, _ := c.Check(ctx, id2, "00000x"); ok {
		t.Fatal("a wrong answer passed")
	}
	if ok, _ := c.Check(ctx, id2, answer2); ok {
		t.Error("after a wrong answer the captcha still passed: it must be single use")
	}
	if ok, _ := c.Check(ctx, "unknown", "12345"); ok {
		t.Error("an unknown captcha passed")
	}
}

func TestDrawingIsBoundedUnderACrowd(t *testing.T) {
	rdb := testenv.Redis(t)
	c := New(rdb, gate.New(1, time.Nanosecond), time.Nanosecond)
	held, release, released := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() { // one draw in progress takes the only turn
		c.gate.Do(context.Background(), func() { close(held); <-release })
		close(released)
	}()
	<-held
	_, _, err := c.Draw(context.Background())
	if !errs.Is(err, errs.RateLimited) {
		t.Fatalf("a draw with no free slot: %v, want rate_limited", err)
	}
	close(release)
	<-released
	if _, _, err := c.Draw(context.Background()); err != nil {
		t.Fatalf("a draw with a free slot: %v", err)
	}
}

// BenchmarkDraw measures how many captchas one core draws per second (run with -cpu 1).
func BenchmarkDraw(b *testing.B) {
	c := New(nil, gate.New(1, time.Second), time.Second)
	for b.Loop() {
		_, q, _ := c.driver.GenerateIdQuestionAnswer()
		item, err := c.driver.DrawCaptcha(q)
		if err != nil {
			b.Fatal(err)
		}
		_ = item.EncodeB64string()
	}
}
