package main

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/time/rate"

	"seckill/loadtest"
)

// A soak runs steady mixed load on the world for a while and samples what could grow: each instance's
// memory (RSS and Go heap), goroutines, open file descriptors and sockets, Redis's memory and keys, and
// PostgreSQL's connections. It fails if any of them keeps growing over the second half of the run, or
// a sale's audit fails.

// measure is one column of the samples, with the growth an hour it may show over the second half.
type measure struct {
	name    string
	unit    string
	perHour float64 // the most a straight-line fit over the second half may rise an hour
	bound   float64 // when not 0, a cap by design: a measure that never passes it is bounded, not growing
}

type soakStats struct {
	pages, pageErrors, buys, sales, paid, unpaid, cancelled, qrLogins atomic.Int64
	samplesLost                                                       atomic.Int64
	mu                                                                sync.Mutex
	failures                                                          []string
}

func (s *soakStats) fail(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.failures) < 50 {
		s.failures = append(s.failures, fmt.Sprintf(format, args...))
	}
}

// soak runs the load for c.soak and writes the samples (CSV), their chart (SVG) and a report.
func (w *world) soak(ctx context.Context, c *config, out io.Writer) error {
	client := loadtest.NewClient(w.frontURL, 256)
	defer client.Close()
	admin := &loadtest.User{Name: adminName, Password: w.adminPass}
	merchant := &loadtest.User{Name: merchantName, Password: w.merchPass}
	if err := client.Start(ctx); err != nil {
		return err
	}
	for _, u := range []*loadtest.User{admin, merchant} {
		if err := client.Login(ctx, u); err != nil {
			return err
		}
	}
	// An item for the pages to show while no sale runs: the first sale's, kept for the whole run.
	shown, err := client.SetUpSaleFor(ctx, merchant, admin, loadtest.Name("soak_shown"), 10, 1, 2*time.Second, 24*time.Hour, "first_come")
	if err != nil {
		return err
	}
	pages := []string{"/", fmt.Sprintf("/items/%d", shown.ItemID), fmt.Sprintf("/api/items/%d", shown.ItemID), "/api/activities", "/login"}

	// Half of this machine's capacity for page views, measured first, through the same balancer.
	capacity := c.soakRate
	if capacity == 0 {
		reqs := make([]loadtest.Request, 20_000)
		for i := range reqs {
			reqs[i] = loadtest.Request{Method: http.MethodGet, Path: pages[i%len(pages)]}
		}
		mctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		res := client.Fire(mctx, reqs, 64, nil)
		cancel()
		capacity = res.Throughput() / 2
		fmt.Fprintf(out, "soak: %.0f page views a second measured; the soak runs them at %.0f, with sales, payments and QR logins beside\n",
			res.Throughput(), capacity)
	}

	st := &soakStats{}
	lctx, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	limit := rate.NewLimiter(rate.Limit(capacity), max(int(capacity/10), 1))
	for i := range 64 {
		wg.Go(func() {
			for n := i; lctx.Err() == nil; n++ {
				if limit.Wait(lctx) != nil {
					return
				}
				a, err := client.Do(lctx, http.MethodGet, pages[n%len(pages)], nil, nil)
				st.pages.Add(1)
				if err != nil && lctx.Err() == nil || err == nil && a.Status >= 500 {
					st.pageErrors.Add(1)
				}
			}
		})
	}
	var stopSales atomic.Bool
	wg.Go(func() { w.sales(ctx, &stopSales, c, client, admin, merchant, st, out) })

	samples, err := w.sample(ctx, c, c.soak, st)
	stopLoad()
	stopSales.Store(true)
	wg.Wait()
	if err != nil {
		return err
	}
	// Every order left unpaid is cancelled once its time to pay runs out; the paid ones stay paid.
	fmt.Fprintf(out, "soak: waiting up to %v for the last unpaid orders to be cancelled\n", c.payTimeout+30*time.Second)
	if err := w.unpaidCancelled(ctx, c.payTimeout+30*time.Second, st); err != nil {
		st.fail("unpaid timeouts: %v", err)
	}
	return w.soakReport(c, samples, st, capacity, out)
}

