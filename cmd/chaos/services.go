package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"seckill/loadtest"
)

// dieWithUs makes a child process get SIGKILL if this one dies first (killed itself, it cannot stop them).
func dieWithUs() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }

// waitFor polls ok every 50 ms until it holds or within is over.
func waitFor(ctx context.Context, within time.Duration, what string, ok func() bool) error {
	deadline := time.Now().Add(within)
	for !ok() {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not within %v", what, within)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// postgres is a PostgreSQL cluster of the run's own: initdb into the run's directory, its own port, run
// as the postgres user when this runs as root (PostgreSQL refuses root). Its server is a child of this
// process (not detached by pg_ctl), so that it is stopped by its pid and dies with us. Stopping it
// disturbs nothing else on the machine.
type postgres struct {
	bin, data string
	port      int
	asUser    []string            // runuser -u postgres --, when root (for initdb)
	cred      *syscall.Credential // the postgres user's, when root (for the server)
	cmd       *exec.Cmd
	done      chan struct{}
}

func newPostgres(ctx context.Context, dir string) (*postgres, error) {
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(bins) == 0 {
		if p, err := exec.LookPath("initdb"); err == nil {
			bins = []string{p}
		} else {
			return nil, errors.New("PostgreSQL's initdb is not installed (apt-get install -y postgresql; make services does it)")
		}
	}
	// The newest version installed: by the number in its path, not as text (9.6 would sort after 15).
	version := func(p string) int { n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(p)))); return n }
	sort.Slice(bins, func(i, j int) bool { return version(bins[i]) < version(bins[j]) })
	port, err := loadtest.FreePort()
	if err != nil {
		return nil, err
	}
	pg := &postgres{bin: filepath.Dir(bins[len(bins)-1]), data: filepath.Join(dir, "pg"), port: port}
	if err := os.MkdirAll(pg.data, 0o700); err != nil {
		return nil, err
	}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running as root needs the postgres user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		for _, d := range []string{dir, pg.data} {
			if err := os.Chown(d, uid, gid); err != nil {
				return nil, err
			}
		}
		pg.asUser = []string{"runuser", "-u", "postgres", "--"}
		pg.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	argv := append(append([]string{}, pg.asUser...), filepath.Join(pg.bin, "initdb"), "-D", pg.data, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8")
	initdb := exec.CommandContext(ctx, argv[0], argv[1:]...)
	initdb.Dir = "/"
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	return pg, pg.start(ctx)
}

func (pg *postgres) url() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", pg.port)
}

// start starts the server and waits until it accepts connections (crash recovery first, after an
// immediate stop).
func (pg *postgres) start(ctx context.Context) error {
	logf, err := os.OpenFile(filepath.Join(filepath.Dir(pg.data), "postgres.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	pg.cmd = exec.Command(filepath.Join(pg.bin, "postgres"), "-D", pg.data, "-p", strconv.Itoa(pg.port), "-k", pg.data,
		"-c", "listen_addresses=127.0.0.1", "-c", "max_connections=200")
	pg.cmd.Dir = "/"
	pg.cmd.Stdout, pg.cmd.Stderr = logf, logf
	pg.cmd.SysProcAttr = dieWithUs()
	pg.cmd.SysProcAttr.Credential = pg.cred
	if err := pg.cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start PostgreSQL: %w", err)
	}
	pg.done = make(chan struct{})
	go func(c *exec.Cmd, done chan struct{}) { _ = c.Wait(); logf.Close(); close(done) }(pg.cmd, pg.done)
	exited := false
	err = waitFor(ctx, 60*time.Second, "PostgreSQL to accept connections", func() bool {
		select {
		case <-pg.done:
			exited = true
			return true // no use waiting: said below
		default:
		}
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		conn, err := pgx.Connect(cctx, pg.url())
		if err != nil {
			return false
		}
		conn.Close(cctx)
		return true
	})
	if exited {
		return fmt.Errorf("PostgreSQL exited as it started: see %s", filepath.Join(filepath.Dir(pg.data), "postgres.log"))
	}
	return err
}

// stop stops the server: "immediate" quits at once, with no checkpoint, as a crash leaves it (SIGQUIT,
// what pg_ctl -m immediate sends); "fast" shuts it down cleanly (SIGINT).
func (pg *postgres) stop(_ context.Context, mode string) error {
	if pg.cmd == nil || pg.cmd.Process == nil {
		return nil
	}
	sig := syscall.SIGINT
	if mode == "immediate" {
		sig = syscall.SIGQUIT
	}
	_ = pg.cmd.Process.Signal(sig)
	select {
	case <-pg.done:
		return nil
	case <-time.After(60 * time.Second):
		_ = pg.cmd.Process.Kill()
		<-pg.done
		return fmt.Errorf("PostgreSQL did not stop in 60 s: killed")
	}
}

// close stops the server if it runs.
func (pg *postgres) close() {
	if pg.done != nil {
		select {
		case <-pg.done:
			return
		default:
		}
	}
	_ = pg.stop(context.Background(), "immediate")
}

// redisServer is a Redis of the run's own with append-only persistence, started as a child process.
type redisServer struct {
	dir, fsync string
	port       int
	args       []string // more of its settings (a replica's, a sentinel's set)
	cmd        *exec.Cmd
	done       chan struct{}

	mu    sync.Mutex
	sizes []aofSize // the append-only file's size lately, every 50 ms (the last 5 s)
}

