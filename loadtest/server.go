package loadtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
)

// A server of the load tool's own: a scenario whose runs need the server's environment set apart (the
// scalper's, with and without the shadow line) starts one for each, on a fresh database, a flushed Redis
// database and a free port, from the seckill binary, as make bench starts its own.

// ServerOptions start a server of the load tool's own.
type ServerOptions struct {
	Bin         string    // the seckill binary
	DatabaseURL string    // its PostgreSQL database, empty (FreshDatabase makes one)
	RedisURL    string    // its Redis database, redis://host:port/db: flushed before it starts
	Env         []string  // its environment beyond the defaults below (KEY=value), which they override
	Log         io.Writer // its standard error (nil: dropped)
}

// serverDefaults are a server's environment before ServerOptions.Env: fast password hashes, the
// per-address request limits off (the scenario's addresses are what it measures, not what they are
// limited to), the proof of work at its floor outside demo mode (the price the scenario's runs can pay
// on two shared cores; the load tool reports what it paid), and the payment sandbox.
var serverDefaults = []string{"SESSION_SECRET=loadtest-only-secret-loadtest-only-secret", "BCRYPT_COST=4", "RATE_LIMIT_IP=off",
	"MAX_CONNS_PER_ADDR=0", "LOG_LEVEL=warn", "METRICS_LISTEN=off", "PAY_SANDBOX=on", "PAY_SANDBOX_ANYONE_CAN_PAY=yes",
	"POW_MAXNUMBER=100000", "LISTEN_HOST=127.0.0.1"}

// Server is a running server of the load tool's own, with the admin and merchant it made.
type Server struct {
	Base            string
	Redis           redis.UniversalClient
	Pool            *pgxpool.Pool // its database: a scenario seeds its accounts there
	Admin, Merchant User
	cmd             *exec.Cmd
	done            chan error
}

// StartServer migrates the database, makes an admin and a merchant, and starts the server, answering once
// it is ready.
func StartServer(ctx context.Context, o ServerOptions) (*Server, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	opt, err := redis.ParseURL(o.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("server's Redis: %w", err)
	}
	rdb := redis.NewClient(opt)
	if err := rdb.FlushDB(ctx).Err(); err != nil {
		rdb.Close()
		return nil, fmt.Errorf("flush the server's Redis: %w", err)
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	env := append(append(append(os.Environ(), serverDefaults...), "DATABASE_URL="+o.DatabaseURL, "REDIS_URL="+o.RedisURL,
		fmt.Sprintf("PORT=%d", port), "BASE_URL="+base), o.Env...)
	run := func(args ...string) error {
		cmd := exec.CommandContext(ctx, o.Bin, args...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s %s: %w\n%s", o.Bin, strings.Join(args, " "), err, out)
		}
		return nil
	}
	s := &Server{Base: base, Redis: rdb, Admin: User{Name: "lt_admin", Password: "loadtest-admin-pass"},
		Merchant: User{Name: "lt_merchant", Password: "loadtest-merchant-pass"}, done: make(chan error, 1)}
	err = run("migrate")
	for _, u := range []struct {
		user *User
		role string
	}{{&s.Admin, "admin"}, {&s.Merchant, "merchant"}} {
		if err == nil {
			err = run("user", "create", "--username", u.user.Name, "--password", u.user.Password, "--role", u.role)
		}
	}
	if err == nil {
		s.Pool, err = pgxpool.New(ctx, o.DatabaseURL)
	}
	if err != nil {
		rdb.Close()
		return nil, err
	}
	s.cmd = exec.Command(o.Bin, "serve")
	s.cmd.Env = env
	s.cmd.Stderr = o.Log
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // it dies with the load tool
	if err := s.cmd.Start(); err != nil {
		s.close()
		return nil, err
	}
	go func() { s.done <- s.cmd.Wait() }()
	for deadline := time.Now().Add(30 * time.Second); ; {
		if r, err := http.Get(base + "/readyz"); err == nil {
			r.Body.Close()
			if r.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		select {
		case err := <-s.done:
			s.close()
			return nil, fmt.Errorf("the server stopped before it was ready: %v", err)
		case <-ctx.Done():
			s.Stop()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Stop()
			return nil, errors.New("the server was not ready within 30 s")
		}
	}
}

// Stop stops the server (SIGTERM, then SIGKILL after 10 s) and closes its connections.
func (s *Server) Stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.done
		}
	}
	s.close()
}

func (s *Server) close() {
	if s.Pool != nil {
		s.Pool.Close()
	}
	s.Redis.Close()
}

// FreshDatabase drops the database name on the PostgreSQL server of pgURL (its connections too) and makes
// it anew, answering its URL.
func FreshDatabase(ctx context.Context, pgURL, name string) (string, error) {
	if name == "" || strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789_") != "" {
		return "", fmt.Errorf("a database name of lower-case letters, digits and _, got %q", name)
	}
	conn, err := pgx.Connect(ctx, pgURL)
	if err != nil {
		return "", fmt.Errorf("PostgreSQL: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
		return "", err
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", err
	}
	u, err := url.Parse(pgURL)
	if err != nil {
		return "", err
	}
	u.Path = "/" + name
	return u.String(), nil
}

// FreePort answers a port nobody listens on now (the chaos tool's servers take theirs from it too).
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
