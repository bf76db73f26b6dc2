// Command loadtest runs flash sales against a running seckill server over HTTP, measures them against
// baseline handlers in the same run, audits every sale, and writes a report.
//
//	loadtest -base http://127.0.0.1:8080 -redis redis://127.0.0.1:6379/0 \
//	    -admin admin:pass -merchant merchant:pass -scenario rush,big,soldout,pages -report perf.md
//
// The crowds (queue, crowd) measure what a shopper costs the instances, from their own /metrics, with
// accounts made beforehand; a hundred thousand shoppers shop from a few processes:
//
//	loadtest ... -scenario queue,crowd -shoppers 100000 -procs 4 -db postgres://... -seed \
//	    -metrics http://127.0.0.1:9181/metrics,http://127.0.0.1:9182/metrics -report perf.md
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"seckill/loadtest"
)

func main() {
	// Go's HTTP client logs each connection the server answered before the request was sent (the
	// server's 503 at accept): the load tool counts those as the pages' reloads instead.
	log.SetOutput(quiet{os.Stderr})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:])
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		os.Exit(1)
	}
}

// quiet drops the standard logger's lines about unsolicited responses.
type quiet struct{ w io.Writer }

func (q quiet) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte("Unsolicited response received on idle HTTP channel")) {
		return len(p), nil
	}
	return q.w.Write(p)
}

type scale struct{ users, requests, conns int }

// The scenarios' sizes, as the issue names them; -scale shrinks them all for a quick run.
var sizes = map[string]struct {
	scale
	stock int64
}{
	"rush":    {scale{20_000, 100_000, 1000}, 100},
	"big":     {scale{10_000, 10_000, 1000}, 10_000},
	"soldout": {scale{1_000, 100_000, 1000}, 1},
	"pages":   {scale{0, 50_000, 1000}, 0},
	"poll":    {scale{2_000, 100_000, 1000}, 1}, // status polls of shoppers waiting in a queue sale's line, and its public document
	"crowd":   {scale{10_000, 0, 1000}, 500},    // first come: half of the shoppers arrive after the start
	"queue":   {scale{10_000, 0, 1000}, 500},    // the same crowd through the waiting room
}