// unpaidCancelled waits until no order waits for payment, and checks that as many were cancelled as
// were left unpaid and as many paid as were paid.
func (w *world) unpaidCancelled(ctx context.Context, within time.Duration, st *soakStats) error {
	conn, err := pgx.Connect(ctx, w.pg.url())
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var pending, cancelled, paid int64
	count := func() error {
		return conn.QueryRow(ctx, "SELECT count(*) FILTER (WHERE status = 'pending_payment'), count(*) FILTER (WHERE status = 'cancelled'), "+
			"count(*) FILTER (WHERE status IN ('paid', 'shipped')) FROM orders").Scan(&pending, &cancelled, &paid)
	}
	err = waitFor(ctx, within, "the unpaid orders to be cancelled", func() bool { return count() == nil && pending == 0 })
	if err != nil {
		return fmt.Errorf("%w: %d still waiting for payment", err, pending)
	}
	st.cancelled.Store(cancelled)
	if paid != st.paid.Load() || cancelled != st.unpaid.Load() {
		return fmt.Errorf("%d orders paid and %d cancelled; %d were paid and %d left unpaid", paid, cancelled, st.paid.Load(), st.unpaid.Load())
	}
	return nil
}

// soakSaleLasts is how long each of the soak's sales lasts; consumerLinger how long after its end the
// order consumer retires it (jobs.OrderConsumer's default).
const (
	soakSaleLasts  = time.Minute
	consumerLinger = time.Minute
)

// warmUp is how many of the soak's first cycles are not judged: until then each trough holds the keys of
// more sales than it will once the first ones are retired and their keys expired.
func warmUp(c *config) int {
	life := soakSaleLasts + consumerLinger + c.saleKeep
	return int(math.Ceil(life.Seconds() / c.soakEvery.Seconds()))
}

// sales starts a sale every c.soakEvery: shoppers register, buy, and half of the winners pay; the others'
// orders are cancelled when their time to pay runs out (PAY_TIMEOUT); a few log in by QR code.
// A sale under way when the soak stops is finished (stop is looked at between sales only), so that every
// order it made is counted.
func (w *world) sales(ctx context.Context, stop *atomic.Bool, c *config, client *loadtest.Client, admin, merchant *loadtest.User, st *soakStats, out io.Writer) {
	for n := 1; ctx.Err() == nil && !stop.Load(); n++ {
		next := time.Now().Add(c.soakEvery)
		if err := w.oneSale(ctx, client, admin, merchant, st); err != nil && ctx.Err() == nil {
			st.fail("sale %d: %v", n, err)
			fmt.Fprintf(out, "soak: sale %d: %v\n", n, err)
		}
		if err := w.qrLogins(ctx, client, 3, st); err != nil && ctx.Err() == nil {
			st.fail("QR logins %d: %v", n, err)
		}
		for time.Now().Before(next) && !stop.Load() && ctx.Err() == nil {
			sleep(ctx, 100*time.Millisecond)
		}
	}
}

