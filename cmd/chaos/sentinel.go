package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/internal/faultnet"
	"seckill/loadtest"
)

// sentinelSet is a Redis master with two replicas and three sentinels watching them, all of the run's
// own, for the faults that fail a master over. Two replicas, not one: with min-replicas-to-write 1 a
// promoted replica with no replica of its own refuses every write until the old master comes back.
//
// Every link a replica or a sentinel has to a Redis server runs through that server's proxy (links[i]),
// and every process comes from a loopback address of its own, so that a partition can cut a master from
// its replicas and the sentinels and not from the shop, which comes from 127.0.0.1. Each server announces
// its proxy's address, so the addresses the sentinels learn and tell the shop are the proxies'.
type sentinelSet struct {
	dir       string
	nodes     []*redisServer
	links     []*faultnet.Proxy
	sentinels []*sentinelProc
}

// The documented settings (docs/reliability.md): a master Sentinel has not heard from for downAfter is
// failed over, which brings buys back within 10 s of its death; a master that has heard from no replica
// for more than minReplicasMaxLag seconds refuses writes, so a master cut off stops taking buys the
// replica will never see.
const (
	masterName        = "chaos"
	downAfter         = 5 * time.Second
	failoverTimeout   = 10 * time.Second
	minReplicasMaxLag = 2           // seconds
	shopIP            = "127.0.0.1" // the shop's and this harness's connections come from here: a partition spares them
)

func nodeIP(i int) string     { return fmt.Sprintf("127.0.0.%d", 10+i) }
func sentinelIP(i int) string { return fmt.Sprintf("127.0.0.%d", 20+i) }

// nodeArgs are a server's settings; replicaOf is the proxy it replicates from ("" for a master).
func (s *sentinelSet) nodeArgs(i int, replicaOf string) []string {
	_, port, _ := net.SplitHostPort(s.links[i].Addr())
	args := []string{"--replica-announce-ip", "127.0.0.1", "--replica-announce-port", port, "--bind-source-addr", nodeIP(i),
		"--min-replicas-to-write", "1", "--min-replicas-max-lag", strconv.Itoa(minReplicasMaxLag),
		"--maxmemory-policy", "noeviction", "--repl-diskless-sync-delay", "0"}
	if replicaOf != "" {
		host, port, _ := net.SplitHostPort(replicaOf)
		args = append(args, "--replicaof", host, port)
	}
	return args
}

func newSentinelSet(ctx context.Context, dir, fsync string) (*sentinelSet, error) {
	s := &sentinelSet{dir: dir}
	for i := range 3 {
		port, err := loadtest.FreePort()
		if err != nil {
			return s, err
		}
		r := &redisServer{dir: filepath.Join(dir, fmt.Sprintf("redis-%d", i)), fsync: fsync, port: port}
		if err := os.MkdirAll(r.dir, 0o755); err != nil {
			return s, err
		}
		link, err := faultnet.Listen("127.0.0.1:0", r.addr())
		if err != nil {
			return s, err
		}
		s.nodes, s.links = append(s.nodes, r), append(s.links, link)
	}
	for i, r := range s.nodes {
		from := ""
		if i > 0 {
			from = s.links[0].Addr()
		}
		r.args = s.nodeArgs(i, from)
		if err := r.start(ctx); err != nil {
			return s, err
		}
	}
	if err := s.waitReplicas(ctx, 0); err != nil {
		return s, err
	}
	host, port, _ := net.SplitHostPort(s.links[0].Addr())
	for k := range 3 {
		sp, err := startSentinel(ctx, dir, k, host, port)
		if sp != nil {
			s.sentinels = append(s.sentinels, sp)
		}
		if err != nil {
			return s, err
		}
	}
	// Every sentinel knows the others and both replicas before a sale: a failover needs a quorum.
	return s, waitFor(ctx, 60*time.Second, "the sentinels to know each other and the replicas", func() bool {
		for _, sp := range s.sentinels {
			m, err := sp.client.Master(ctx, masterName).Result()
			if err != nil || m["num-other-sentinels"] != "2" || m["num-slaves"] != "2" {
				return false
			}
		}
		return true
	})
}

// url is the shop's REDIS_URL: the sentinels and the master's name.
func (s *sentinelSet) url() string {
	u := fmt.Sprintf("redis://%s/0?master_name=%s", s.sentinels[0].addr, masterName)
	for _, sp := range s.sentinels[1:] {
		u += "&addr=" + sp.addr
	}
	return u
}

func (s *sentinelSet) sentinelAddrs() []string {
	var out []string
	for _, sp := range s.sentinels {
		out = append(out, sp.addr)
	}
	return out
}

// master answers the index of the server the sentinels call master (the first that answers).
func (s *sentinelSet) master(ctx context.Context) (int, error) {
	var errs []error
	for _, sp := range s.sentinels {
		addr, err := sp.client.GetMasterAddrByName(ctx, masterName).Result()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for i, l := range s.links {
			if len(addr) == 2 && l.Addr() == net.JoinHostPort(addr[0], addr[1]) {
				return i, nil
			}
		}
		errs = append(errs, fmt.Errorf("the sentinels' master %v is none of the proxies", addr))
	}
	return -1, errors.Join(errs...)
}