func run(ctx context.Context, args []string) error {
	if len(args) > 0 && args[0] == "flood" {
		return flood(ctx, args[1:])
	}
	if len(args) > 0 && args[0] == "compare" {
		return compare(args[1:])
	}
	if len(args) > 0 && args[0] == "shoppers" {
		return shoppers(ctx, args[1:])
	}
	if len(args) > 0 && args[0] == "baseline-serve" {
		return baselineServe(args[1:])
	}
	fs := flag.NewFlagSet("loadtest", flag.ContinueOnError)
	base := fs.String("base", "http://127.0.0.1:8080", "the server's address")
	redisURL := fs.String("redis", "redis://127.0.0.1:6379/0", "the server's Redis (captcha answers, and the one-EVALSHA baseline): redis://host:port/db, or host:port,host:port,... of a cluster")
	admin := fs.String("admin", "", "an admin's username:password")
	merchant := fs.String("merchant", "", "a merchant's username:password")
	scenarios := fs.String("scenario", "rush", "comma-separated: rush, big, soldout, pages, poll, crowd, queue, scalper; name:N splits the item's stock over N shards (big:4); scalper starts servers of its own (-server-bin, -scalper-*)")
	countdown := fs.Duration("countdown", 15*time.Second, "crowd and queue: how long before the start the sale is set up (half the shoppers arrive over it)")
	dbURL := fs.String("db", "", "crowd and queue: the server's PostgreSQL, to count its transactions a second during the crowd")
	scaleBy := fs.Float64("scale", 1, "multiply users and requests by this (0.1 for a quick run)")
	conns := fs.Int("conns", 0, "connections (default per scenario: 1000)")
	shards := fs.Int("shards", 1, "stock shards of the rush and big scenarios' item (soldout and pages use one)")
	cpu := fs.String("cpu", "", "processes whose CPU time to measure while firing, as name=pid,pid;name=pid (for example app=123,456;redis=789)")
	sources := fs.Int("sources", 1, "loopback addresses to connect from (127.0.1.1, ...): a proxy that limits each address sees that many clients")
	report := fs.String("report", "", "write the Markdown report here (charts beside it)")
	jsonOut := fs.String("json", "", "write the scenarios' headline figures here, for `loadtest compare`")
	withBaseline := fs.Bool("baseline", true, "measure each scenario's baseline handler in the same run")
	ownConns := fs.Bool("own-conns", false, "crowd and queue: each shopper's page keeps a keep-alive connection of its own and sends a request again after its connection was turned away or lost, as a browser does (-conns is then the setup's pool)")
	nprocs := fs.Int("procs", 1, "crowd and queue: the shoppers shop from this many child processes of the load tool (one process holds at most its open-file limit of connections); this one sets the sale up and audits it")
	nshoppers := fs.Int("shoppers", 0, "crowd and queue: this many shoppers, for a twentieth as many units (default: 10,000 times -scale)")
	queueRules := fs.String("queue-rules", "", "queue: the sale's rules, comma-separated: one_per_address (each shopper gets a delivery address of its own beforehand: needs -seed -db), accounts_before_approval; empty for none")
	metrics := fs.String("metrics", "", "crowd and queue: the instances' /metrics addresses, comma-separated: what reached them a shopper, and their database statements, from their own counters")
	var sf scalperFlags
	sf.register(fs)
	seed := fs.Bool("seed", false, "every scenario: make the shoppers' accounts beforehand in bulk in -db's database (one precomputed password hash), then log each in, instead of registering them through the API (a captcha and a proof of work each, which the run does not measure)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	creds := func(s, what string) (loadtest.User, error) {
		name, pass, ok := strings.Cut(s, ":")
		if !ok || name == "" || pass == "" {
			return loadtest.User{}, fmt.Errorf("-%s must be username:password", what)
		}
		return loadtest.User{Name: name, Password: pass}, nil
	}
	// The scalper scenario starts servers of its own, with their own staff: alone, it needs none given.
	var adm, mer loadtest.User
	var err error
	if *scenarios != "scalper" {
		if adm, err = creds(*admin, "admin"); err != nil {
			return err
		}
		if mer, err = creds(*merchant, "merchant"); err != nil {
			return err
		}
	}
	procs, err := loadtest.ParseProcesses(*cpu)
	if err != nil {
		return err
	}
	rdb, err := openRedis(*redisURL)
	if err != nil {
		return err
	}
	defer rdb.Close()

	var transactions func(context.Context) (int64, error)
	var seeder func(context.Context, string, int) ([]*loadtest.User, error)
	var addresses func(context.Context, []*loadtest.User) ([]int64, error)
	if *dbURL != "" {
		pool, err := pgxpool.New(ctx, *dbURL)
		if err != nil {
			return fmt.Errorf("-db: %w", err)
		}
		defer pool.Close()
		transactions = func(ctx context.Context) (int64, error) {
			var n int64
			err := pool.QueryRow(ctx, "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()").Scan(&n)
			return n, err
		}
		seeder = func(ctx context.Context, prefix string, n int) ([]*loadtest.User, error) {
			return loadtest.SeedUsers(ctx, pool, prefix, n)
		}
		addresses = func(ctx context.Context, users []*loadtest.User) ([]int64, error) {
			return loadtest.SeedOwnAddresses(ctx, pool, users)
		}
	} else if *seed {
		return errors.New("-seed makes the accounts in -db's database: give -db")
	}
	var metricsURLs []string
	if *metrics != "" {
		metricsURLs = strings.Split(*metrics, ",")
	}

	var reports []*loadtest.Report
	var scalper []*loadtest.ScalperSeries
	for _, name := range strings.Split(*scenarios, ",") {
		if name == "scalper" {
			if scalper, err = sf.run(ctx); err != nil {
				return fmt.Errorf("scalper: %w", err)
			}
			continue
		}
		// name:N runs the scenario with its item's stock split over N shards (big:4).
		itemShards := *shards
		if n, k, found := strings.Cut(name, ":"); found {
			if v, err := strconv.Atoi(k); err == nil && v >= 1 {
				name, itemShards = n, v
			}
		}
		size, ok := sizes[name]
		if !ok {
			return fmt.Errorf("unknown scenario %q", name)
		}
		if name != "rush" && name != "big" && name != "crowd" && name != "queue" {
			itemShards = 1 // soldout's one unit and pages' views take no stock from shards
		}
		o := loadtest.Options{Admin: adm, Merchant: mer, Users: int(float64(size.users) * *scaleBy), Requests: int(float64(size.requests) * *scaleBy),
			Conns: size.conns, Stock: size.stock, Shards: itemShards, CPU: procs, Log: os.Stderr}
		if name == "big" {
			o.Stock = int64(o.Users)
		}
		if name == "crowd" || name == "queue" { // the crowd keeps its proportion of shoppers to units
			o.Stock = max(int64(float64(size.stock)**scaleBy), 1)
			if *nshoppers > 0 {
				o.Users, o.Stock = *nshoppers, max(int64(*nshoppers)*size.stock/int64(size.users), 1)
			}
			o.Metrics = metricsURLs
		}
		if *seed {
			o.Seed = seeder
		}
		if name == "queue" {
			for _, r := range strings.Split(*queueRules, ",") {
				switch strings.TrimSpace(r) {
				case "":
				case "one_per_address":
					o.Rules.OnePerAddress, o.Addresses = true, addresses
				case "accounts_before_approval":
					o.Rules.AccountsBeforeApproval = true
				default:
					return fmt.Errorf("-queue-rules: unknown rule %q", r)
				}
			}
		}
		if *conns > 0 {
			o.Conns = *conns
		}
		client := loadtest.NewClient(*base, o.Conns)
		client.Sources(*sources)
		if name == "crowd" || name == "queue" {
			// The proofs of work are solved a core at a time, in the order the shoppers asked, as each
			// person's own device would: ten thousand solves at once on shared cores finish none in time.
			client.SolveOn(runtime.NumCPU())
			if *nprocs > 1 {
				o.Shop, o.Procs = spawnShoppers(*nprocs, *base, *redisURL, *sources, max(o.Conns / *nprocs, 64), *ownConns), *nprocs
			} else if *ownConns {
				client.OwnConnections()
			}
		}
		var rep *loadtest.Report
		switch name {
		case "rush", "big":
			rep, err = client.Buying(ctx, rdb, name, o)
		case "soldout":
			rep, err = client.SoldOut(ctx, rdb, o)
		case "pages":
			rep, err = client.Pages(ctx, o)
		case "poll":
			rep, err = client.Poll(ctx, rdb, o)
		case "crowd", "queue":
			mode := map[string]string{"crowd": "first_come", "queue": "queue"}[name]
			rep, err = client.Crowd(ctx, rdb, mode, *countdown, o, transactions)
		}
		client.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		// The baseline, by the same tool, in the same run, with as many requests and connections.
		if *withBaseline && rep.Crowd == nil { // a crowd is measured by what its shoppers wait for, not against a handler
			b, err := baseline(ctx, baselineOf(name), *redisURL, procs, rep.Result.Requests, o.Conns)
			if err != nil {
				return fmt.Errorf("%s baseline: %w", name, err)
			}
			rep.Baseline, rep.BaselineRS, rep.BaselineRequests, rep.BaselineCPU = b.name, b.rate, b.requests, b.cpu
		}
		reports = append(reports, rep)
		fmt.Fprint(os.Stderr, loadtest.Terminal([]*loadtest.Report{rep}))
	}
	fmt.Print(loadtest.Terminal(reports))
	for _, s := range scalper {
		for _, r := range s.Runs {
			fmt.Printf("scalper  %s seed %d: %s\n", s.Variant.Name, r.Options.Seed, r.Line())
		}
	}
	if *report != "" {
		charts := map[string]string{}
		for _, r := range reports {
			if r.Crowd != nil {
				continue // no per-second chart: its shoppers' waits are in the report
			}
			f := strings.TrimSuffix(filepath.Base(*report), filepath.Ext(*report)) + "-" + r.Scenario + ".svg"
			if err := os.WriteFile(filepath.Join(filepath.Dir(*report), f), loadtest.ChartSVG(r), 0o644); err != nil {
				return err
			}
			charts[r.Scenario] = f
		}
		md := fmt.Sprintf("## Load tool run, %s\n\nMachine: %d cores, %s/%s, Go %s. Server at %s.\n\n### CPU a request\n\n%s\n### Goals\n\n%s\n%s",
			time.Now().UTC().Format(time.RFC3339), runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version(), *base,
			loadtest.Headline(reports), loadtest.Goals(reports), loadtest.Markdown(reports, charts))
		if len(scalper) > 0 {
			md += "### scalper\n\n" + loadtest.ScalperMarkdown(scalper)
		}
		if err := os.WriteFile(*report, []byte(md), 0o644); err != nil {
			return err
		}
	}
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(loadtest.FiguresOf(reports), "", "  ")
		if err := os.WriteFile(*jsonOut, b, 0o644); err != nil {
			return err
		}
	}
	for _, r := range reports {
		if r.Audit != nil && !r.Audit.OK() {
			return errors.New("an audit failed")
		}
	}
	return scalperFailed(scalper)
}

