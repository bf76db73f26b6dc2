package jobs

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"seckill/internal/testenv"
)

func TestEveryRunsUntilItsContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var runs, failures atomic.Int32
	done := make(chan error, 1)
	go func() {
		done <- Every(ctx, time.Millisecond, func(context.Context) error {
			if runs.Add(1) == 2 {
				return errors.New("one bad round")
			}
			return nil
		}, func(error) { failures.Add(1) })
	}()
	testenv.Eventually(t, 10*time.Second, "five rounds", func() bool { return runs.Load() >= 5 })
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Every returned %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Every did not stop after its context was cancelled")
	}
	if failures.Load() != 1 {
		t.Errorf("onErr was called %d times, want 1 (the loop must go on after a failed round)", failures.Load())
	}
	stopped := runs.Load()
	time.Sleep(20 * time.Millisecond)
	if runs.Load() != stopped {
		t.Errorf("fn ran %d more times after Every returned", runs.Load()-stopped)
	}
}
