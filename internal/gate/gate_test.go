package gate

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"seckill/errs"
	"seckill/internal/testenv"
)

func TestGateBoundsWorkAndRefusesAfterTheWait(t *testing.T) {
	g := New(2, 50*time.Millisecond)
	var running, most atomic.Int32
	release := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = g.Do(context.Background(), func() {
				n := running.Add(1)
				for {
					m := most.Load()
					if n <= m || most.CompareAndSwap(m, n) {
						break
					}
				}
				<-release
				running.Add(-1)
			})
		}()
	}
	testenv.Eventually(t, 10*time.Second, "two callers inside the gate", func() bool { return running.Load() >= 2 })
	// Both turns are taken: a third caller waits its 50 ms and is told to come back.
	err := g.Do(context.Background(), func() { t.Error("a third caller ran while two held the gate") })
	if !errs.Is(err, errs.RateLimited) {
		t.Fatalf("a caller past the wait got %v, want rate_limited", err)
	}
	close(release)
	wg.Wait()
	if most.Load() != 2 {
		t.Errorf("at most %d ran at once, want 2", most.Load())
	}
	ran := false
	if err := g.Do(context.Background(), func() { ran = true }); err != nil || !ran {
		t.Errorf("a free gate: ran=%v err=%v", ran, err)
	}
}

func TestGateStopsWaitingWhenTheCallerGoesAway(t *testing.T) {
	g := New(1, time.Minute)
	hold, held := make(chan struct{}), make(chan struct{})
	go g.Do(context.Background(), func() { close(held); <-hold })
	defer close(hold)
	<-held
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := g.Do(ctx, func() {}); err != context.DeadlineExceeded {
		t.Errorf("a caller whose context ended got %v, want its context's error", err)
	}
}
