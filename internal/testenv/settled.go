package testenv

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisSettled waits until the test's own Redis servers are settled: every replica's link to its master
// up (its full sync done and loaded) and no server with a fork child (the RDB of a full sync, a save, an
// AOF rewrite). A test whose last steps set a sync going (a master that lost its slots turns a replica)
// calls it before it ends: RedisServer's cleanup kills the server, and a fork child outlives its killed
// parent for a moment, long enough under load to log its broken pipe into the directory t.TempDir's
// cleanup has just emptied, which fails the test ("directory not empty").
func RedisSettled(t testing.TB, within time.Duration, servers ...*redis.Client) {
	t.Helper()
	ctx := context.Background()
	EventuallySaw(t, within, "the Redis servers settled: replicas in sync, no fork child", func() (bool, string) {
		for _, c := range servers {
			info, err := c.Info(ctx, "replication", "persistence").Result()
			if err != nil {
				return false, fmt.Sprintf("%s: %v", c.Options().Addr, err)
			}
			fields := map[string]string{}
			for _, line := range strings.Split(info, "\n") {
				if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
					fields[k] = v
				}
			}
			if fields["role"] == "slave" && fields["master_link_status"] != "up" {
				return false, c.Options().Addr + ": a replica whose link is " + fields["master_link_status"]
			}
			for _, k := range []string{"rdb_bgsave_in_progress", "aof_rewrite_in_progress", "module_fork_in_progress"} {
				if fields[k] != "0" {
					return false, fmt.Sprintf("%s: %s:%s", c.Options().Addr, k, fields[k])
				}
			}
		}
		return true, ""
	})
}
