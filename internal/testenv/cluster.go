package testenv

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/stock"
)

// ClusterNodeTimeout is the cluster-node-timeout of the test's clusters, the one scripts/cluster.sh and
// docker-compose.yml document: a master silent that long is failed over (about a second more for the
// vote), and a busy master on two shared cores answers its pings well within it.
const ClusterNodeTimeout = 5 * time.Second

// ClusterNode is one redis-server of a test's cluster.
type ClusterNode struct {
	Client *redis.Client
	Cmd    *exec.Cmd
	ID     string // its cluster node id
}

// Cluster is a Redis Cluster of the test's own processes: Masters[i] holds the i-th share of the slots,
// Replicas[i] are its replicas.
type Cluster struct {
	Masters  []*ClusterNode
	Replicas [][]*ClusterNode
}

// StartCluster starts a Redis Cluster of masters masters, each with replicas replicas, on free ports,
// joined with CLUSTER ADDSLOTSRANGE, MEET and REPLICATE (redis-cli --cluster create wants three masters),
// and waits until every node says cluster_state:ok and every master's replicas acknowledge a write.
// args are added to every node's command line.
func StartCluster(t testing.TB, masters, replicas int, args ...string) *Cluster {
	t.Helper()
	ctx := context.Background()
	node := func(name string) *ClusterNode {
		a := append([]string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", strconv.Itoa(int(ClusterNodeTimeout.Milliseconds())),
			"--cluster-require-full-coverage", "no", "--repl-diskless-sync-delay", "0",
			"--maxmemory-policy", "noeviction"}, args...)
		c, cmd := RedisServer(t, name, a...)
		id, err := c.Do(ctx, "cluster", "myid").Text()
		if err != nil {
			t.Fatalf("%s: CLUSTER MYID: %v", name, err)
		}
		return &ClusterNode{Client: c, Cmd: cmd, ID: id}
	}
	cl := &Cluster{}
	for i := range masters {
		m := node(fmt.Sprintf("master%d", i))
		// An epoch of its own before it meets the others, as redis-cli --cluster create gives each master.
		if err := m.Client.Do(ctx, "cluster", "set-config-epoch", i+1).Err(); err != nil {
			t.Fatalf("CLUSTER SET-CONFIG-EPOCH: %v", err)
		}
		from, to := i*16384/masters, (i+1)*16384/masters-1
		if err := m.Client.Do(ctx, "cluster", "addslotsrange", from, to).Err(); err != nil {
			t.Fatalf("CLUSTER ADDSLOTSRANGE %d %d: %v", from, to, err)
		}
		cl.Masters = append(cl.Masters, m)
		var reps []*ClusterNode
		for j := range replicas {
			reps = append(reps, node(fmt.Sprintf("replica%d-%d", i, j)))
		}
		cl.Replicas = append(cl.Replicas, reps)
	}
	host, port, _ := net.SplitHostPort(cl.Masters[0].Client.Options().Addr)
	for _, n := range cl.Nodes()[1:] {
		if err := n.Client.ClusterMeet(ctx, host, port).Err(); err != nil {
			t.Fatalf("CLUSTER MEET: %v", err)
		}
	}
	for i, reps := range cl.Replicas {
		for _, r := range reps {
			Eventually(t, 20*time.Second, "a replica knows its master", func() bool {
				return strings.Contains(r.Client.ClusterNodes(ctx).Val(), cl.Masters[i].ID)
			})
			if err := r.Client.Do(ctx, "cluster", "replicate", cl.Masters[i].ID).Err(); err != nil {
				t.Fatalf("CLUSTER REPLICATE: %v", err)
			}
		}
	}
	EventuallySaw(t, 40*time.Second, "the cluster ok, every replica acknowledging writes", func() (bool, string) {
		for _, n := range cl.Nodes() {
			if !strings.Contains(n.Client.ClusterInfo(ctx).Val(), "cluster_state:ok") {
				return false, n.Client.Options().Addr + " not cluster_state:ok"
			}
		}
		for i, m := range cl.Masters {
			if got := acks(ctx, m, len(cl.Replicas[i]), 200*time.Millisecond); got < len(cl.Replicas[i]) {
				return false, fmt.Sprintf("master %d: %d replicas acknowledge", i, got)
			}
		}
		return true, ""
	})
	return cl
}

// Nodes answers every node, masters first.
func (cl *Cluster) Nodes() []*ClusterNode {
	nodes := append([]*ClusterNode(nil), cl.Masters...)
	for _, reps := range cl.Replicas {
		nodes = append(nodes, reps...)
	}
	return nodes
}

// Client answers a cluster client that knows every node and reloads its slots as the shop's does
// (stock.ClusterReloadEvery), closed when the test ends.
func (cl *Cluster) Client(t testing.TB) *redis.ClusterClient {
	t.Helper()
	var addrs []string
	for _, n := range cl.Nodes() {
		addrs = append(addrs, n.Client.Options().Addr)
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, ClusterStateReloadInterval: stock.ClusterReloadEvery})
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// acks answers how many replicas of master m acknowledge a write to one of its slots (WAIT want timeout).
func acks(ctx context.Context, m *ClusterNode, want int, timeout time.Duration) int {
	key, ok := keyOn(ctx, m.Client)
	if !ok {
		return -1
	}
	var wait *redis.IntCmd
	_, err := m.Client.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, key, "1", 0)
		wait = p.(*redis.Pipeline).Wait(ctx, want, timeout)
		return nil
	})
	if err != nil {
		return -1
	}
	return int(wait.Val())
}

// keyOn answers a key whose slot master m serves.
func keyOn(ctx context.Context, m *redis.Client) (string, bool) {
	for i := range 1000 {
		key := fmt.Sprintf("probe:{%d}", i)
		if err := m.Exists(ctx, key).Err(); err == nil {
			return key, true
		}
	}
	return "", false
}

// KillMaster kills master i (SIGKILL: no goodbye to the others) and answers its slots' first replica,
// which the cluster is to promote.
func (cl *Cluster) KillMaster(t testing.TB, i int) *ClusterNode {
	t.Helper()
	m := cl.Masters[i]
	if err := syscall.Kill(m.Cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill master %d: %v", i, err)
	}
	if len(cl.Replicas[i]) == 0 {
		t.Fatalf("master %d has no replica to promote", i)
	}
	return cl.Replicas[i][0]
}

// WaitPromoted waits until replica r is a master the cluster agrees on (its own CLUSTER NODES says so
// and it says cluster_state:ok), and answers how long that took from since.
func (cl *Cluster) WaitPromoted(t testing.TB, r *ClusterNode, within time.Duration, since time.Time) time.Duration {
	t.Helper()
	ctx := context.Background()
	EventuallySaw(t, within, "the replica promoted", func() (bool, string) {
		nodes, err := r.Client.ClusterNodes(ctx).Result()
		if err != nil {
			return false, err.Error()
		}
		for _, line := range strings.Split(nodes, "\n") {
			if strings.Contains(line, "myself") {
				if !strings.Contains(line, "master") {
					return false, line
				}
			}
		}
		info := r.Client.ClusterInfo(ctx).Val()
		return strings.Contains(info, "cluster_state:ok"), "not cluster_state:ok"
	})
	return time.Since(since)
}
