-- A shopper of a waiting room whose order failed (refused, or the database had no stock for it) did not
-- buy after all: they keep their place, held to be let in again first when there is stock.
-- KEYS: 1 room hash, 2 done (user → bought|missed), 3 in flight (zset: user by turn end), 4 turns,
--       5 held (zset: user by place), 6 places (user → place), 7 the turns not seen yet
-- ARGV: 1 user id
-- Answers 1 when the shopper was put back, 0 when the room knew no purchase of theirs.
local uid = ARGV[1]
if redis.call('HGET', KEYS[2], uid) == 'bought' then
  redis.call('HDEL', KEYS[2], uid)
  redis.call('HINCRBY', KEYS[1], 'bought', -1)
elseif redis.call('ZREM', KEYS[3], uid) == 0 then
  return 0
end
redis.call('HDEL', KEYS[4], uid)
redis.call('SREM', KEYS[7], uid)
redis.call('ZADD', KEYS[5], tonumber(redis.call('HGET', KEYS[6], uid)) or 0, uid)
return 1
