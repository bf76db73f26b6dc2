-- The instances' meeting after a failover (failover.go): each look, an instance says it is alive and, if
-- it has checked the books of the masters it sees now (or holds nothing), that it has checked them. It
-- answers the instances alive (seen within ARGV[3] ms, by this Redis's clock, so no two hosts' clocks are
-- compared) that have not checked them: an instance held after a failover waits for them before it sells.
-- KEYS: 1 the instances (sorted set: id -> last seen, ms), 2 those who checked this generation of masters (set)
-- ARGV: 1 this instance's id, 2 '1' if it checked this generation, 3 the window (ms), 4 the set's life (ms)
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - 600000)
if ARGV[2] == '1' then
  redis.call('SADD', KEYS[2], ARGV[1])
  redis.call('PEXPIRE', KEYS[2], ARGV[4])
end
local waiting = {}
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], now - tonumber(ARGV[3]), '+inf')) do
  if redis.call('SISMEMBER', KEYS[2], id) == 0 then
    waiting[#waiting + 1] = id
  end
end
return waiting
