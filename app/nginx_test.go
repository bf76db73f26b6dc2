package app

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
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
