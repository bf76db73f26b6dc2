// Package testenv gives tests the real services: a PostgreSQL schema and a Redis database of their own,
// clean at the start and dropped at the end. An unreachable server fails the test with the command that
// starts it; nothing skips.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/glebarez/sqlite"
	"github.com/redis/go-redis/v9"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"seckill/models"
)

const (
	defaultPostgres = "postgres://postgres:postgres@127.0.0.1:5432/test?sslmode=disable"
	defaultRedis    = "redis://127.0.0.1:6379/0"
	startHint       = "start the local services with `make services` (scripts/services.sh)"
)

// PostgresURL is the server tests use: TEST_DATABASE_URL, or the local one.
func PostgresURL() string {
	if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
		return u
	}
	return defaultPostgres
}

// RedisURL is the server tests use: TEST_REDIS_URL, or the local one.
func RedisURL() string {
	if u := os.Getenv("TEST_REDIS_URL"); u != "" {
		return u
	}
	return defaultRedis
}

func token() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// GormConfig is the configuration the product uses, so that tests see the same error translation.
func GormConfig() *gorm.Config {
	return &gorm.Config{TranslateError: true, Logger: logger.Discard, NowFunc: func() time.Time { return time.Now().UTC() }}
}

// PostgresSchema makes an empty schema of the test's own and returns a URL whose connections use it.
// The schema is dropped when the test ends.
func PostgresSchema(t testing.TB) string {
	t.Helper()
	base := PostgresURL()
	admin, err := gorm.Open(postgres.Open(base), GormConfig())
	if err == nil {
		var sqlDB interface{ Close() error }
		if sqlDB, err = admin.DB(); err == nil {
			defer sqlDB.Close()
		}
	}
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err = admin.WithContext(ctx).Exec("SELECT 1").Error
	}
	if err != nil {
		t.Fatalf("PostgreSQL is not reachable at %s: %v\n%s", base, err, startHint)
	}
	schema := "t_" + token()
	if err := admin.Exec("CREATE SCHEMA " + schema).Error; err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		a, err := gorm.Open(postgres.Open(base), GormConfig())
		if err != nil {
			return
		}
		a.Exec("DROP SCHEMA " + schema + " CASCADE")
		if d, err := a.DB(); err == nil {
			d.Close()
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("TEST_DATABASE_URL: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// Postgres returns a migrated database in a schema of the test's own.
func Postgres(t testing.TB) *gorm.DB {
	t.Helper()
	db, err := gorm.Open(postgres.Open(PostgresSchema(t)), GormConfig())
	if err != nil {
		t.Fatalf("open postgres: %v", err)
	}
	closeOnCleanup(t, db)
	if Upgraded() {
		dump, err := os.ReadFile(oldSchemaFile("postgres"))
		if err != nil {
			t.Fatalf("TEST_SCHEMA=upgraded: %v", err)
		}
		if err := db.Exec(string(dump)).Error; err != nil {
			t.Fatalf("TEST_SCHEMA=upgraded: the schema of before versioned migrations: %v", err)
		}
	}
	if err := models.Migrate(context.Background(), db); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return db
}

// Upgraded reports whether TEST_SCHEMA=upgraded asks for every test's PostgreSQL database to be made as
// an existing shop's is upgraded: the schema GORM's AutoMigrate made before migrations were versioned
// (models/testdata/automigrate_postgres.sql, a dump made by that code), then models.Migrate, which marks
// it at version 1 and runs what came after. `make test` runs its second pass so, so that the suite holds
// on an upgraded database as on a new one.
func Upgraded() bool { return os.Getenv("TEST_SCHEMA") == "upgraded" }

// oldSchemaFile is the path of the dump of before versioned migrations for dialect.
func oldSchemaFile(dialect string) string {
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "..", "..", "models", "testdata", "automigrate_"+dialect+".sql")
}

// SQLite returns a migrated database in a file of the test's own.
func SQLite(t testing.TB) *gorm.DB {
	t.Helper()
	path := filepath.Join(t.TempDir(), "test.db")
	db, err := gorm.Open(sqlite.Open(path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_txlock=immediate"), GormConfig())
	if err != nil {
		t.Fatalf("open sqlite: %v", err)
	}
	closeOnCleanup(t, db)
	if err := models.Migrate(context.Background(), db); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return db
}

func closeOnCleanup(t testing.TB, db *gorm.DB) {
	t.Cleanup(func() {
		if d, err := db.DB(); err == nil {
			d.Close()
		}
	})
}

// Redis returns a client on a Redis database that no other running test holds (1 to 13 of the server
// in TEST_REDIS_URL; 14 and 15 are make bench's), emptied before and after the test. Its pool is the
// size the server uses (64), so a test's crowd of buyers queues for connections no longer than a
// server's would.
func Redis(t testing.TB) *redis.Client {
	t.Helper()
	opt, err := redis.ParseURL(RedisURL())
	if err != nil {
		t.Fatalf("TEST_REDIS_URL: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	lockOpt := *opt
	lockOpt.DB = 0
	locks := redis.NewClient(&lockOpt)
	defer locks.Close()
	if err := locks.Ping(ctx).Err(); err != nil {
		t.Fatalf("Redis is not reachable at %s: %v\n%s", RedisURL(), err, startHint)
	}

	// Test binaries of several packages run at once: each test takes a database by a lock key in db 0.
	me := token()
	db := 0
	for db == 0 {
		for n := 1; n <= 13; n++ {
			ok, err := locks.SetNX(ctx, "seckill-test:db:"+strconv.Itoa(n), me, 10*time.Minute).Result()
			if err != nil {
				t.Fatalf("redis: %v", err)
			}
			if ok {
				db = n
				break
			}
		}
		if db == 0 {
			select {
			case <-ctx.Done():
				t.Fatal("no free Redis test database (1-13) within a minute")
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	opt.DB = db
	opt.PoolSize = 64
	rdb := redis.NewClient(opt)
	if err := rdb.FlushDB(ctx).Err(); err != nil {
		t.Fatalf("redis flushdb: %v", err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		rdb.FlushDB(ctx)
		rdb.Close()
		l := redis.NewClient(&lockOpt)
		defer l.Close()
		key := "seckill-test:db:" + strconv.Itoa(db)
		if v, _ := l.Get(ctx, key).Result(); v == me {
			l.Del(ctx, key)
		}
	})
	return rdb
}

// RedisURLFor returns the URL of the Redis database that rdb uses, for a server started by a test.
func RedisURLFor(rdb *redis.Client) string {
	o := rdb.Options()
	return fmt.Sprintf("redis://%s/%d", o.Addr, o.DB)
}

// RedisCPU is the CPU time the Redis server has used so far (INFO cpu: user and system, its main thread
// and the rest), for benchmarks that report what a request costs Redis.
func RedisCPU(tb testing.TB, rdb *redis.Client) time.Duration {
	tb.Helper()
	info, err := rdb.Info(context.Background(), "cpu").Result()
	if err != nil {
		tb.Fatal(err)
	}
	var total float64
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (k == "used_cpu_sys" || k == "used_cpu_user") {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				tb.Fatalf("INFO cpu: %s", line)
			}
			total += f
		}
	}
	return time.Duration(total * float64(time.Second))
}
