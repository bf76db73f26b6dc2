package app

import (
	"bytes"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"seckill/internal/testenv"
)

// Log lines go out whole, within a tenth of a second or so, and all of them by Close.
func TestLogBufferFlushesWholeLines(t *testing.T) {
	out := &safeWriter{w: &bytes.Buffer{}}
	b := newLogBuffer(out)
	log := slog.New(slog.NewTextHandler(b, nil))
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				log.Info("request", "g", g, "i", i, "pad", strings.Repeat("x", 40))
			}
		})
	}
	wg.Wait()
	log.Info("last")
	testenv.Eventually(t, 2*time.Second, "the line logged last to be written", func() bool {
		return strings.Contains(out.String(), "msg=last")
	})
	log.Info("at close")
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 8*500+2 {
		t.Errorf("%d lines written, want %d", len(lines), 8*500+2)
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "time=") || !strings.Contains(l, "msg=") {
			t.Fatalf("a broken line: %q", l)
		}
	}
	if !strings.HasSuffix(out.String(), "msg=\"at close\"\n") {
		t.Error("the line logged before Close was not written by it")
	}
}

// Refusals past refusalLines a second are counted, not logged: the next line says how many; the
// metrics count every request.
func TestRefusalsAreSampledInTheAccessLog(t *testing.T) {
	out := &safeWriter{w: &bytes.Buffer{}}
	s := startLive(t, liveOpts{noBackground: true, log: newLogger(Config{}, out)})
	const n = 3 * refusalLines
	for range n {
		do(t, s.Srv.Fiber, "GET", "/api/items/999999999", nil) // 404: not found
	}
	do(t, s.Srv.Fiber, "GET", "/api/activities", nil)
	logged := strings.Count(out.String(), "status=404")
	if logged > refusalLines+refusalLines/2 || logged < refusalLines/2 {
		t.Errorf("%d of %d refusals logged, want about %d", logged, n, refusalLines)
	}
	// The lines written after refusals were left out say how many: together, all of them.
	told := 0
	for _, m := range regexp.MustCompile(`refusals_not_logged=(\d+)`).FindAllStringSubmatch(out.String(), -1) {
		k, _ := strconv.Atoi(m[1])
		told += k
	}
	if logged+told != n {
		t.Errorf("%d refusals logged and %d told as not logged, want %d in all", logged, told, n)
	}
	want := fmt.Sprintf(`seckill_http_requests_total{method="GET",route="/api/items/:id",status="404"} %d`, n)
	if !strings.Contains(scrape(t, s.Srv), want) {
		t.Errorf("/metrics lacks %s", want)
	}
}

// Lines written through one key (a connection's) come out in the order written, whole, all of them,
// whatever the other keys write meanwhile; a line longer than a stripe goes out whole too.
func TestLogBufferKeepsAConnectionsLinesInOrder(t *testing.T) {
	out := &safeWriter{w: &bytes.Buffer{}}
	b := newLogBuffer(out)
	var wg sync.WaitGroup
	const keys, each = 16, 2000
	for k := range keys {
		wg.Go(func() {
			for i := range each {
				b.WriteFrom(fmt.Appendf(nil, "k=%d i=%d %s\n", k, i, strings.Repeat("x", 60)), uint64(k))
			}
		})
	}
	long := "long " + strings.Repeat("y", logStripeSize+100) + "\n"
	b.WriteFrom([]byte(long), 3)
	wg.Wait()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	next := make([]int, keys)
	longs := 0
	for _, l := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		if strings.HasPrefix(l, "long ") {
			if l+"\n" != long {
				t.Fatalf("the long line came out broken (%d bytes)", len(l))
			}
			longs++
			continue
		}
		var k, i int
		if _, err := fmt.Sscanf(l, "k=%d i=%d", &k, &i); err != nil || k < 0 || k >= keys {
			t.Fatalf("a broken line: %.80q", l)
		}
		if i != next[k] {
			t.Fatalf("key %d: line %d came where %d was due", k, i, next[k])
		}
		next[k]++
	}
	for k, n := range next {
		if n != each {
			t.Errorf("key %d: %d of %d lines written", k, n, each)
		}
	}
	if longs != 1 {
		t.Errorf("the long line came out %d times", longs)
	}
}
