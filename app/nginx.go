package app

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
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
