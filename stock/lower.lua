-- Lowers a loaded shard's stock left by up to ARGV[1] units (never below 0) and answers how many it took
-- away: after a failover, the units Redis holds beyond what the database can back (failover.go).
-- KEYS: 1 the shard's sale hash
local left = tonumber(redis.call('HGET', KEYS[1], 'left'))
if not left then
  return 0
end
local take = math.min(left, tonumber(ARGV[1]))
if take > 0 then
  redis.call('HINCRBY', KEYS[1], 'left', -take)
end
return take
