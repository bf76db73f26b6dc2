-- Steps of the draw. 'close' (from the start on): who joins from now on goes behind the draw's entrants.
-- 'done': the entrants' places are written, the line may move.
-- KEYS: 1 room hash, 2 tickets. ARGV: 1 'close' or 'done', 2 now (ms)
-- Answers {state, entrants}.
local r = redis.call('HMGET', KEYS[1], 'state', 'starts', 'entrants')
if not r[1] then
  return {'no_room', '0'}
end
if ARGV[1] == 'close' and r[1] == 'open' and tonumber(ARGV[2]) >= tonumber(r[2]) then
  local n = redis.call('HLEN', KEYS[2])
  redis.call('HSET', KEYS[1], 'state', 'drawing', 'entrants', n, 'tail', n)
  return {'drawing', tostring(n)}
end
if ARGV[1] == 'done' and r[1] == 'drawing' then
  redis.call('HSET', KEYS[1], 'state', 'drawn', 'drawn_at', ARGV[2])
  return {'drawn', r[3]}
end
return {r[1], r[3] or '0'}