// compare prints runs' figures side by side: loadtest compare -labels "one,two" one.json two.json; an
// argument that names several files (a.json,b.json,c.json) stands for their medians.
func compare(args []string) error {
	fs := flag.NewFlagSet("loadtest compare", flag.ContinueOnError)
	labels := fs.String("labels", "", "comma-separated names of the runs, in the order of the files")
	if err := fs.Parse(args); err != nil {
		return err
	}
	names := strings.Split(*labels, ",")
	if fs.NArg() == 0 || len(names) != fs.NArg() {
		return errors.New("compare: give -labels with one name per file, then the files -json wrote")
	}
	runs := make([][]loadtest.Figures, fs.NArg())
	for i, arg := range fs.Args() {
		var rounds [][]loadtest.Figures
		for _, f := range strings.Split(arg, ",") {
			b, err := os.ReadFile(f)
			if err != nil {
				return err
			}
			var figs []loadtest.Figures
			if err := json.Unmarshal(b, &figs); err != nil {
				return fmt.Errorf("%s: %w", f, err)
			}
			rounds = append(rounds, figs)
		}
		runs[i] = loadtest.Median(rounds)
	}
	fmt.Print(loadtest.SideBySide(names, runs))
	return nil
}

func baselineOf(scenario string) string {
	switch scenario {
	case "rush", "big":
		return "evalsha"
	case "pages":
		return "bare-page"
	case "poll":
		return "bare-json"
	}
	return "bare"
}

