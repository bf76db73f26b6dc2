package ratelimit

import (
	"strconv"
	"testing"

	"seckill/errs"
)

// A flood from more addresses than it keeps leaves the limiter at its bound, and it still limits.
func TestLocalKeepsAtMostItsBound(t *testing.T) {
	l := NewLocal(20, 40)
	for i := range 3 * maxLocalKeys {
		_ = l.Allow("10." + strconv.Itoa(i>>16) + "." + strconv.Itoa(i>>8&255) + "." + strconv.Itoa(i&255))
	}
	n := 0
	for i := range l.shards {
		n += len(l.shards[i].m)
	}
	if n > maxLocalKeys {
		t.Errorf("%d keys kept after a flood of %d addresses, want at most %d", n, 3*maxLocalKeys, maxLocalKeys)
	}
	refused := false
	for range 41 {
		if errs.Is(l.Allow("192.0.2.1"), errs.RateLimited) {
			refused = true
		}
	}
	if !refused {
		t.Error("41 events at once from one address after the flood: none refused")
	}
}