func (w *world) oneSale(ctx context.Context, client *loadtest.Client, admin, merchant *loadtest.User, st *soakStats) error {
	prefix := loadtest.Name("soak")
	users, err := w.seedAndLogIn(ctx, client, prefix, 60)
	if err != nil {
		return err
	}
	sale, err := client.SetUpSaleFor(ctx, merchant, admin, prefix, 30, 1, 3*time.Second, soakSaleLasts, "first_come")
	if err != nil {
		return err
	}
	if err := loadtest.WaitUntil(ctx, sale.StartsAt.Add(100*time.Millisecond)); err != nil {
		return err
	}
	paths, err := client.GetPaths(ctx, w.rdb, users, sale.ItemID, nil)
	if err != nil {
		return err
	}
	reqs := make([]loadtest.Request, 0, 2*len(users))
	for i, u := range users {
		for range 2 {
			reqs = append(reqs, loadtest.Request{Method: http.MethodPost, Path: fmt.Sprintf("/api/items/%d/buy/%s", sale.ItemID, paths[i]), User: u, Who: i})
		}
	}
	res := client.Fire(ctx, reqs, 32, nil)
	st.buys.Add(int64(len(reqs)))
	stats, _, err := client.WaitDrained(ctx, admin, sale, time.Minute)
	if err != nil {
		return err
	}
	if a := client.AuditSale(ctx, sale, stats, users, res); !a.OK() {
		return fmt.Errorf("audit: %s", strings.Join(a.Failures, "; "))
	}
	st.sales.Add(1)
	// Half of the winners pay through the sandbox; the rest leave their orders to time out.
	k := 0
	for who := range res.Queued {
		u := users[who]
		var r struct {
			OrderNo string `json:"order_no"`
		}
		if err := client.JSON(ctx, http.MethodGet, fmt.Sprintf("/api/items/%d/result", sale.ItemID), nil, u, &r); err != nil {
			return err
		}
		if k++; k%2 == 0 {
			st.unpaid.Add(1)
			continue
		}
		if err := pay(ctx, client, u, r.OrderNo); err != nil {
			return fmt.Errorf("pay %s: %w", r.OrderNo, err)
		}
		st.paid.Add(1)
	}
	return nil
}

// pay gives the order an address and pays it at the sandbox, as a shopper does.
func pay(ctx context.Context, client *loadtest.Client, u *loadtest.User, orderNo string) error {
	var addr struct{ ID int64 }
	if err := client.JSON(ctx, http.MethodPost, "/api/addresses", map[string]any{"recipient": "张伟", "phone": "13800138000",
		"region": "浙江省", "city": "杭州市", "street": "西湖区文三路 90 号", "postcode": "310012"}, u, &addr); err != nil {
		return err
	}
	if err := client.JSON(ctx, http.MethodPost, "/api/orders/"+orderNo+"/address", map[string]any{"address_id": addr.ID}, u, nil); err != nil {
		return err
	}
	var p struct {
		PaymentID string `json:"payment_id"`
	}
	if err := client.JSON(ctx, http.MethodPost, "/api/orders/"+orderNo+"/pay", nil, u, &p); err != nil {
		return err
	}
	a, err := client.Patient(ctx, http.MethodPost, "/sandbox/pay/"+p.PaymentID+"/confirm", nil, u)
	if err != nil {
		return err
	}
	if a.Status >= 400 {
		return fmt.Errorf("sandbox confirm: %d %s", a.Status, a.Body)
	}
	return nil
}

// seedAndLogIn makes n shoppers' accounts beforehand and logs each in through the balancer.
func (w *world) seedAndLogIn(ctx context.Context, client *loadtest.Client, prefix string, n int) ([]*loadtest.User, error) {
	users, err := w.seed(ctx, prefix, n)
	if err != nil {
		return nil, err
	}
	return users, client.LoginAll(ctx, users, nil)
}

// qrLogins logs n computers in by QR code, each approved by a logged-in phone.
func (w *world) qrLogins(ctx context.Context, client *loadtest.Client, n int, st *soakStats) error {
	users, err := w.seedAndLogIn(ctx, client, loadtest.Name("soak_phone"), n)
	if err != nil {
		return err
	}
	for _, phone := range users {
		jar, _ := cookiejar.New(nil)
		pc := &http.Client{Jar: jar, Timeout: 10 * time.Second}
		var tok struct{ Token string }
		if err := getJSON(ctx, pc, http.MethodGet, w.frontURL+"/api/csrf", "", &tok); err != nil {
			return err
		}
		var code struct {
			QRID string `json:"qr_id"`
		}
		if err := getJSON(ctx, pc, http.MethodPost, w.frontURL+"/api/qr/login", tok.Token, &code); err != nil {
			return err
		}
		// The phone scans; the computer then shows the number the phone must pick to confirm.
		if err := client.JSON(ctx, http.MethodPost, "/api/qr/login/"+code.QRID+"/scan", nil, phone, nil); err != nil {
			return err
		}
		var shown struct{ State, Code string }
		if err := getJSON(ctx, pc, http.MethodGet, w.frontURL+"/api/qr/login/"+code.QRID, "", &shown); err != nil {
			return err
		}
		if shown.State != "scanned" || shown.Code == "" {
			return fmt.Errorf("the computer's code is %q with number %q after the phone scanned it", shown.State, shown.Code)
		}
		pick := map[string]string{"code": shown.Code}
		if err := client.JSON(ctx, http.MethodPost, "/api/qr/login/"+code.QRID+"/confirm", pick, phone, nil); err != nil {
			return err
		}
		var state struct{ State string }
		if err := getJSON(ctx, pc, http.MethodGet, w.frontURL+"/api/qr/login/"+code.QRID, "", &state); err != nil {
			return err
		}
		if state.State != "confirmed" {
			return fmt.Errorf("the computer's code is %q after the phone confirmed", state.State)
		}
		pc.CloseIdleConnections()
		st.qrLogins.Add(1)
	}
	return nil
}