// baselines name the baseline handlers, for the report.
var baselines = map[string]string{"bare": "a bare Fiber handler", "evalsha": "a Fiber handler with one EVALSHA", "bare-page": "a bare Fiber page handler",
	"bare-json": "a bare Fiber JSON handler"}

// baselineRun is what a baseline's load measured: its requests a second, and the CPU its own process
// ("baseline") and Redis ("redis", when -cpu names it) used meanwhile.
type baselineRun struct {
	name     string
	rate     float64
	requests int
	cpu      []loadtest.CPUUse
}

// baseline starts a baseline Fiber handler in a process of its own (`loadtest baseline-serve`) and fires
// n requests at it over conns connections, measuring that process's CPU and Redis's meanwhile, as the
// scenario's were measured on the app: in the load tool's own process the handler's CPU could not be
// told from the tool's.
func baseline(ctx context.Context, kind, redisURL string, procs []loadtest.Process, n, conns int) (baselineRun, error) {
	out := baselineRun{name: baselines[kind], requests: n}
	if out.name == "" {
		return out, fmt.Errorf("unknown baseline %q", kind)
	}
	self, err := os.Executable()
	if err != nil {
		return out, err
	}
	cmd := exec.CommandContext(ctx, self, "baseline-serve", "-kind", kind, "-listen", "127.0.0.1:0", "-redis", redisURL)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return out, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return out, err
	}
	if err := cmd.Start(); err != nil {
		return out, err
	}
	defer func() { // closing its standard input ends it; a kill if it does not
		stdin.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		return out, fmt.Errorf("baseline-serve said no address: %w", err)
	}
	addr := strings.TrimSpace(line)
	method, want := "POST", "202"
	if kind == "bare-page" || kind == "bare-json" {
		method, want = "GET", "200"
	}
	reqs := make([]loadtest.Request, n)
	for i := range reqs {
		reqs[i] = loadtest.Request{Method: method, Path: "/b"}
	}
	client := loadtest.NewClient("http://"+addr, conns)
	defer client.Close()
	measured := append([]loadtest.Process{{Name: "baseline", PIDs: []int{cmd.Process.Pid}}}, loadtest.Named(procs, "redis")...)
	var res *loadtest.Result
	out.cpu = loadtest.MeasureCPU(measured, func() { res = client.Fire(ctx, reqs, conns, nil) })
	if res.Kinds[want] != n { // a baseline that failed would flatter the app
		return out, fmt.Errorf("%d of %d requests answered %s (%v, %d without an answer)", res.Kinds[want], n, want, res.Kinds, res.Errors)
	}
	out.rate = res.Throughput()
	return out, nil
}

