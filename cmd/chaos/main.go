// Command chaos runs the product on servers of its own (a PostgreSQL cluster made with initdb, a Redis
// with append-only persistence, two instances behind a balancer), drives the load tool's rush and big
// sales through them, strikes one fault at a random moment of each, lets everything recover and audits
// the sale: every 202 queued an order, none twice, no unit beyond the stock, Redis and PostgreSQL agreeing.
// The failover faults (redis-failover, redis-partition) strike a world of its own whose Redis is a master,
// two replicas and three sentinels (sentinel.go), with instances that wait for a replica (-wait-replicas).
//
//	go run ./cmd/chaos -rounds 3 -report docs/chaos.md        # make chaos
//	go run ./cmd/chaos -short                                 # one round of each fault, small sales
//	go run ./cmd/chaos -seed 42 -faults redis-kill            # replay what a seed did
//	go run ./cmd/chaos -faults redis-failover -wait-replicas 0 # the loss without WAIT
//	go run ./cmd/chaos -busy 3 -scale 0.5 -conns 1000         # no fault: failovers of a busy master, WAIT's cost (busy.go)
//
// It stops everything it started, by pid, when it ends or is interrupted.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(1)
	}
}

type config struct {
	rounds       int
	faults       []string
	seed         uint64
	scale        float64
	conns        int
	fsync        string
	cut          time.Duration
	report       string
	keep         bool
	bin          string
	waitReplicas int // the instances' REDIS_WAIT_REPLICAS in the failover faults' world
	scenarioAt   func(round, fault int) string

	soak       time.Duration // a soak instead of faults: how long
	soakRate   float64       // page views a second (0: half of what the machine answers, measured first)
	soakEvery  time.Duration // a sale this often
	soakSample time.Duration
	soakOut    string        // the report's path without its extension (.md, .csv, .svg)
	payTimeout time.Duration // PAY_TIMEOUT of the instances
	saleKeep   time.Duration // SALE_KEEP of the instances

	busy          int           // instead of faults, this many rounds of busy.go's run in the Sentinel world
	busyDownAfter time.Duration // the sentinels' down-after-milliseconds in it
}

