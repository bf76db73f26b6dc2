-- One step of the line: the turns that ended are settled, and the next in line are let in, while those let
-- in and not done are fewer than the stock left times the overbooking, and no faster than the rate.
-- KEYS: 1 room hash, 2 the line (zset: user by place), 3 turns (user → path:turn end), 4 in flight (zset:
--       user by turn end), 5 done (user → bought|missed), 6 let in and their paths not yet written,
--       7 held (zset: user by place): turns that ended while nothing was left, and buyers whose order
--       failed; they keep their places and are let in first when stock comes back, 8 places (user → place),
--       9 the shadow line (zset: user by place): let in only once the line has no one left to let in,
--       10 the turns not seen yet (set: users whose page has not asked its standing since the turn began)
-- ARGV: 1 now (ms), 2 stock left, 3 overbooking, 4 rate (a second), 5 turn (ms), 6 grace (ms): how long
--       after its end a turn is settled as missed (instances' clocks differ: a buy may still be accepted
--       a moment after the turn ends here), 7 when the keys expire (ms), 8 how long a turn not seen yet
--       waits to be seen (ms; 0: a turn is not waited for), 9 how many users follow who bought, 10.. those
--       users, then path tokens for the shoppers let in now (as many as may be)
-- Answers {user, path, turn end, ...} for the shoppers let in now.
--
-- A turn let in is not seen yet: its place in flight is kept until the later of its end and the wait for
-- it to be seen (ARGV 8), and the shopper's first look at their standing (status.lua) gives it its full
-- length from then, or ends it when the wait is over. Either way it ends, as a buy or a miss, and only
-- then lets the next in: the places in flight never pass the stock left times the overbooking.
local now, left, overbook = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local rate, turn, grace, nb = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[9])
local seen = tonumber(ARGV[8])
local first = 9 + nb -- the first path token
local r = redis.call('HMGET', KEYS[1], 'state', 'cursor', 'tokens', 'tokens_at')
if r[1] ~= 'drawn' then
  return {}
end
for i = 1, nb do
  local uid = ARGV[9 + i]
  redis.call('SREM', KEYS[10], uid)
  if redis.call('ZREM', KEYS[4], uid) == 1 then
    redis.call('HSET', KEYS[5], uid, 'bought')
    redis.call('HINCRBY', KEYS[1], 'bought', 1)
  end
end
for _, uid in ipairs(redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', now - grace)) do
  redis.call('ZREM', KEYS[4], uid)
  redis.call('SREM', KEYS[10], uid)
  if left <= 0 then
    -- Nothing to buy during the turn: not a miss. The place is kept, as the page says.
    redis.call('HDEL', KEYS[3], uid)
    redis.call('ZADD', KEYS[7], tonumber(redis.call('HGET', KEYS[8], uid)) or 0, uid)
  else
    redis.call('HSET', KEYS[5], uid, 'missed')
    redis.call('HINCRBY', KEYS[1], 'missed', 1)
  end
end

-- A token bucket of one second's worth: the rate holds across every instance that runs this step. Its
-- time only moves forward: an instance whose clock is behind cannot refill it.
local tokens = tonumber(r[3]) or rate
local at = tonumber(r[4]) or now
tokens = math.min(rate, tokens + math.max(now - at, 0) * rate / 1000)
at = math.max(at, now)
-- (a hair over the product: 100 × 1.15 is 114.99999 in floating point)
local room = math.floor(left * overbook + 1e-6) - redis.call('ZCARD', KEYS[4])
local k = math.min(room, math.floor(tokens), #ARGV - first)
local out = {}
if k > 0 then
  local ends = now + turn
  -- Settled no sooner than the turn's end, nor, while it is not seen, than the wait for it to be seen.
  local settle = ends
  if seen > 0 then
    settle = now + math.max(turn, seen)
  end
  local function letIn(uid)
    local path = ARGV[first + #out / 3 + 1]
    redis.call('HSET', KEYS[3], uid, path .. ':' .. ends)
    redis.call('ZADD', KEYS[4], settle, uid)
    redis.call('SADD', KEYS[6], uid)
    if seen > 0 then
      redis.call('SADD', KEYS[10], uid)
    end
    out[#out + 1] = uid
    out[#out + 1] = path
    out[#out + 1] = tostring(ends)
  end
  -- Those held first, by place: they were let in before the line moved past them. The room counts these
  -- let-ins ('readmitted', which only grows): a held shopper's page asks its own standing when it changes.
  local held = redis.call('ZRANGE', KEYS[7], 0, k - 1)
  for _, uid in ipairs(held) do
    redis.call('ZREM', KEYS[7], uid)
    letIn(uid)
  end
  if #held > 0 then
    redis.call('HINCRBY', KEYS[1], 'readmitted', #held)
  end
  local cursor = tonumber(r[2]) or 0
  local line = {}
  if #out / 3 < k then
    line = redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. cursor, '+inf', 'WITHSCORES', 'LIMIT', 0, k - #out / 3)
  end
  for i = 1, #line, 2 do
    letIn(line[i])
    cursor = tonumber(line[i + 1])
  end
  -- The line has no one left behind the cursor: the shadow line's turn, in drawn order. The cursor moves
  -- up to the highest place let in (no one waits in the line above it), so that a page whose place it
  -- reaches asks its standing; those below it are let in as the held are, and 'readmitted' tells them.
  if #out / 3 < k and redis.call('ZCOUNT', KEYS[2], '(' .. cursor, '+inf') == 0 then
    local shadow = redis.call('ZRANGE', KEYS[9], 0, k - #out / 3 - 1, 'WITHSCORES')
    for i = 1, #shadow, 2 do
      redis.call('ZREM', KEYS[9], shadow[i])
      letIn(shadow[i])
      cursor = math.max(cursor, tonumber(shadow[i + 1]))
    end
    if #shadow > 0 then
      redis.call('HINCRBY', KEYS[1], 'shadow_let_in', #shadow / 2)
      redis.call('HINCRBY', KEYS[1], 'readmitted', #shadow / 2)
    end
  end
  local n = #out / 3
  tokens = tokens - n
  redis.call('HSET', KEYS[1], 'cursor', cursor)
  redis.call('HINCRBY', KEYS[1], 'let_in', n)
end
-- The turn's length and the wait for a turn to be seen, for the shoppers' looks (status.lua).
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'tokens_at', at, 'turn_ms', turn, 'seen_ms', seen)
for i = 3, 7 do
  redis.call('PEXPIREAT', KEYS[i], ARGV[7])
end
redis.call('PEXPIREAT', KEYS[10], ARGV[7])
return out