// statusBody is a waiting shopper's status poll's answer, as app's BenchmarkBaselineBareJSON has it.
var statusBody = []byte(`{"state":"waiting","ticket":"0123456789abcdef0123456789abcdef","position":1234,"ahead":1000,"stock_left":312,` +
	`"wait_seconds":20,"path":null,"turn_ends_at":null,"queue_opens_at":"2026-11-23T09:50:00Z","starts_at":"2026-11-23T10:00:00Z",` +
	`"seed_hash":"9b1e0123456789abcdef0123456789abcdef0123456789abcdef0123456789ab","server_time":"2026-11-23T10:00:05Z"}`)

// baselineServe serves a baseline handler until its standard input closes (or it is killed): loadtest
// baseline-serve -kind bare|evalsha|bare-page|bare-json -listen 127.0.0.1:0 -redis URL. It prints the
// address it listens on, on a line of its own. "bare" answers the buy's 202 body, "evalsha" first makes
// one EVALSHA round trip on the same Redis as the app's, "bare-page" answers a small fixed HTML page,
// "bare-json" a fixed JSON body of a status poll's size (about 350 bytes); each at /b.
func baselineServe(args []string) error {
	fs := flag.NewFlagSet("loadtest baseline-serve", flag.ContinueOnError)
	kind := fs.String("kind", "bare", "bare, evalsha, bare-page or bare-json")
	listen := fs.String("listen", "127.0.0.1:0", "the address to listen on (port 0: any free one)")
	redisURL := fs.String("redis", "redis://127.0.0.1:6379/0", "evalsha: the Redis to run the script on")
	if err := fs.Parse(args); err != nil {
		return err
	}
	f := fiber.New(fiber.Config{DisableStartupMessage: true})
	switch *kind {
	case "bare":
		f.Post("/b", func(c *fiber.Ctx) error { return c.Status(202).JSON(fiber.Map{"status": "queued"}) })
	case "evalsha":
		rdb, err := openRedis(*redisURL)
		if err != nil {
			return err
		}
		defer rdb.Close()
		defer rdb.Del(context.Background(), "loadtest:{baseline}")
		script := redis.NewScript(`return redis.call('HINCRBY', KEYS[1], 'n', 1)`)
		f.Post("/b", func(c *fiber.Ctx) error {
			if err := script.Run(c.UserContext(), rdb, []string{"loadtest:{baseline}"}).Err(); err != nil {
				return err
			}
			return c.Status(202).JSON(fiber.Map{"status": "queued"})
		})
	case "bare-page":
		page := []byte("<!doctype html><title>item</title><p>an item page</p>")
		f.Get("/b", func(c *fiber.Ctx) error { c.Set("Content-Type", "text/html; charset=utf-8"); return c.Send(page) })
	case "bare-json":
		f.Get("/b", func(c *fiber.Ctx) error {
			c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
			return c.Send(statusBody)
		})
	default:
		return fmt.Errorf("-kind must be bare, evalsha, bare-page or bare-json, got %q", *kind)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	served := make(chan error, 1)
	go func() { served <- f.Listener(ln) }()
	fmt.Println(ln.Addr().String())
	stdinClosed := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); close(stdinClosed) }()
	select {
	case <-stdinClosed:
	case err := <-served:
		return err
	}
	return f.Shutdown()
}

