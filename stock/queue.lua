-- Joins a shopper to an item's waiting room, or answers the place they have.
-- KEYS: 1 room hash, 2 tickets (joined before the start: user → ticket), 3 late tickets, 4 positions
--       (user → place in line), 5 the line (zset: user by place), 6 done (user → bought|missed),
--       7 turns (user → path:until), 8 the user's buyers set when it shares the room's slot (else the room),
--       9 in flight (zset: user by when the turn is settled), 10 the turns not seen yet
-- ARGV: 1 user id, 2 a new ticket, 3 now (ms), 4 '1' to check the buyers set, 5 when the keys expire (ms),
--       6 the turns' grace (ms): a turn this long past its end is missed, settled or not
-- Answers {'no_room'} when the room is not open in Redis (the caller opens it and asks again),
-- {'already_bought'}, or {'joined', ticket, place or ''}.
local uid, now = ARGV[1], tonumber(ARGV[3])
local r = redis.call('HMGET', KEYS[1], 'state', 'starts', 'tail')
if not r[1] then
  return {'no_room'}
end
if ARGV[4] == '1' and redis.call('SISMEMBER', KEYS[8], uid) == 1 then
  return {'already_bought'}
end
local done = redis.call('HGET', KEYS[6], uid)
if done == 'bought' then
  return {'already_bought'}
end
local state = r[1]
if state == 'open' then
  if now < tonumber(r[2]) then
    -- Before the start: into the draw, once; joining again keeps the first ticket.
    redis.call('HSETNX', KEYS[2], uid, ARGV[2])
    redis.call('PEXPIREAT', KEYS[2], ARGV[5])
    return {'joined', redis.call('HGET', KEYS[2], uid), ''}
  end
  -- The first to come after the start closes the draw: who joins from now on goes behind it.
  local n = redis.call('HLEN', KEYS[2])
  redis.call('HSET', KEYS[1], 'state', 'drawing', 'entrants', n, 'tail', n)
end

local ticket = redis.call('HGET', KEYS[2], uid) or redis.call('HGET', KEYS[3], uid)
local place = redis.call('HGET', KEYS[4], uid)
-- A turn past its grace that the line has not settled yet is missed now, as the page was told.
local ends = redis.call('ZSCORE', KEYS[9], uid)
if ends and tonumber(ends) + tonumber(ARGV[6]) < now then
  redis.call('ZREM', KEYS[9], uid)
  redis.call('SREM', KEYS[10], uid)
  redis.call('HINCRBY', KEYS[1], 'missed', 1)
  done = 'missed'
end
if place and done ~= 'missed' then
  return {'joined', ticket, place}
end
if ticket and not place then
  return {'joined', ticket, ''} -- in the draw, placed when it is written
end
-- New after the start, or back after a missed turn: the back of the line.
if not ticket then
  ticket = ARGV[2]
  redis.call('HSET', KEYS[3], uid, ticket)
end
place = redis.call('HINCRBY', KEYS[1], 'tail', 1)
redis.call('HSET', KEYS[4], uid, place)
redis.call('ZADD', KEYS[5], place, uid)
redis.call('HDEL', KEYS[6], uid)
redis.call('HDEL', KEYS[7], uid)
for i = 3, 5 do
  redis.call('PEXPIREAT', KEYS[i], ARGV[5])
end
return {'joined', ticket, tostring(place)}
