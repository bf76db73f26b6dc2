package app

import (
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// nginx's stub_status page shows in /metrics as seckill_nginx_*; a status page that does not answer
// says so (seckill_nginx_up 0) rather than failing the scrape.
func TestNginxStatusInMetrics(t *testing.T) {
	page := "Active connections: 291 \nserver accepts handled requests\n 16630948 16630947 31070465 \nReading: 6 Writing: 179 Waiting: 106 \n"
	nginx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/nginx_status" {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, page)
	}))
	defer nginx.Close()

	for _, tc := range []struct {
		name, url string
		want      []string
	}{
		{"answering", nginx.URL + "/nginx_status", []string{
			"seckill_nginx_up 1", `seckill_nginx_connections{state="active"} 291`, `seckill_nginx_connections{state="waiting"} 106`,
			"seckill_nginx_connections_accepted_total 1.6630948e+07", "seckill_nginx_connections_handled_total 1.6630947e+07",
			"seckill_nginx_requests_total 3.1070465e+07"}},
		{"not a status page", nginx.URL + "/elsewhere", []string{"seckill_nginx_up 0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startLive(t, liveOpts{noBackground: true, tune: func(c *Config) { c.NginxStatusURL = tc.url }})
			rec := httptest.NewRecorder()
			s.Srv.Metrics.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
			for _, w := range tc.want {
				if !strings.Contains(rec.Body.String(), w+"\n") {
					t.Errorf("/metrics lacks %q", w)
				}
			}
		})
	}
}

// The edge log's lines are counted by answer from where the log was when the reader started, a line
// split between two reads once, and the log is emptied once large (only when the reader may write it).
func TestEdgeLogCounts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "edge.log")
	appendLog := func(s string) {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	count := func(e *edgeLog) map[string]float64 {
		reg := prometheus.NewRegistry()
		reg.MustRegister(e)
		got := map[string]float64{}
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				got[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
			}
		}
		return got
	}

	appendLog("hit\nhit\n") // before the reader: not its to count
	e := newEdgeLog(path, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err := e.read(); err != nil {
		t.Fatal(err)
	}
	appendLog("hit\nstale\nsold_out\nsold_")
	if err := e.read(); err != nil {
		t.Fatal(err)
	}
	appendLog("out\nrate_limited\nsomething new\n")
	if err := e.read(); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"hit": 1, "stale": 1, "updating": 0, "sold_out": 2, "rate_limited": 1, "conn_limited": 0, "other": 1}
	if got := count(e); !maps.Equal(got, want) {
		t.Errorf("counts %v, want %v", got, want)
	}

	appendLog(strings.Repeat("hit\n", edgeLogTruncateAt/4))
	if err := e.read(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
		t.Errorf("the log was not emptied once large: %v %v", fi.Size(), err)
	}
	appendLog("updating\n")
	if err := e.read(); err != nil {
		t.Fatal(err)
	}
	if got := count(e); got["hit"] != 1+edgeLogTruncateAt/4 || got["updating"] != 1 {
		t.Errorf("after emptying: hit %v updating %v, want %d and 1", got["hit"], got["updating"], 1+edgeLogTruncateAt/4)
	}
}

// A log that does not exist yet when the reader starts (nginx starts after the instances) is new: all
// its lines are counted.
func TestEdgeLogCreatedLater(t *testing.T) {
	path := filepath.Join(t.TempDir(), "edge.log")
	e := newEdgeLog(path, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err := e.read(); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("read of a missing log: %v", err)
	}
	if err := os.WriteFile(path, []byte("sold_out\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := e.read(); err != nil {
		t.Fatal(err)
	}
	if e.counts["sold_out"] != 1 {
		t.Errorf("sold_out %d, want 1", e.counts["sold_out"])
	}
}

// The admins' live dashboard shows nginx's figures (GET /api/admin/edge): its connections and requests
// from its status page, and what it answered itself from the edge log this instance counts; nothing is
// configured without nginx; merchants and shoppers are refused.
func TestEdgeFiguresForAdmins(t *testing.T) {
	page := "Active connections: 291 \nserver accepts handled requests\n 16630948 16630947 31070465 \nReading: 6 Writing: 179 Waiting: 106 \n"
	nginx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, page) }))
	defer nginx.Close()
	log := filepath.Join(t.TempDir(), "edge.log")
	s := startLive(t, liveOpts{noBackground: true, tune: func(c *Config) { c.NginxStatusURL = nginx.URL; c.NginxEdgeLog = log }})
	s.Srv.edge.mu.Lock()
	s.Srv.edge.count([]byte("hit\nhit\nsold_out\nrate_limited\n"))
	s.Srv.edge.mu.Unlock()

	admin := withRole(t, s, "edge_admin", "admin")
	r := admin.call("GET", "/api/admin/edge", nil)
	expect(t, "the edge's figures", r, 200, "")
	var got struct {
		Configured, Status, Up, Log bool
		Connections, Requests       int64
		Answers                     map[string]int64
	}
	if err := json.Unmarshal(r.Body, &got); err != nil {
		t.Fatal(err)
	}
	if !got.Configured || !got.Status || !got.Up || !got.Log || got.Connections != 291 || got.Requests != 31070465 ||
		got.Answers["hit"] != 2 || got.Answers["sold_out"] != 1 || got.Answers["rate_limited"] != 1 {
		t.Errorf("the edge's figures: %s", r.Body)
	}
	expect(t, "a merchant asks", withRole(t, s, "edge_merchant", "merchant").call("GET", "/api/admin/edge", nil), 403, "forbidden")
	expect(t, "nobody asks", newBrowser(t, s.URL).call("GET", "/api/admin/edge", nil), 401, "unauthenticated")

	nginx.Close() // its status page gone: said so, the rest still shown
	r = admin.call("GET", "/api/admin/edge", nil)
	if err := json.Unmarshal(r.Body, &got); err != nil || got.Up || !got.Status || got.Answers["hit"] != 2 {
		t.Errorf("with nginx's status page gone: %s", r.Body)
	}

	bare := startLive(t, liveOpts{noBackground: true})
	r = withRole(t, bare, "edge_admin2", "admin").call("GET", "/api/admin/edge", nil)
	if err := json.Unmarshal(r.Body, &got); err != nil || r.Status != 200 || got.Configured {
		t.Errorf("without nginx: %d %s", r.Status, r.Body)
	}
}
