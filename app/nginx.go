package app

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"seckill/handlers"
)

// nginxStatus shows nginx's own counters (its stub_status page, NGINX_STATUS_URL) in this instance's
// /metrics, read at each scrape: nginx answers much of the crowd itself (its cache, its sold-out answers),
// and those requests never reach an instance's own counters. Every instance reading the same nginx shows
// the same numbers: take one, do not add them up.
type nginxStatus struct {
	url    string
	client *http.Client

	up, conns, accepted, handled, requests *prometheus.Desc
}

func newNginxStatus(url string) *nginxStatus {
	return &nginxStatus{
		url:      url,
		client:   &http.Client{Timeout: time.Second},
		up:       prometheus.NewDesc("seckill_nginx_up", "1 when nginx's status page (NGINX_STATUS_URL) answered this scrape, else 0.", nil, nil),
		conns:    prometheus.NewDesc("seckill_nginx_connections", "nginx's client connections by state (active is all of them; waiting are idle keep-alive ones).", []string{"state"}, nil),
		accepted: prometheus.NewDesc("seckill_nginx_connections_accepted_total", "Client connections nginx accepted.", nil, nil),
		handled:  prometheus.NewDesc("seckill_nginx_connections_handled_total", "Client connections nginx handled (fewer than accepted when it ran out of worker_connections).", nil, nil),
		requests: prometheus.NewDesc("seckill_nginx_requests_total", "Client requests nginx answered: from its cache, by itself (sold out, rate limited) or through an instance.", nil, nil),
	}
}

var _ prometheus.Collector = (*nginxStatus)(nil)

func (n *nginxStatus) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{n.up, n.conns, n.accepted, n.handled, n.requests} {
		ch <- d
	}
}

func (n *nginxStatus) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	s, err := n.read(ctx)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(n.up, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(n.up, prometheus.GaugeValue, 1)
	for _, st := range []struct {
		name string
		v    int64
	}{{"active", s.active}, {"reading", s.reading}, {"writing", s.writing}, {"waiting", s.waiting}} {
		ch <- prometheus.MustNewConstMetric(n.conns, prometheus.GaugeValue, float64(st.v), st.name)
	}
	ch <- prometheus.MustNewConstMetric(n.accepted, prometheus.CounterValue, float64(s.accepted))
	ch <- prometheus.MustNewConstMetric(n.handled, prometheus.CounterValue, float64(s.handled))
	ch <- prometheus.MustNewConstMetric(n.requests, prometheus.CounterValue, float64(s.requests))
}

func (n *nginxStatus) read(ctx context.Context) (stubStatus, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, n.url, nil)
	if err != nil {
		return stubStatus{}, err
	}
	resp, err := n.client.Do(req)
	if err != nil {
		return stubStatus{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return stubStatus{}, fmt.Errorf("nginx status: %s", resp.Status)
	}
	return parseStubStatus(io.LimitReader(resp.Body, 4096))
}

// stubStatus is what nginx's stub_status page says.
type stubStatus struct {
	active, accepted, handled, requests, reading, writing, waiting int64
}

// parseStubStatus reads the page, which reads:
//
//	Active connections: 291
//	server accepts handled requests
//	 16630948 16630948 31070465
//	Reading: 6 Writing: 179 Waiting: 106
func parseStubStatus(r io.Reader) (stubStatus, error) {
	var s stubStatus
	var lines []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		lines = append(lines, strings.TrimSpace(sc.Text()))
	}
	if len(lines) < 4 {
		return s, fmt.Errorf("nginx status: %d lines, want 4", len(lines))
	}
	bad := fmt.Errorf("nginx status: not a stub_status page")
	active, ok := strings.CutPrefix(lines[0], "Active connections:")
	if !ok {
		return s, bad
	}
	counts := strings.Fields(lines[2])
	rw := strings.Fields(lines[3]) // Reading: N Writing: N Waiting: N
	if len(counts) != 3 || len(rw) != 6 {
		return s, bad
	}
	var err error
	for _, f := range []struct {
		dst *int64
		src string
	}{{&s.active, active}, {&s.accepted, counts[0]}, {&s.handled, counts[1]}, {&s.requests, counts[2]},
		{&s.reading, rw[1]}, {&s.writing, rw[3]}, {&s.waiting, rw[5]}} {
		if *f.dst, err = strconv.ParseInt(strings.TrimSpace(f.src), 10, 64); err != nil {
			return s, bad
		}
	}
	return s, nil
}

// The answers nginx gives without an instance, as its edge log names them (seckill.conf.template's
// $seckill_edge_answer): from its cache (a fresh entry, or a stale one while it is renewed), or its own (a
// sold-out item's path or buy, a rate limit, a connection cap).
var edgeAnswers = []string{"hit", "stale", "updating", "sold_out", "rate_limited", "conn_limited"}