// waitSwitch waits until a sentinel names a master other than old, and answers it.
func (s *sentinelSet) waitSwitch(ctx context.Context, old int, within time.Duration) (int, error) {
	now := old
	err := waitFor(ctx, within, "Sentinel to promote a replica", func() bool {
		for _, sp := range s.sentinels {
			cctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			addr, err := sp.client.GetMasterAddrByName(cctx, masterName).Result()
			cancel()
			if err != nil || len(addr) != 2 {
				continue
			}
			for i, l := range s.links {
				if i != old && l.Addr() == net.JoinHostPort(addr[0], addr[1]) {
					now = i
					return true
				}
			}
		}
		return false
	})
	return now, err
}

// info reads a server's INFO replication straight from its own port (not through its proxy).
func (s *sentinelSet) info(ctx context.Context, i int) map[string]string {
	c := redis.NewClient(&redis.Options{Addr: s.nodes[i].addr(), MaxRetries: -1, DialTimeout: 500 * time.Millisecond, ReadTimeout: 500 * time.Millisecond})
	defer c.Close()
	out := map[string]string{}
	text, err := c.Info(ctx, "replication").Result()
	if err != nil {
		return out
	}
	for _, line := range strings.Split(text, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = v
		}
	}
	return out
}

// waitReplicas waits until server m is a master with both others as replicas in step with it: the set is
// whole again, so the next fault has a replica to promote.
func (s *sentinelSet) waitReplicas(ctx context.Context, m int) error {
	return waitFor(ctx, 2*time.Minute, fmt.Sprintf("Redis %d to have both replicas online", m), func() bool {
		in := s.info(ctx, m)
		if in["role"] != "master" || in["connected_slaves"] != "2" {
			return false
		}
		for _, k := range []string{"slave0", "slave1"} {
			if !strings.Contains(in[k], "state=online") {
				return false
			}
		}
		return true
	})
}

// rejoin starts server i again as a replica of server m, as an operator would start a dead master again.
func (s *sentinelSet) rejoin(ctx context.Context, i, m int) error {
	s.nodes[i].args = s.nodeArgs(i, s.links[m].Addr())
	return s.nodes[i].start(ctx)
}

func (s *sentinelSet) close() {
	for _, sp := range s.sentinels {
		sp.kill()
	}
	for _, l := range s.links {
		_ = l.Close()
	}
	for _, r := range s.nodes {
		r.kill()
	}
}

// sentinelProc is one Redis Sentinel, a child process with a configuration file of its own (Sentinel
// rewrites it as it learns).
type sentinelProc struct {
	addr   string
	client *redis.SentinelClient
	cmd    *exec.Cmd
	done   chan struct{}
}

func startSentinel(ctx context.Context, dir string, k int, masterHost, masterPort string) (*sentinelProc, error) {
	port, err := loadtest.FreePort()
	if err != nil {
		return nil, err
	}
	conf := filepath.Join(dir, fmt.Sprintf("sentinel-%d.conf", k))
	// announce-ip: the sentinel's links come from its own loopback address, on which it does not listen.
	text := fmt.Sprintf(`port %d
bind 127.0.0.1
bind-source-addr %s
daemonize no
dir %s
logfile %s
sentinel announce-ip 127.0.0.1
sentinel announce-port %d
sentinel monitor %s %s %s 2
sentinel down-after-milliseconds %s %d
sentinel failover-timeout %s %d
sentinel parallel-syncs %s 1
`, port, sentinelIP(k), dir, filepath.Join(dir, fmt.Sprintf("sentinel-%d.log", k)), port, masterName, masterHost, masterPort,
		masterName, downAfter.Milliseconds(), masterName, failoverTimeout.Milliseconds(), masterName)
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		return nil, err
	}
	sp := &sentinelProc{addr: fmt.Sprintf("127.0.0.1:%d", port)}
	sp.cmd = exec.Command("redis-server", conf, "--sentinel")
	sp.cmd.SysProcAttr = dieWithUs()
	if err := sp.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start Redis Sentinel: %w", err)
	}
	sp.done = make(chan struct{})
	go func(c *exec.Cmd, done chan struct{}) { _ = c.Wait(); close(done) }(sp.cmd, sp.done)
	sp.client = redis.NewSentinelClient(&redis.Options{Addr: sp.addr, MaxRetries: -1})
	return sp, waitFor(ctx, 30*time.Second, "Redis Sentinel to answer", func() bool { return sp.client.Ping(ctx).Err() == nil })
}

func (sp *sentinelProc) kill() {
	if sp.client != nil {
		_ = sp.client.Close()
	}
	if sp.cmd != nil && sp.cmd.Process != nil {
		_ = sp.cmd.Process.Kill()
		<-sp.done
	}
}