func getJSON(ctx context.Context, c *http.Client, method, url, csrf string, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		return err
	}
	if csrf != "" {
		req.Header.Set("X-CSRF-Token", csrf)
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %d %s", method, url, resp.StatusCode, b)
	}
	return json.Unmarshal(b, out)
}

// sample reads every measure every c.soakSample for d.
func (w *world) sample(ctx context.Context, c *config, d time.Duration, st *soakStats) ([][]float64, error) {
	var rows [][]float64
	start := time.Now()
	t := time.NewTicker(c.soakSample)
	defer t.Stop()
	for {
		// A sample that cannot be read (a scrape slower than its timeout under load) is skipped and
		// counted; a soak that can read none of them, or a tenth of them fail, fails.
		row, err := w.measure(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return rows, ctx.Err()
			}
			if st.samplesLost.Add(1) > max(int64(len(rows))/10, 3) {
				return rows, fmt.Errorf("%d samples could not be read, the last: %w", st.samplesLost.Load(), err)
			}
		} else {
			rows = append(rows, append([]float64{time.Since(start).Seconds()}, row...))
		}
		if time.Since(start) >= d {
			return rows, nil
		}
		select {
		case <-ctx.Done():
			return rows, ctx.Err()
		case <-t.C:
		}
	}
}

// measures names the columns measure answers, instance by instance and then the servers.
func (w *world) measures() []measure {
	var ms []measure
	for i := range w.instances {
		p := fmt.Sprintf("instance%d_", i+1)
		ms = append(ms, measure{p + "rss", "MB", 50, 0}, measure{p + "live_heap", "MB", 50, 0}, measure{p + "goroutines", "", 60, 0},
			measure{p + "fds", "", 60, 0}, measure{p + "sockets", "", 60, 0})
	}
	// Keys that expire are bounded by time; those that never do would pile up. Each instance's database
	// pool holds 20 connections at most (app/deps.go); those busy (a query running, or a transaction left
	// open) are judged.
	return append(ms, measure{"redis_memory", "MB", 20, 0}, measure{"redis_keys", "", 600, 0}, measure{"redis_keys_for_ever", "", 30, 0},
		measure{"pg_connections", "", 0, float64(20 * len(w.instances))}, measure{"pg_busy", "", 10, 0})
}

