package captcha

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"seckill/errs"
	"seckill/internal/gate"
	"seckill/internal/testenv"
)

func TestCaptchaIsSingleUseRightOrWrong(t *testing.T) {
	rdb := testenv.Redis(t)
	c := New(rdb, gate.New(1, time.Second), time.Second, 0)
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
	c := New(rdb, gate.New(1, time.Nanosecond), time.Nanosecond, 0)
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
	c := New(nil, gate.New(1, time.Second), time.Second, 0)
	for b.Loop() {
		if _, err := c.draw(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestPoolHandsOutCaptchasDrawnAhead: the pool fills in the background to what is expected, hands its
// captchas out (each kept single use in Redis, as one drawn on demand), and fills again.
func TestPoolHandsOutCaptchasDrawnAhead(t *testing.T) {
	rdb := testenv.Redis(t)
	c := New(rdb, gate.New(1, time.Second), time.Second, 300) // keeps at least 200
	var expected atomic.Int64
	expected.Store(250)
	c.Expected = func() int { return int(expected.Load()) }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Fill(ctx) }()
	defer func() { cancel(); <-done }()

	waitHeld := func(want int) {
		t.Helper()
		testenv.EventuallySaw(t, 30*time.Second, fmt.Sprintf("the pool to hold %d", want), func() (bool, string) {
			held, _, _ := c.PoolStats()
			return held >= want, fmt.Sprintf("it holds %d", held)
		})
	}
	waitHeld(250)
	time.Sleep(1100 * time.Millisecond) // a tick of the fillers: they stop at what is expected
	if held, _, _ := c.PoolStats(); held != 250 {
		t.Errorf("the pool holds %d, want the 250 expected", held)
	}
	ids := map[string]bool{}
	images := map[string]bool{}
	for range 40 {
		id, img, err := c.Draw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ids[id], images[img] = true, true
		answer, err := rdb.Get(ctx, Key(id)).Result()
		if err != nil || len(answer) != 5 {
			t.Fatalf("the answer of a pooled captcha is not kept: %q, %v", answer, err)
		}
		if ok, _ := c.Check(ctx, id, answer); !ok {
			t.Fatal("the right answer to a pooled captcha was refused")
		}
		if ok, _ := c.Check(ctx, id, answer); ok {
			t.Fatal("a pooled captcha passed twice")
		}
	}
	if _, fromPool, onDemand := c.PoolStats(); fromPool < 30 || fromPool+onDemand != 40 {
		t.Errorf("40 captchas handed out: %d from the pool and %d drawn on demand, want most from the pool", fromPool, onDemand)
	}
	if len(ids) != 40 || len(images) != 40 {
		t.Errorf("40 captchas handed out with %d ids and %d images, want all different", len(ids), len(images))
	}
	// A sale about to start expects more: the pool grows to its size, no further.
	expected.Store(1000)
	waitHeld(300)
}

// BenchmarkDrawFromPool measures how fast captchas are handed out from a full pool (each one also kept
// in Redis), by many requests at once.
func BenchmarkDrawFromPool(b *testing.B) {
	c := New(testenv.Redis(b), gate.New(1, time.Second), time.Second, b.N)
	d, err := c.draw()
	if err != nil {
		b.Fatal(err)
	}
	for range b.N {
		c.pool <- d
	}
	b.SetParallelism(64)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, _, err := c.Draw(context.Background()); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "captchas/s")
}

// A captcha's sound is kept by its id and language, which the handler reads from the request (a path
// parameter, a query value) whose buffer the server reuses for the next request: what the cache keeps
// must be the captcha's id and language still once those bytes are overwritten.
func TestAudioKeepsNoBytesOfTheRequest(t *testing.T) {
	c := New(testenv.Redis(t), gate.New(1, time.Second), time.Second, 0)
	ctx := context.Background()
	id, _, err := c.Draw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	idBuf, langBuf := []byte(id), []byte("zh")
	if _, err := c.Audio(ctx, unsafe.String(unsafe.SliceData(idBuf), len(idBuf)), unsafe.String(unsafe.SliceData(langBuf), len(langBuf))); err != nil {
		t.Fatal(err)
	}
	for i := range idBuf {
		idBuf[i] = '0'
	}
	copy(langBuf, "xx")
	keys := c.sounds.Keys()
	if len(keys) != 1 || keys[0] != (soundKey{id, "zh"}) {
		t.Errorf("the sound cache keeps %q once the request's bytes are reused, want [{%s zh}]", keys, id)
	}
}
