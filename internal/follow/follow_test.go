package follow_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"seckill/internal/follow"
	"seckill/internal/testenv"
)

// Two deployments on one Redis server, on different databases, each hear only their own messages.
func TestChannelHearsOnlyItsOwnDatabase(t *testing.T) {
	a, b := testenv.Redis(t), testenv.Redis(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	heardA, heardB := make(chan string, 1000), make(chan string, 1000)
	go follow.Channel(ctx, a, "ch", time.Hour, func(p string) { heardA <- p }, func(context.Context) {})
	go follow.Channel(ctx, b, "ch", time.Hour, func(p string) { heardB <- p }, func(context.Context) {})
	// Subscribing happens in the background: publish until both listen.
	testenv.EventuallySaw(t, 5*time.Second, "a message heard on each", func() (bool, string) {
		if len(heardA) > 0 && len(heardB) > 0 {
			return true, ""
		}
		if err := follow.Publish(ctx, a, "ch", "to a"); err != nil {
			t.Fatal(err)
		}
		if err := follow.Publish(ctx, b, "ch", "to b"); err != nil {
			t.Fatal(err)
		}
		return false, fmt.Sprintf("a heard %d, b %d", len(heardA), len(heardB))
	})
	cancel()
	time.Sleep(50 * time.Millisecond)
	for p := range drain(heardA) {
		if p != "to a" {
			t.Errorf("database a heard %q", p)
		}
	}
	for p := range drain(heardB) {
		if p != "to b" {
			t.Errorf("database b heard %q", p)
		}
	}
}

func drain(c chan string) map[string]bool {
	out := map[string]bool{}
	for {
		select {
		case p := <-c:
			out[p] = true
		default:
			return out
		}
	}
}