func (w *world) measure(ctx context.Context) ([]float64, error) {
	var out []float64
	for _, in := range w.instances {
		pid := in.cmd.Process.Pid
		rss, err := rssMB(pid)
		if err != nil {
			return nil, err
		}
		heap, goroutines, err := goMetrics(ctx, in)
		if err != nil {
			return nil, err
		}
		fds, sockets, err := fdsOf(pid)
		if err != nil {
			return nil, err
		}
		out = append(out, rss, heap/(1<<20), goroutines, fds, sockets)
	}
	mem, err := w.rdb.InfoMap(ctx, "memory").Result()
	if err != nil {
		return nil, err
	}
	used, _ := strconv.ParseFloat(mem["Memory"]["used_memory"], 64)
	keys, err := w.rdb.DBSize(ctx).Result()
	if err != nil {
		return nil, err
	}
	// The payment sandbox's keys are the provider's books (a real provider keeps them elsewhere, and the
	// sandbox a day): not counted. Of ours, those without an expiry are counted apart.
	var forever float64
	iter := w.rdb.Scan(ctx, 0, "*", 1000).Iterator()
	for iter.Next(ctx) {
		if strings.HasPrefix(iter.Val(), "sandbox:") {
			keys--
			continue
		}
		if ttl, err := w.rdb.PTTL(ctx, iter.Val()).Result(); err == nil && ttl == -1 {
			forever++
		}
	}
	if err := iter.Err(); err != nil {
		return nil, err
	}
	conn, err := pgx.Connect(ctx, w.pg.url())
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	var pgConns, pgBusy float64
	// Not counting this connection, nor PostgreSQL's own processes.
	if err := conn.QueryRow(ctx, "SELECT count(*), count(*) FILTER (WHERE state <> 'idle') FROM pg_stat_activity "+
		"WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()").Scan(&pgConns, &pgBusy); err != nil {
		return nil, err
	}
	return append(out, used/(1<<20), float64(keys), forever, pgConns, pgBusy), nil
}

func rssMB(pid int) (float64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024, err
		}
	}
	return 0, fmt.Errorf("no VmRSS for pid %d", pid)
}

func fdsOf(pid int) (fds, sockets float64, err error) {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, 0, err
	}
	for _, e := range entries {
		fds++
		if target, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && strings.HasPrefix(target, "socket:") {
			sockets++
		}
	}
	return fds, sockets, nil
}

// goMetrics reads the instance's live heap (what the last collection kept: half of the next one's goal,
// at the default GOGC) and its goroutines from its metrics listener. The heap in use swings with every
// collection; what survives one is what would grow.
func goMetrics(ctx context.Context, in *instance) (heap, goroutines float64, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+in.metrics+"/metrics", nil)
	if err != nil {
		return 0, 0, err
	}
	resp, err := probe.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "go_memstats_next_gc_bytes "); ok {
			goal, _ := strconv.ParseFloat(v, 64)
			heap = goal / 2
		}
		if v, ok := strings.CutPrefix(line, "go_goroutines "); ok {
			goroutines, _ = strconv.ParseFloat(v, 64)
		}
	}
	return heap, goroutines, sc.Err()
}

// slope fits a straight line to ys over xs (seconds) and answers its rise an hour and the standard
// error of that rise: a rise smaller than three of its errors is noise (a heap's sawtooth, connections
// coming and going), not growth.
func slope(xs, ys []float64) (perHour, stderr float64) {
	n := float64(len(xs))
	if n < 3 {
		return 0, 0
	}
	var mx, my float64
	for i := range xs {
		mx, my = mx+xs[i], my+ys[i]
	}
	mx, my = mx/n, my/n
	var sxx, sxy float64
	for i := range xs {
		sxx += (xs[i] - mx) * (xs[i] - mx)
		sxy += (xs[i] - mx) * (ys[i] - my)
	}
	if sxx == 0 {
		return 0, 0
	}
	b := sxy / sxx
	var rss float64
	for i := range xs {
		r := ys[i] - (my + b*(xs[i]-mx))
		rss += r * r
	}
	return b * 3600, math.Sqrt(rss/(n-2)/sxx) * 3600
}

// troughs answers the lowest sample of column col in each complete cycle of the given length (seconds)
// after the first skip, with its time. The last cycle, cut short by the end of the run, is left out: its
// few samples may all be taken while a sale runs.
func troughs(rows [][]float64, col int, cycle float64, skip int) (xs, ys []float64) {
	if cycle <= 0 || len(rows) == 0 {
		return nil, nil
	}
	complete := int(math.Floor(rows[len(rows)-1][0]/cycle + 1e-9)) // cycles 0 … complete-1 ended before the last sample
	low := map[int]int{}                                           // cycle → row of its lowest sample
	var order []int
	for j, r := range rows {
		k := int(r[0] / cycle)
		if k < skip || k >= complete {
			continue
		}
		if prev, ok := low[k]; !ok {
			low[k] = j
			order = append(order, k)
		} else if r[col] < rows[prev][col] {
			low[k] = j
		}
	}
	for _, k := range order {
		r := rows[low[k]]
		xs, ys = append(xs, r[0]), append(ys, r[col])
	}
	return xs, ys
}

