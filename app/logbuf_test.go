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
