package testenv

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// FreePort answers a port nobody listens on now.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// RedisServer starts a redis-server of the test's own on a free port with args, without persistence,
// stopped (and resumed first, were it frozen) when the test ends, and answers its client and process.
func RedisServer(t testing.TB, name string, args ...string) (*redis.Client, *exec.Cmd) {
	t.Helper()
	dir := t.TempDir()
	port := FreePort(t)
	args = append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "",
		"--appendonly", "no", "--daemonize", "no", "--logfile", filepath.Join(dir, name+".log")}, args...)
	cmd := exec.Command("redis-server", args...)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port)})
	t.Cleanup(func() {
		_ = rdb.Close()
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	Eventually(t, 10*time.Second, name+" answers", func() bool { return rdb.Ping(context.Background()).Err() == nil })
	return rdb, cmd
}

// ReplicaPair is a Redis master and a replica of it, the test's own.
type ReplicaPair struct {
	Master, Replica *redis.Client
	ReplicaCmd      *exec.Cmd
}

// StartReplicaPair starts a master and a replica of it and waits until the replica acknowledges writes.
func StartReplicaPair(t testing.TB) *ReplicaPair {
	t.Helper()
	master, _ := RedisServer(t, "master", "--repl-diskless-sync-delay", "0")
	_, port, _ := net.SplitHostPort(master.Options().Addr)
	replica, cmd := RedisServer(t, "replica", "--replicaof", "127.0.0.1", port)
	ctx := context.Background()
	Eventually(t, 20*time.Second, "the replica in sync, acknowledging writes", func() bool {
		if !strings.Contains(replica.Info(ctx, "replication").Val(), "master_link_status:up") {
			return false
		}
		return ReplicaAcknowledges(ctx, master)
	})
	return &ReplicaPair{Master: master, Replica: replica, ReplicaCmd: cmd}
}

// ReplicaAcknowledges reports whether a replica of master acknowledges a write within 200 ms (WAIT on
// the write's own connection).
func ReplicaAcknowledges(ctx context.Context, master *redis.Client) bool {
	var wait *redis.IntCmd
	_, err := master.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "probe", "1", 0)
		wait = p.(*redis.Pipeline).Wait(ctx, 1, 200*time.Millisecond)
		return nil
	})
	return err == nil && wait.Val() == 1
}

// Freeze and Thaw stop and resume the replica (SIGSTOP, SIGCONT): connected, silent.
func (p *ReplicaPair) Freeze(t testing.TB) {
	t.Helper()
	if err := syscall.Kill(p.ReplicaCmd.Process.Pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
}

// Thaw resumes a frozen replica.
func (p *ReplicaPair) Thaw(t testing.TB) {
	t.Helper()
	if err := syscall.Kill(p.ReplicaCmd.Process.Pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
}
