-- Gives back the time a pause took from the turns it interrupted: every turn still running when the sale
-- was paused ends later by the pause's length. Asked again for the same pause (a resume that failed and is
-- tried again), the turns move on only by the time since the last answer: once a pause in all.
-- KEYS: 1 room hash, 2 turns (user → path:turn end), 3 in flight (zset: user by when the turn is settled:
--       its end, or for a turn not seen yet the end of the wait for it to be seen, which moves as much)
-- ARGV: 1 when the pause began (ms), 2 when the turns go on again (ms)
-- Answers the users whose turns the pause interrupted (their paths are to be written again).
if redis.call('EXISTS', KEYS[1]) == 0 then
  return {}
end
local r = redis.call('HMGET', KEYS[1], 'resumed', 'resumed_to')
local from = tonumber(ARGV[1])
if r[1] == ARGV[1] then
  from = tonumber(r[2]) or from
end
local by = math.max(tonumber(ARGV[2]) - from, 0)
local moved = {}
local running = redis.call('ZRANGEBYSCORE', KEYS[3], '(' .. ARGV[1], '+inf', 'WITHSCORES')
for i = 1, #running, 2 do
  local uid = running[i]
  local path, ends = string.match(redis.call('HGET', KEYS[2], uid) or '', '^([^:]+):(%d+)$')
  if path then
    if by > 0 then
      redis.call('HSET', KEYS[2], uid, path .. ':' .. string.format('%d', tonumber(ends) + by))
      redis.call('ZADD', KEYS[3], string.format('%d', tonumber(running[i + 1]) + by), uid)
    end
    moved[#moved + 1] = uid
  end
end
redis.call('HSET', KEYS[1], 'resumed', ARGV[1], 'resumed_to', math.max(tonumber(ARGV[2]), from))
return moved