func parse(args []string, stderr io.Writer) (*config, error) {
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := &config{}
	fs.IntVar(&c.rounds, "rounds", 3, "rounds: each strikes every fault once, in an order the seed draws")
	faults := fs.String("faults", strings.Join(faultNames(), ","), "the faults, comma-separated")
	fs.Uint64Var(&c.seed, "seed", 0, "the seed of the faults' order, moments and targets (0: from the clock); a run prints it")
	fs.Float64Var(&c.scale, "scale", 0.02, "the load tool's scenarios times this (rush: 20,000 shoppers × scale, 5 buys each, 100 units; big: 10,000 × scale, as many units)")
	fs.IntVar(&c.conns, "conns", 200, "connections of the load tool")
	fs.StringVar(&c.fsync, "appendfsync", "always", "Redis's appendfsync: always (as docker-compose.yml runs it) or everysec")
	fs.DurationVar(&c.cut, "cut", 10*time.Second, "how long a network cut lasts")
	fs.StringVar(&c.report, "report", "", "write the Markdown report here")
	fs.BoolVar(&c.keep, "keep", false, "keep the run's directory (servers' data and logs)")
	fs.IntVar(&c.waitReplicas, "wait-replicas", 1, "the instances' REDIS_WAIT_REPLICAS in the world of redis-failover and redis-partition (0: no WAIT, to measure the loss without it)")
	fs.StringVar(&c.bin, "bin", "", "the seckill binary (default: built from this tree)")
	fs.IntVar(&c.busy, "busy", 0, "instead of faults, this many rounds of the big sale with and without WAIT and the rush, in the Sentinel world: counts failovers of a busy master (busy.go)")
	fs.DurationVar(&c.busyDownAfter, "busy-down-after", 3*time.Second, "the sentinels' down-after-milliseconds in the busy run (docker-compose.yml's 3000 by default)")
	short := fs.Bool("short", false, "one round of every fault with small sales (make test runs it)")
	fs.DurationVar(&c.soak, "soak", 0, "instead of faults, a soak of steady mixed load this long (make soak)")
	fs.Float64Var(&c.soakRate, "soak-rate", 0, "the soak's page views a second (0: half of what this machine answers, measured first)")
	fs.DurationVar(&c.soakEvery, "soak-every", 2*time.Minute, "the soak starts a sale this often")
	fs.DurationVar(&c.soakSample, "soak-sample", 10*time.Second, "the soak samples this often")
	fs.StringVar(&c.soakOut, "soak-out", "docs/soak", "the soak's report, samples and chart: this path with .md, .csv and .svg")
	fs.DurationVar(&c.saleKeep, "sale-keep", 0, "the instances' SALE_KEEP (default: 1m in a soak, so that the keys of its sales leave within it; else a day)")
	fs.DurationVar(&c.payTimeout, "pay-timeout", 0, "the instances' PAY_TIMEOUT (default: 1m in a soak, whose unpaid orders are cancelled after it; else 15m)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if *short {
		c.rounds, c.scale, c.cut = 1, 0.01, 4*time.Second
	}
	if c.payTimeout == 0 {
		c.payTimeout = 15 * time.Minute
		if c.soak > 0 {
			c.payTimeout = time.Minute
		}
	}
	if c.saleKeep == 0 {
		c.saleKeep = 24 * time.Hour
		if c.soak > 0 {
			c.saleKeep = time.Minute
		}
	}
	if c.seed == 0 {
		c.seed = uint64(time.Now().UnixNano())
	}
	for _, f := range strings.Split(*faults, ",") {
		if _, ok := faultsByName[f]; !ok {
			return nil, fmt.Errorf("unknown fault %q (have %s; and, only when named, %s)", f, strings.Join(faultNames(), ", "), strings.Join(lossyFaults, ", "))
		}
		c.faults = append(c.faults, f)
	}
	if c.rounds < 1 || c.scale <= 0 || c.conns < 1 {
		return nil, fmt.Errorf("-rounds, -scale and -conns must be positive")
	}
	if c.fsync != "always" && c.fsync != "everysec" {
		return nil, fmt.Errorf("-appendfsync must be always or everysec")
	}
	// Each fault meets both scenarios over the rounds: rush (a crowd for a few units) and big (as many
	// units as shoppers: orders written while the fault strikes).
	c.scenarioAt = func(round, fault int) string { return []string{"rush", "big"}[(round+fault)%2] }
	return c, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parse(args, stderr)
	if err != nil {
		return err
	}
	if c.soak == 0 {
		fmt.Fprintf(stdout, "chaos: seed %d (replay: -seed %d -rounds %d -faults %s -scale %g)\n", c.seed, c.seed, c.rounds,
			strings.Join(c.faults, ","), c.scale)
	}
	// A world for the faults of one Redis, another (Sentinel's) for the failover faults, each started
	// when a round first needs it.
	worlds := map[bool]*world{}
	defer func() {
		for _, w := range worlds {
			w.close() // whatever it started, however far it got
		}
	}()
	worldFor := func(sentinels bool) (*world, error) {
		if w := worlds[sentinels]; w != nil {
			return w, nil
		}
		w, err := setUp(ctx, c, stderr, sentinels)
		if w != nil {
			worlds[sentinels] = w
			if c.bin == "" {
				c.bin = w.bin // built once
			}
		}
		return w, err
	}
	if c.soak > 0 {
		w, err := worldFor(false)
		if err != nil {
			return err
		}
		return w.soak(ctx, c, stdout)
	}
	if c.busy > 0 {
		w, err := worldFor(true)
		if err != nil {
			return err
		}
		return w.busy(ctx, c, stdout)
	}
	rng := rand.New(rand.NewPCG(c.seed, 0x5ec6111))
	var rounds []*round
	for r := range c.rounds {
		for k, i := range rng.Perm(len(c.faults)) {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			rd := &round{n: r + 1, fault: c.faults[i], scenario: c.scenarioAt(r, k), at: 0.1 + 0.8*rng.Float64(), rng: rand.New(rand.NewPCG(rng.Uint64(), 1))}
			w, err := worldFor(faultsByName[rd.fault].sentinels)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "round %d: %s with %s at %.0f%% of the buys\n", rd.n, rd.scenario, rd.fault, rd.at*100)
			w.play(ctx, c, rd)
			fmt.Fprintln(stdout, "  "+rd.summary())
			rounds = append(rounds, rd)
		}
	}
	md := report(c, rounds)
	if c.report != "" {
		if err := os.WriteFile(c.report, []byte(md), 0o644); err != nil {
			return err
		}
		fmt.Fprintln(stdout, "wrote", c.report)
	}
	failed := 0
	for _, rd := range rounds {
		if !rd.ok() {
			failed++
		}
	}
	fmt.Fprint(stdout, table(rounds))
	if failed > 0 {
		return fmt.Errorf("%d of %d rounds failed (replay: -seed %d)", failed, len(rounds), c.seed)
	}
	return nil
}
