-- Gives one unit back to an item's stock.
-- KEYS: 1 sale hash, 2 buyers set, 3 results hash
-- ARGV: 1 user id, 2 the buyer's new result ('' keeps it), 3 '1' to let the buyer buy again
-- Answers the stock left after, or -1 when the sale is not in Redis (preheat rebuilds it from the database).
if redis.call('EXISTS', KEYS[1]) == 0 then
  return -1
end
local left = redis.call('HINCRBY', KEYS[1], 'left', 1)
if ARGV[3] == '1' then
  redis.call('SREM', KEYS[2], ARGV[1])
end
if ARGV[2] ~= '' then
  redis.call('HSET', KEYS[3], ARGV[1], ARGV[2])
end
return left