type aofSize struct {
	at   time.Time
	file string
	size int64
}

// incrFile answers the append-only file Redis appends to now: the last incremental file its manifest
// names (Redis 7 keeps a base file and incremental ones in appendonlydir).
func (r *redisServer) incrFile() (string, error) {
	dir := filepath.Join(r.dir, "appendonlydir")
	b, err := os.ReadFile(filepath.Join(dir, "appendonly.aof.manifest"))
	if err != nil {
		return "", err
	}
	last := ""
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 6 && f[0] == "file" && f[4] == "type" && f[5] == "i" {
			last = f[1]
		}
	}
	if last == "" {
		return "", errors.New("the manifest names no incremental file")
	}
	return filepath.Join(dir, last), nil
}

// watch samples the append-only file's size until ctx ends.
func (r *redisServer) watch(ctx context.Context) {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			f, err := r.incrFile()
			if err != nil {
				continue
			}
			fi, err := os.Stat(f)
			if err != nil {
				continue
			}
			r.mu.Lock()
			r.sizes = append(r.sizes, aofSize{now, f, fi.Size()})
			if len(r.sizes) > 100 {
				r.sizes = r.sizes[len(r.sizes)-100:]
			}
			r.mu.Unlock()
		}
	}
}

// sizeAt answers the append-only file and its size as last sampled at or before t.
func (r *redisServer) sizeAt(t time.Time) (aofSize, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.sizes) - 1; i >= 0; i-- {
		if !r.sizes[i].at.After(t) {
			return r.sizes[i], true
		}
	}
	return aofSize{}, false
}

func newRedis(ctx context.Context, dir, fsync string) (*redisServer, error) {
	port, err := loadtest.FreePort()
	if err != nil {
		return nil, err
	}
	r := &redisServer{dir: filepath.Join(dir, "redis"), fsync: fsync, port: port}
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		return nil, err
	}
	return r, r.start(ctx)
}

func (r *redisServer) addr() string { return fmt.Sprintf("127.0.0.1:%d", r.port) }

// start starts Redis, which loads its append-only file, and waits until it answers.
func (r *redisServer) start(ctx context.Context) error {
	r.cmd = exec.Command("redis-server", "--port", strconv.Itoa(r.port), "--bind", "127.0.0.1", "--dir", r.dir,
		"--appendonly", "yes", "--appendfsync", r.fsync, "--save", "", "--daemonize", "no",
		"--logfile", filepath.Join(r.dir, "redis.log"), "--lazyfree-lazy-expire", "yes")
	r.cmd.Args = append(r.cmd.Args, r.args...)
	r.cmd.SysProcAttr = dieWithUs()
	if err := r.cmd.Start(); err != nil {
		return fmt.Errorf("start Redis: %w", err)
	}
	r.done = make(chan struct{})
	go func(c *exec.Cmd, done chan struct{}) { _ = c.Wait(); close(done) }(r.cmd, r.done)
	c := redis.NewClient(&redis.Options{Addr: r.addr(), MaxRetries: -1})
	defer c.Close()
	return waitFor(ctx, 60*time.Second, "Redis to load its append-only file", func() bool {
		return c.Ping(ctx).Err() == nil
	})
}

// kill kills Redis with SIGKILL and waits until it is gone.
func (r *redisServer) kill() {
	if r.cmd == nil || r.cmd.Process == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	<-r.done
}

// instance is one seckill server process.
type instance struct {
	name, bin string
	metrics   string // its metrics listener's address
	port      int
	env       []string
	logPath   string
	cmd       *exec.Cmd
	done      chan struct{}
}

func (in *instance) base() string { return fmt.Sprintf("http://127.0.0.1:%d", in.port) }

// start starts the server and waits until it is ready (PostgreSQL and Redis answer it).
func (in *instance) start(ctx context.Context) error {
	logf, err := os.OpenFile(in.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	// The instance's open-file limit is made small (instanceNoFile), so that a flood of a few thousand
	// connections (conn-flood) goes past it: the honest, cheap way to a flood beyond the limit on one
	// machine, whose own processes may hold 20,000 descriptors each.
	in.cmd = exec.Command("/bin/sh", "-c", fmt.Sprintf(`ulimit -n %d && exec "$0" serve`, instanceNoFile), in.bin)
	in.cmd.Env = in.env
	in.cmd.Stdout, in.cmd.Stderr = logf, logf
	in.cmd.SysProcAttr = dieWithUs()
	if err := in.cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start %s: %w", in.name, err)
	}
	in.done = make(chan struct{})
	go func(c *exec.Cmd, done chan struct{}) { _ = c.Wait(); logf.Close(); close(done) }(in.cmd, in.done)
	return waitFor(ctx, 60*time.Second, in.name+" to be ready", in.ready)
}

// instanceNoFile is the instances' open-file limit: the connection cap each derives from it is 3,584.
const instanceNoFile = 4096

var probe = &http.Client{Timeout: 500 * time.Millisecond}

// ready reports whether the instance answers its readiness probe with 200.
func (in *instance) ready() bool {
	resp, err := probe.Get(in.base() + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// kill kills the process with SIGKILL and waits until it is gone.
func (in *instance) kill() {
	if in.cmd == nil || in.cmd.Process == nil {
		return
	}
	_ = in.cmd.Process.Kill()
	<-in.done
}
