-- Gives back the time a pause took from the turns it interrupted: a turn still running when the sale was
-- paused ends later by the pause's length, and its path is written again (pending) with the new end. Once
-- a pause: asked again for the same pause (a retried resume), it changes nothing.
-- KEYS: 1 room hash, 2 turns (user → path:turn end), 3 in flight (zset: user by turn end), 4 let in and
--       their paths not yet written
-- ARGV: 1 when the pause began (ms), 2 when the turns go on again (ms)
-- Answers the users whose turns were moved.
if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('HGET', KEYS[1], 'resumed') == ARGV[1] then
  return {}
end
local by = tonumber(ARGV[2]) - tonumber(ARGV[1])
local moved = {}
if by > 0 then
  local running = redis.call('ZRANGEBYSCORE', KEYS[3], '(' .. ARGV[1], '+inf', 'WITHSCORES')
  for i = 1, #running, 2 do
    local uid = running[i]
    local path = string.match(redis.call('HGET', KEYS[2], uid) or '', '^([^:]+):')
    if path then
      local ends = string.format('%d', tonumber(running[i + 1]) + by)
      redis.call('HSET', KEYS[2], uid, path .. ':' .. ends)
      redis.call('ZADD', KEYS[3], ends, uid)
      redis.call('SADD', KEYS[4], uid)
      moved[#moved + 1] = uid
    end
  end
end
redis.call('HSET', KEYS[1], 'resumed', ARGV[1])
return moved