func (w *world) soakReport(c *config, rows [][]float64, st *soakStats, rate float64, out io.Writer) error {
	if len(rows) < 2 {
		return fmt.Errorf("%d samples: too few to judge", len(rows))
	}
	ms := w.measures()
	dir := filepath.Dir(c.soakOut)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.Create(c.soakOut + ".csv")
	if err != nil {
		return err
	}
	cw := csv.NewWriter(f)
	head := []string{"seconds"}
	for _, m := range ms {
		head = append(head, m.name)
	}
	_ = cw.Write(head)
	for _, r := range rows {
		rec := make([]string, len(r))
		for i, v := range r {
			rec[i] = strconv.FormatFloat(v, 'f', 1, 64)
		}
		_ = cw.Write(rec)
	}
	cw.Flush()
	if err := firstErr(cw.Error(), f.Close()); err != nil {
		return err
	}
	if err := os.WriteFile(c.soakOut+".svg", soakChart(ms, rows), 0o644); err != nil {
		return err
	}

	var b strings.Builder
	elapsed := time.Duration(rows[len(rows)-1][0] * float64(time.Second)).Round(time.Second)
	fmt.Fprintf(&b, "## Soak, %s\n\n%v of steady load on two instances behind a balancer (their own PostgreSQL and Redis): %.0f page views a second "+
		"(half of what this machine answered when measured at the start), a sale of %v every %v (60 shoppers register and log in, buy twice each "+
		"for 30 units; half of the winners pay through the sandbox, the other orders are cancelled when their %v to pay run out), "+
		"and 3 QR logins after each sale. Samples every %v: [%s](%s), charted in [%s](%s).\n\n",
		time.Now().UTC().Format(time.RFC3339), elapsed, rate, soakSaleLasts, c.soakEvery, c.payTimeout, c.soakSample,
		filepath.Base(c.soakOut)+".csv", filepath.Base(c.soakOut)+".csv", filepath.Base(c.soakOut)+".svg", filepath.Base(c.soakOut)+".svg")
	fmt.Fprintf(&b, "Done: %d page views (%d answered 5xx or not at all), %d sales audited, %d buys, %d orders paid, %d left unpaid "+
		"and %d cancelled by the unpaid timeout (waited for after the load stopped), %d QR logins; %d samples could not be read.\n\n",
		st.pages.Load(), st.pageErrors.Load(), st.sales.Load(), st.buys.Load(), st.paid.Load(), st.unpaid.Load(), st.cancelled.Load(),
		st.qrLogins.Load(), st.samplesLost.Load())
	fmt.Fprintf(&b, "A measure grows when a straight line fitted to its troughs (its lowest sample in each complete sale's cycle, after the first %d, "+
		"while the first sales' keys are still kept) rises faster than allowed an hour and by more than three standard errors of the fit; with fewer "+
		"than three such cycles, the fit over the second half is judged so. A measure bounded by design is judged against its bound.\n\n", warmUp(c))
	b.WriteString("| measure | first | last | fit over the second half, an hour (± its standard error) | judged, an hour | allowed an hour | verdict |\n| --- | --- | --- | --- | --- | --- | --- |\n")
	half := len(rows) / 2
	var grew []string
	for i, m := range ms {
		var xs, ys []float64
		for _, r := range rows[half:] {
			xs, ys = append(xs, r[0]), append(ys, r[i+1])
		}
		s, se := slope(xs, ys)
		tx, ty := troughs(rows, i+1, c.soakEvery.Seconds(), warmUp(c))
		judged, judgedSE, how := s, se, "second half"
		if len(tx) >= 3 {
			judged, judgedSE = slope(tx, ty)
			how = fmt.Sprintf("%d troughs", len(tx))
		}
		top := 0.0
		for _, r := range rows {
			top = math.Max(top, r[i+1])
		}
		verdict := "flat"
		switch {
		case m.bound > 0:
			verdict = fmt.Sprintf("bounded by design (at most %.0f; highest %.0f)", m.bound, top)
			if top > m.bound {
				verdict = "**above its bound**"
				grew = append(grew, fmt.Sprintf("%s reached %.0f, above its bound %.0f", m.name, top, m.bound))
			}
		case judged > m.perHour && judged > 3*judgedSE:
			verdict = "**grows**"
			grew = append(grew, fmt.Sprintf("%s %+.1f%s an hour", m.name, judged, m.unit))
		}
		fmt.Fprintf(&b, "| %s | %.1f%s | %.1f%s | %+.1f%s ± %.1f | %+.1f%s (%s) | %.0f%s | %s |\n", m.name, rows[0][i+1], m.unit,
			rows[len(rows)-1][i+1], m.unit, s, m.unit, se, judged, m.unit, how, m.perHour, m.unit, verdict)
	}
	st.mu.Lock()
	failures := st.failures
	st.mu.Unlock()
	if len(failures) > 0 {
		b.WriteString("\nFailures:\n\n")
		for _, f := range failures {
			fmt.Fprintf(&b, "- %s\n", f)
		}
	}
	if err := os.WriteFile(c.soakOut+".md", []byte(b.String()), 0o644); err != nil {
		return err
	}
	fmt.Fprint(out, b.String())
	fmt.Fprintln(out, "wrote", c.soakOut+".md, .csv and .svg")
	switch {
	case len(failures) > 0:
		return fmt.Errorf("%d failures during the soak", len(failures))
	case len(grew) > 0:
		return fmt.Errorf("growing: %s", strings.Join(grew, "; "))
	case st.pageErrors.Load() > st.pages.Load()/1000:
		return fmt.Errorf("%d of %d page views failed", st.pageErrors.Load(), st.pages.Load())
	}
	return nil
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// soakChart draws each measure against time, each scaled to its own range, in a small multiple.
func soakChart(ms []measure, rows [][]float64) []byte {
	const cw, ch, cols = 300, 110, 3
	nrows := (len(ms) + cols - 1) / cols
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">`, cols*cw, nrows*ch)
	b.WriteString(`<rect width="100%" height="100%" fill="#fff"/>`)
	tmax := rows[len(rows)-1][0]
	for i, m := range ms {
		x0, y0 := float64(i%cols*cw)+40, float64(i/cols*ch)+20
		w, h := float64(cw-55), float64(ch-40)
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, r := range rows {
			lo, hi = math.Min(lo, r[i+1]), math.Max(hi, r[i+1])
		}
		if hi-lo < 1e-9 {
			hi = lo + 1
		}
		pad := (hi - lo) * 0.1
		lo, hi = math.Max(lo-pad, 0), hi+pad
		label := m.name
		if m.unit != "" {
			label += " (" + m.unit + ")"
		}
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f">%s</text>`, x0, y0-6, label)
		fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="%.0f" height="%.0f" fill="none" stroke="#d0d7de"/>`, x0, y0, w, h)
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="end">%.4g</text><text x="%.0f" y="%.0f" text-anchor="end">%.4g</text>`, x0-3, y0+8, hi, x0-3, y0+h, lo)
		var pts []string
		for _, r := range rows {
			x := x0 + r[0]/math.Max(tmax, 1)*w
			y := y0 + h - (r[i+1]-lo)/(hi-lo)*h
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="#0969da" stroke-width="1.5" points="%s"/>`, strings.Join(pts, " "))
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="end" fill="#57606a">%.0f min</text>`, x0+w, y0+h+13, tmax/60)
	}
	b.WriteString(`</svg>`)
	return []byte(b.String())
}
