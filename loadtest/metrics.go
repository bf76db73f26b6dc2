package loadtest

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Metrics are the instances' own counters (their /metrics, Prometheus text), summed over the instances:
// series (name{labels}) → value. Read before and after a crowd, they say what reached the instances,
// whatever the proxy in front of them answered itself.
type Metrics map[string]float64

// ScrapeMetrics reads every instance's /metrics (urls) and sums their series.
func ScrapeMetrics(ctx context.Context, urls []string) (Metrics, error) {
	m := Metrics{}
	hc := &http.Client{Timeout: 10 * time.Second}
	for _, u := range urls {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return nil, err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return nil, fmt.Errorf("metrics of %s: %w", u, err)
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			line := sc.Text()
			if line == "" || line[0] == '#' {
				continue
			}
			i := strings.LastIndexByte(line, ' ')
			if i < 0 {
				continue
			}
			if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
				m[line[:i]] += v
			}
		}
		err = sc.Err()
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("metrics of %s: %w", u, err)
		}
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("metrics of %s: %s", u, resp.Status)
		}
	}
	return m, nil
}

// Sum adds the series of a metric whose labels hold every label="value" given (none: all its series).
func (m Metrics) Sum(name string, labels ...string) float64 {
	t := 0.0
	for k, v := range m {
		if metricName(k) != name {
			continue
		}
		all := true
		for _, l := range labels {
			all = all && strings.Contains(k, l)
		}
		if all {
			t += v
		}
	}
	return t
}

// Has reports whether any instance reports the metric.
func (m Metrics) Has(name string) bool {
	for k := range m {
		if metricName(k) == name {
			return true
		}
	}
	return false
}

func metricName(series string) string {
	if i := strings.IndexByte(series, '{'); i >= 0 {
		return series[:i]
	}
	return series
}

// Since answers the counters' growth from an earlier reading (a series new since then counts whole).
func (m Metrics) Since(before Metrics) Metrics {
	d := Metrics{}
	for k, v := range m {
		if v -= before[k]; v != 0 {
			d[k] = v
		}
	}
	return d
}

const (
	requestsMetric     = "seckill_http_requests_total"
	statementsMetric   = "seckill_db_statements_total"
	transactionsMetric = "seckill_db_transactions_total"
	// nginxRequestsMetric is nginx's own count of requests, which each instance reports as it read it.
	nginxRequestsMetric = "seckill_nginx_requests_total"
	// nginxAnswersMetric is what nginx answered without an instance, by answer (its edge log, counted
	// by one instance).
	nginxAnswersMetric = "seckill_nginx_answers_total"
)

// RequestsReached answers the HTTP requests the instances answered, by the counts of d (a Since).
func (d Metrics) RequestsReached() float64 { return d.Sum(requestsMetric) }

// routes answers the requests that reached the instances by method and route, most first.
func (d Metrics) routes() []routeCount {
	by := map[string]float64{}
	for k, v := range d {
		if metricName(k) != requestsMetric {
			continue
		}
		by[label(k, "method")+" "+label(k, "route")] += v
	}
	out := make([]routeCount, 0, len(by))
	for r, n := range by {
		out = append(out, routeCount{r, n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].n > out[j].n || out[i].n == out[j].n && out[i].route < out[j].route })
	return out
}

type routeCount struct {
	route string
	n     float64
}

// label answers a series' label value ("" when it has none of that name).
func label(series, name string) string {
	i := strings.Index(series, name+`="`)
	if i < 0 {
		return ""
	}
	rest := series[i+len(name)+2:]
	if j := strings.IndexByte(rest, '"'); j >= 0 {
		return rest[:j]
	}
	return ""
}

// byLabel answers a metric's growth by one label's values.
func (d Metrics) byLabel(name, labelName string) map[string]float64 {
	out := map[string]float64{}
	for k, v := range d {
		if metricName(k) == name && v != 0 {
			out[label(k, labelName)] += v
		}
	}
	return out
}
