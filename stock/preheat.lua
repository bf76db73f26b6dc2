-- Loads one stock shard of an item's sale, or refreshes its window and price when it is loaded already.
-- KEYS: 1 the shard's sale hash
-- ARGV: 1 the shard's stock to load (and the most it may hold), 2 stock_total, 3 starts (ms), 4 ends (ms),
--       5 price (cents), 6 activity id, 7 '1' to refresh a loaded shard only, 8 the item's shard count
-- Answers {'loaded'|'kept', stock left}, or {'missing'} when asked to refresh a shard that is not loaded.
-- A running sale's count is never raised: orders still queued in the stream are not in the database
-- yet, so Redis may rightly hold less than the database says. The shard count of a loaded sale never
-- changes: buyers and their paths live in the shard their id names.
local cap = tonumber(ARGV[1])
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('HSET', KEYS[1], 'total', ARGV[2], 'starts', ARGV[3], 'ends', ARGV[4], 'price', ARGV[5], 'activity', ARGV[6])
  local left = tonumber(redis.call('HGET', KEYS[1], 'left'))
  if left > cap then
    -- More than the database can back: never sell it.
    redis.call('HSET', KEYS[1], 'left', cap)
    left = cap
  end
  return {'kept', tostring(left)}
end
if ARGV[7] == '1' then
  return {'missing'}
end
redis.call('HSET', KEYS[1], 'left', cap, 'total', ARGV[2], 'starts', ARGV[3], 'ends', ARGV[4], 'price', ARGV[5],
  'activity', ARGV[6], 'shards', ARGV[8])
return {'loaded', tostring(cap)}