// flood holds a connection flood against a server on this machine: loadtest flood -target
// 127.0.0.1:8080 -conns 6000 -sources 30 -trickle 5s -for 20s -health http://127.0.0.1:9090/healthz
func flood(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("loadtest flood", flag.ContinueOnError)
	target := fs.String("target", "127.0.0.1:8080", "the server's host:port, on loopback")
	conns := fs.Int("conns", 6000, "connections held at once, at most (this process's open-file limit bounds it)")
	sources := fs.Int("sources", 30, "source addresses, 127.0.2.1 and on")
	trickleEvery := fs.Duration("trickle", 5*time.Second, "a header line this often on each connection")
	dur := fs.Duration("for", 20*time.Second, "how long the flood lasts")
	health := fs.String("health", "", "comma-separated /healthz URLs to ask every 100 ms during the flood")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if host, _, err := net.SplitHostPort(*target); err != nil || !net.ParseIP(host).IsLoopback() {
		return fmt.Errorf("-target must be a loopback host:port, got %q", *target)
	}
	o := loadtest.FloodOptions{Target: *target, Conns: *conns, Sources: *sources, Trickle: *trickleEvery, For: *dur}
	if *health != "" {
		o.Health = strings.Split(*health, ",")
	}
	fmt.Println(loadtest.Flood(ctx, o))
	return nil
}

// spawnShoppers answers a loadtest.Options.Shop that runs a crowd's shoppers from n child processes of
// this program (`loadtest shoppers`), each given the plan in a file, a shard of it and a pool of conns
// keep-alive connections, and merges what they send back.
func spawnShoppers(n int, base, redisURL string, sources, conns int, own bool) func(context.Context, *loadtest.CrowdPlan) (loadtest.ShopReport, error) {
	return func(ctx context.Context, plan *loadtest.CrowdPlan) (loadtest.ShopReport, error) {
		var all loadtest.ShopReport
		self, err := os.Executable()
		if err != nil {
			return all, err
		}
		f, err := os.CreateTemp("", "loadtest-plan-*.json")
		if err != nil {
			return all, err
		}
		defer os.Remove(f.Name())
		err = json.NewEncoder(f).Encode(plan)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return all, err
		}
		type answer struct {
			out loadtest.ShopReport
			err error
		}
		answers := make(chan answer, n)
		for i := range n {
			go func() {
				cmd := exec.CommandContext(ctx, self, "shoppers", "-plan", f.Name(), "-shard", fmt.Sprintf("%d/%d", i, n),
					"-base", base, "-redis", redisURL, "-sources", strconv.Itoa(sources), "-conns", strconv.Itoa(conns),
					"-own-conns="+strconv.FormatBool(own))
				cmd.Stderr = os.Stderr
				b, err := cmd.Output()
				var out loadtest.ShopReport
				if err == nil {
					err = json.Unmarshal(b, &out)
				}
				if err != nil {
					err = fmt.Errorf("shard %d/%d: %w", i, n, err)
				}
				answers <- answer{out, err}
			}()
		}
		var errs []error
		for range n {
			a := <-answers
			errs = append(errs, a.err)
			all.Outcomes = append(all.Outcomes, a.out.Outcomes...)
			all.Reloads.Refused += a.out.Reloads.Refused
			all.Reloads.Lost += a.out.Reloads.Lost
			all.Fetched += a.out.Fetched
			all.CPU += a.out.CPU
			all.Line = all.Line.Merge(a.out.Line)
		}
		return all, errors.Join(errs...)
	}
}

