package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"seckill/loadtest"
)

// scalperFlags are the scalper scenario's: it starts a server of its own for each variant (the shadow
// line is the server's environment), from -server-bin, on a fresh database and a flushed Redis database.
type scalperFlags struct {
	bin, pg, db, redis, variants, env string
	people, accounts, units, seeds    int
	seed                              uint64
	countdown                         time.Duration
	serverLog                         string
	equipped                          bool
}

func (f *scalperFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.bin, "server-bin", "bin/seckill", "scalper: the seckill binary it starts a server from, for each variant")
	fs.StringVar(&f.pg, "scalper-pg", "postgres://postgres:postgres@127.0.0.1:5432/postgres?sslmode=disable",
		"scalper: the PostgreSQL server on which it makes each variant's server a database anew")
	fs.StringVar(&f.db, "scalper-db", "scalper_", "scalper: the prefix of those databases' names (scalper_none, scalper_both, ...)")
	fs.StringVar(&f.redis, "scalper-redis", "redis://127.0.0.1:6379/5", "scalper: the Redis database its servers use, flushed before each")
	fs.StringVar(&f.variants, "scalper-variants", "all", "scalper: the variants, comma-separated: none, one_per_address, shadow, both (all: every one)")
	fs.StringVar(&f.env, "scalper-env", "", "scalper: more of its servers' environment, comma-separated KEY=value (SHADOW_PREFIX_MIN=30,...)")
	fs.IntVar(&f.people, "scalper-people", 9000, "scalper: people")
	fs.BoolVar(&f.equipped, "scalper-equipped", false, "scalper: a better-equipped scalper (a browser and a delivery address an account, its addresses over 256 /24s, accounts made over the month before)")
	fs.IntVar(&f.accounts, "scalper-accounts", 1000, "scalper: the scalper's accounts")
	fs.IntVar(&f.units, "scalper-units", 500, "scalper: units on sale")
	fs.IntVar(&f.seeds, "scalper-seeds", 1, "scalper: runs a variant, one a seed from -scalper-seed on (medians and worst reported)")
	fs.Uint64Var(&f.seed, "scalper-seed", 1, "scalper: the first run's seed: who is where, and the order of the joins")
	fs.DurationVar(&f.countdown, "scalper-countdown", 0, "scalper: from the first joins to the start (0: long enough for the proofs of work, estimated)")
	fs.StringVar(&f.serverLog, "scalper-server-log", "", "scalper: append its servers' standard error to this file")
}

// run runs the scalper scenario's variants, each on a server of its own.
func (f *scalperFlags) run(ctx context.Context) ([]*loadtest.ScalperSeries, error) {
	variants, err := loadtest.VariantsNamed(f.variants)
	if err != nil {
		return nil, err
	}
	var extra []string
	if f.env != "" {
		extra = strings.Split(f.env, ",")
		for _, kv := range extra {
			if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
				return nil, fmt.Errorf("-scalper-env: %q is not KEY=value", kv)
			}
		}
	}
	if _, err := os.Stat(f.bin); err != nil {
		return nil, fmt.Errorf("-server-bin: %w (go build -o bin/seckill .)", err)
	}
	var logFile *os.File
	if f.serverLog != "" {
		if logFile, err = os.OpenFile(f.serverLog, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644); err != nil {
			return nil, err
		}
		defer logFile.Close()
	}
	o := loadtest.ScalperOptions{People: f.people, Accounts: f.accounts, Units: int64(f.units), Seed: f.seed, Countdown: f.countdown,
		Equipped: f.equipped, Log: os.Stderr}
	return loadtest.RunScalperSeries(ctx, variants, f.seeds, o, func(ctx context.Context, v loadtest.ScalperVariant) (*loadtest.Server, error) {
		dbURL, err := loadtest.FreshDatabase(ctx, f.pg, f.db+v.Name)
		if err != nil {
			return nil, err
		}
		so := loadtest.ServerOptions{Bin: f.bin, DatabaseURL: dbURL, RedisURL: f.redis, Env: append(v.Env(), extra...)}
		if logFile != nil {
			so.Log = logFile
		}
		return loadtest.StartServer(ctx, so)
	})
}

// scalperFailed reports whether a run's audit failed.
func scalperFailed(series []*loadtest.ScalperSeries) error {
	for _, s := range series {
		if !s.OK() {
			return errors.New("an audit of the scalper scenario failed")
		}
	}
	return nil
}
