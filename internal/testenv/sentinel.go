package testenv

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// SentinelGroup is a Redis master, a replica of it and three Redis Sentinels watching them, the test's
// own: what a shop with one master runs in production (docker-compose.yml's sentinel profile), small.
type SentinelGroup struct {
	Name      string   // the master's name, as the sentinels know it
	Sentinels []string // the sentinels' addresses
	// URL is REDIS_URL in go-redis's failover form (redis.ParseFailoverURL).
	URL     string
	servers map[string]*exec.Cmd // by address: the master and the replica
}

// Sentinel's timings for the tests: a master silent for a second is down, and a failover that did not
// finish in five seconds is tried again. Production's are in docker-compose.yml (docs/reliability.md).
const (
	sentinelDownAfter       = 1000 * time.Millisecond
	sentinelFailoverTimeout = 5000 * time.Millisecond
)

// StartSentinelGroup starts a master, a replica and three sentinels (a quorum of two) on free ports, and
// waits until every sentinel knows the replica, so that a master killed from then on fails over.
func StartSentinelGroup(t testing.TB) *SentinelGroup {
	t.Helper()
	pair := StartReplicaPair(t)
	masterAddr := pair.Master.Options().Addr
	replicaAddr := pair.Replica.Options().Addr
	g := &SentinelGroup{Name: "seckill", servers: map[string]*exec.Cmd{
		masterAddr:  processOf(t, pair.Master),
		replicaAddr: pair.ReplicaCmd,
	}}
	_, masterPort, _ := net.SplitHostPort(masterAddr)
	for i := range 3 {
		g.Sentinels = append(g.Sentinels, startSentinel(t, i, g.Name, masterPort))
	}
	ctx := context.Background()
	for _, addr := range g.Sentinels {
		sc := redis.NewSentinelClient(&redis.Options{Addr: addr})
		t.Cleanup(func() { _ = sc.Close() })
		Eventually(t, 30*time.Second, "sentinel "+addr+" knows the replica and the other sentinels", func() bool {
			replicas, err := sc.Replicas(ctx, g.Name).Result()
			if err != nil || len(replicas) == 0 {
				return false
			}
			m, err := sc.Master(ctx, g.Name).Result()
			return err == nil && m["num-other-sentinels"] == "2"
		})
	}
	g.URL = fmt.Sprintf("redis://%s/0?master_name=%s", g.Sentinels[0], g.Name)
	for _, s := range g.Sentinels[1:] {
		g.URL += "&addr=" + s
	}
	return g
}

// processOf finds the redis-server process of a client RedisServer made (the replica pair keeps only the
// replica's): by its port, which names it alone.
func processOf(t testing.TB, rdb *redis.Client) *exec.Cmd {
	t.Helper()
	info, err := rdb.Info(context.Background(), "server").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			pid, _ := strconv.Atoi(v)
			p, err := os.FindProcess(pid)
			if err != nil {
				t.Fatal(err)
			}
			return &exec.Cmd{Process: p}
		}
	}
	t.Fatal("INFO server has no process_id")
	return nil
}

// startSentinel starts redis-server in sentinel mode with a config file of its own (a sentinel rewrites
// it as it learns the group) and answers its address.
func startSentinel(t testing.TB, i int, name, masterPort string) string {
	t.Helper()
	dir := t.TempDir()
	port := FreePort(t)
	conf := filepath.Join(dir, "sentinel.conf")
	text := fmt.Sprintf(`port %d
bind 127.0.0.1
dir %s
logfile %s
sentinel resolve-hostnames no
sentinel announce-ip 127.0.0.1
sentinel monitor %s 127.0.0.1 %s 2
sentinel down-after-milliseconds %s %d
sentinel failover-timeout %s %d
sentinel parallel-syncs %s 1
`, port, dir, filepath.Join(dir, "sentinel.log"), name, masterPort, name, sentinelDownAfter.Milliseconds(),
		name, sentinelFailoverTimeout.Milliseconds(), name)
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("redis-server", conf, "--sentinel")
	if err := cmd.Start(); err != nil {
		t.Fatalf("start sentinel %d: %v", i, err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	sc := redis.NewSentinelClient(&redis.Options{Addr: addr})
	defer sc.Close()
	Eventually(t, 10*time.Second, "sentinel "+addr+" answers", func() bool { return sc.Ping(context.Background()).Err() == nil })
	return addr
}

// FailoverOptions answers go-redis's options for the group (ParseFailoverURL of URL).
func (g *SentinelGroup) FailoverOptions(t testing.TB) *redis.FailoverOptions {
	t.Helper()
	opt, err := redis.ParseFailoverURL(g.URL)
	if err != nil {
		t.Fatal(err)
	}
	return opt
}

// Master answers the address the sentinels name as the master now (the first that answers).
func (g *SentinelGroup) Master(ctx context.Context) (string, error) {
	var last error
	for _, addr := range g.Sentinels {
		sc := redis.NewSentinelClient(&redis.Options{Addr: addr})
		a, err := sc.GetMasterAddrByName(ctx, g.Name).Result()
		_ = sc.Close()
		if err == nil && len(a) == 2 {
			return net.JoinHostPort(a[0], a[1]), nil
		}
		last = err
	}
	return "", fmt.Errorf("no sentinel names the master: %v", last)
}

// KillMaster kills the master (SIGKILL: no goodbye to anyone) and answers its address.
func (g *SentinelGroup) KillMaster(t testing.TB) string {
	t.Helper()
	addr, err := g.Master(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	cmd, ok := g.servers[addr]
	if !ok {
		t.Fatalf("the master %s is none of the group's servers", addr)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	return addr
}

// WaitNewMaster waits until every sentinel names a master other than old, and the new master says it is
// one; it answers its address.
func (g *SentinelGroup) WaitNewMaster(t testing.TB, old string, within time.Duration) string {
	t.Helper()
	ctx := context.Background()
	var now string
	EventuallySaw(t, within, "the sentinels to promote the replica", func() (bool, string) {
		for _, addr := range g.Sentinels {
			sc := redis.NewSentinelClient(&redis.Options{Addr: addr})
			a, err := sc.GetMasterAddrByName(ctx, g.Name).Result()
			_ = sc.Close()
			if err != nil || len(a) != 2 || net.JoinHostPort(a[0], a[1]) == old {
				return false, fmt.Sprintf("sentinel %s names %v (%v)", addr, a, err)
			}
			now = net.JoinHostPort(a[0], a[1])
		}
		rdb := redis.NewClient(&redis.Options{Addr: now})
		defer rdb.Close()
		info, err := rdb.Info(ctx, "replication").Result()
		return err == nil && strings.Contains(info, "role:master"), now + " is not a master yet"
	})
	return now
}

// Replica answers the address of the group's server that is not the master now.
func (g *SentinelGroup) Replica(t testing.TB) string {
	t.Helper()
	master, err := g.Master(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for addr := range g.servers {
		if addr != master {
			return addr
		}
	}
	t.Fatal("the group has no replica")
	return ""
}