// edgeLogTruncateAt is how large the edge log may grow before the reader empties it (a line is a few
// bytes: about four million answers).
const edgeLogTruncateAt = 16 << 20

// edgeLog counts the lines of nginx's edge log (NGINX_EDGE_LOG), one a request nginx answered without an
// instance, so that /metrics shows what the instances' own counters never see. nginx appends (O_APPEND):
// the reader follows the file from where it was at start, and empties it once it is large, when it may
// write it. A line nginx writes between the reader's last read and the emptying is lost: a few, every
// few million. One instance reads a given log (two would share its lines and empty it under each other).
type edgeLog struct {
	path string
	log  *slog.Logger

	mu      sync.Mutex
	counts  map[string]uint64
	off     int64
	partial []byte // a line not yet ended
	started bool
}

func newEdgeLog(path string, log *slog.Logger) *edgeLog {
	return &edgeLog{path: path, log: log, counts: map[string]uint64{}}
}

// Run reads the new lines every second until ctx ends.
func (e *edgeLog) Run(ctx context.Context) error {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		if err := e.read(); err != nil && !errors.Is(err, fs.ErrNotExist) {
			e.log.WarnContext(ctx, "nginx's edge log not read", "path", e.path, "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// read counts the lines appended since the last read.
func (e *edgeLog) read() error {
	f, err := os.OpenFile(e.path, os.O_RDWR, 0)
	writable := err == nil
	if err != nil {
		if f, err = os.Open(e.path); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				// Not there yet (nginx starts after the instances): all it will hold is new.
				e.mu.Lock()
				e.started = true
				e.mu.Unlock()
			}
			return err
		}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.started {
		// What was written before this instance started is not its to count.
		e.started, e.off = true, fi.Size()
		return nil
	}
	if fi.Size() < e.off { // emptied or replaced by someone else
		e.off, e.partial = 0, nil
	}
	buf := make([]byte, 64<<10)
	for e.off < fi.Size() {
		n, err := f.ReadAt(buf, e.off)
		e.count(buf[:n])
		e.off += int64(n)
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	if writable && e.off >= edgeLogTruncateAt {
		if now, err := f.Stat(); err == nil && now.Size() == e.off {
			if err := f.Truncate(0); err != nil {
				return err
			}
			e.off = 0
		}
	}
	return nil
}

// count adds the whole lines of b (the start of a line may have come with the previous read).
func (e *edgeLog) count(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			e.partial = append(e.partial, b...)
			return
		}
		line := b[:i]
		if len(e.partial) > 0 {
			line = append(e.partial, line...)
			e.partial = e.partial[:0]
		}
		e.counts[edgeAnswerOf(line)]++
		b = b[i+1:]
	}
}

// edgeAnswerOf names a line's answer, one of edgeAnswers or "other" (the label's values stay few).
func edgeAnswerOf(line []byte) string {
	s := string(bytes.TrimSpace(line))
	for _, a := range edgeAnswers {
		if s == a {
			return a
		}
	}
	return "other"
}

var _ prometheus.Collector = (*edgeLog)(nil)

var edgeAnswersDesc = prometheus.NewDesc("seckill_nginx_answers_total",
	"Requests nginx answered without an instance, by answer: from its cache (hit, stale, updating) or its own (sold_out, rate_limited, conn_limited), read from its edge log (NGINX_EDGE_LOG) since this instance started.",
	[]string{"answer"}, nil)

func (e *edgeLog) Describe(ch chan<- *prometheus.Desc) { ch <- edgeAnswersDesc }

func (e *edgeLog) Collect(ch chan<- prometheus.Metric) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, a := range append(edgeAnswers[:len(edgeAnswers):len(edgeAnswers)], "other") {
		ch <- prometheus.MustNewConstMetric(edgeAnswersDesc, prometheus.CounterValue, float64(e.counts[a]), a)
	}
}

// edgeFigures is what the admins' dashboard shows of nginx (handlers.Edge): its status page read now,
// and the edge log's counts so far; nil when neither is configured.
func edgeFigures(status *nginxStatus, edge *edgeLog) func(context.Context) handlers.EdgeFigures {
	if status == nil && edge == nil {
		return nil
	}
	return func(ctx context.Context) handlers.EdgeFigures {
		var f handlers.EdgeFigures
		if status != nil {
			f.Status = true
			if st, err := status.read(ctx); err == nil {
				f.Up, f.Active, f.Requests = true, st.active, st.requests
			}
		}
		if edge != nil {
			f.Log = true
			edge.mu.Lock()
			f.Answers = maps.Clone(edge.counts)
			edge.mu.Unlock()
		}
		return f
	}
}
