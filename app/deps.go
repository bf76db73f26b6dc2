package app

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
	"seckill/stock"
)

// openPostgres connects to PostgreSQL at url and checks that it answers.
func openPostgres(ctx context.Context, url string) (*gorm.DB, error) {
	db, err := gorm.Open(postgres.Open(url), gormConfig())
	if err != nil {
		return nil, fmt.Errorf("database: %w", err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, fmt.Errorf("database: %w", err)
	}
	sqlDB.SetMaxOpenConns(20)
	sqlDB.SetMaxIdleConns(20)
	sqlDB.SetConnMaxIdleTime(5 * time.Minute)
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := sqlDB.PingContext(pctx); err != nil {
		_ = sqlDB.Close()
		return nil, fmt.Errorf("database did not answer: %w", err)
	}
	return db, nil
}

func gormConfig() *gorm.Config {
	return &gorm.Config{
		TranslateError: true, // unique violations come back as gorm.ErrDuplicatedKey on every dialect
		Logger:         logger.Discard,
		NowFunc:        func() time.Time { return time.Now().UTC() },
	}
}

// openRedis connects to Redis: one server for a redis:// URL, the master Redis Sentinel names for a URL
// with master_name (go-redis's failover client: it asks the sentinels for the master and follows a
// failover), a Redis Cluster for a list of addresses. For Sentinel it also answers the parsed options, from
// which the app makes its second client (dedicatedClient).
func openRedis(ctx context.Context, cfg Config) (redis.UniversalClient, *redis.FailoverOptions, error) {
	var rdb redis.UniversalClient
	var failover *redis.FailoverOptions
	if addrs := cfg.redisAddrs(); addrs != nil {
		rdb = redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, PoolSize: 64, ClusterStateReloadInterval: stock.ClusterReloadEvery})
	} else if cfg.redisSentinel() {
		opt, err := redis.ParseFailoverURL(cfg.RedisURL)
		if err != nil {
			return nil, nil, fmt.Errorf("REDIS_URL: %w", err)
		}
		opt.PoolSize = 64
		failover = opt
		rdb = redis.NewFailoverClient(opt)
	} else {
		opt, err := redis.ParseURL(cfg.RedisURL)
		if err != nil {
			return nil, nil, fmt.Errorf("REDIS_URL: %w", err)
		}
		opt.PoolSize = 64
		rdb = redis.NewClient(opt)
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := rdb.Ping(pctx).Err(); err != nil {
		_ = rdb.Close()
		return nil, nil, fmt.Errorf("redis did not answer: %w", err)
	}
	return rdb, failover, nil
}