// shoppers runs a shard of a crowd's shoppers from a plan another loadtest process wrote, and writes
// what they saw as JSON on its standard output: loadtest shoppers -plan f -shard 1/3 -base ... -redis ...
func shoppers(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("loadtest shoppers", flag.ContinueOnError)
	planFile := fs.String("plan", "", "the crowd's plan, as the coordinating process wrote it")
	shardOf := fs.String("shard", "0/1", "i/n: shop for shoppers i, i+n, i+2n, ...")
	base := fs.String("base", "http://127.0.0.1:8080", "the server's address")
	redisURL := fs.String("redis", "redis://127.0.0.1:6379/0", "the server's Redis (captcha answers)")
	sources := fs.Int("sources", 1, "loopback addresses to connect from")
	conns := fs.Int("conns", 256, "keep-alive connections the shard's shoppers share (without -own-conns)")
	own := fs.Bool("own-conns", true, "each shopper's page keeps a connection of its own (see loadtest -help)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var i, n int
	if _, err := fmt.Sscanf(*shardOf, "%d/%d", &i, &n); err != nil || n < 1 || i < 0 || i >= n {
		return fmt.Errorf("-shard must be i/n with 0 <= i < n, got %q", *shardOf)
	}
	b, err := os.ReadFile(*planFile)
	if err != nil {
		return err
	}
	var plan loadtest.CrowdPlan
	if err := json.Unmarshal(b, &plan); err != nil {
		return fmt.Errorf("%s: %w", *planFile, err)
	}
	rdb, err := openRedis(*redisURL)
	if err != nil {
		return err
	}
	defer rdb.Close()
	client := loadtest.NewClient(*base, *conns)
	client.Sources(*sources)
	if *own {
		client.OwnConnections()
	}
	defer client.Close()
	outs, reloads := client.Shop(ctx, rdb, &plan, i, n)
	answered := 0
	for _, o := range outs {
		if o.Final != "" {
			answered++
		}
	}
	fmt.Fprintf(os.Stderr, "shoppers %d/%d: %d of %d with a final answer; public documents fetched %d times; pages reloaded %d (turned away) + %d (lost)\n",
		i, n, answered, len(outs), client.Fetched(), reloads.Refused, reloads.Lost)
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	return json.NewEncoder(os.Stdout).Encode(loadtest.ShopReport{Outcomes: outs, Reloads: reloads, Fetched: client.Fetched(),
		Line: client.LineTimeline(plan.Sale.ItemID), CPU: cpu})
}

// openRedis opens the shop's Redis: a URL, or comma-separated addresses of a Redis Cluster.
func openRedis(url string) (redis.UniversalClient, error) {
	if strings.Contains(url, ",") {
		return redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(url, ",")}), nil
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("-redis: %w", err)
	}
	return redis.NewClient(opt), nil
}
