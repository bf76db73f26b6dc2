-- Reads a shopper's standing in an item's waiting room in one command: the room, the shopper's ticket,
-- place, turn and outcome, and the stock left in the room's shard. Asked by the shopper's own page (a
-- look: ARGV 3 is now), it is also the moment their turn is seen: a turn let in while the page was not
-- looking (a tab in the background, whose timers the browser slows to about once a minute) gets its full
-- length from this look, if the look comes within the wait for it (admit.lua keeps its place in flight
-- that long); a look after the wait finds the turn over.
-- KEYS: 1 room hash, 2 tickets, 3 late tickets, 4 places, 5 turns, 6 done, 7 the user's buyers set when it
--       shares the room's slot (else the room), 8 the first stock shard's sale hash, 9 the shadow line,
--       10 in flight (zset: user by when the turn is settled), 11 the turns not seen yet, 12 the user's
--       paths hash when it shares the room's slot (else the room), 13 let in and their paths not yet written
-- ARGV: 1 user id, 2 '1' to check the buyers set (and the paths hash), 3 now (ms) for a look, '' for a
--       read that sees nothing (an appeal, a test), 4.. the room's fields to read
-- Answers {room fields..., ticket, late ticket, place, turn, done, bought ('1' or ''), stock left, shadow},
-- shadow being '' unless the shopper waits in the shadow line, else how many stand ahead of them: those the
-- line has yet to let in, and the shadowed before them.
local uid = ARGV[1]
if ARGV[3] ~= '' and redis.call('SISMEMBER', KEYS[11], uid) == 1 then
  local now = tonumber(ARGV[3])
  local turn = redis.call('HGET', KEYS[5], uid)
  local settle = tonumber(redis.call('ZSCORE', KEYS[10], uid))
  local path, ends = string.match(turn or '', '^([^:]+):(%d+)$')
  local length = tonumber(redis.call('HGET', KEYS[1], 'turn_ms'))
  if path and settle and length and now <= settle then
    -- Seen within the wait: the turn runs its full length from now (never less than it had).
    redis.call('SREM', KEYS[11], uid)
    local later = math.max(tonumber(ends), now + length)
    local value = path .. ':' .. string.format('%d', later)
    redis.call('HSET', KEYS[5], uid, value)
    redis.call('ZADD', KEYS[10], later, uid)
    -- The path the buy checks: written again here when it shares the room's slot and this turn's path is
    -- written there, unused; else (in another shard, or not written yet) the next step of the line writes
    -- it from the turn. (A used path keeps its answer: '!order:answer:left', see take.lua.)
    if ARGV[2] == '1' and string.match(redis.call('HGET', KEYS[12], uid) or '', '^([^:!]+):') == path then
      redis.call('HSET', KEYS[12], uid, value)
      -- Its hash lives a minute past the turn, as Line.writePaths keeps it (lengthened, never shortened).
      local ttl = redis.call('PTTL', KEYS[12])
      local want = later + 60000 - now
      if ttl >= 0 and ttl < want then
        redis.call('PEXPIRE', KEYS[12], want)
      end
    else
      redis.call('SADD', KEYS[13], uid)
    end
  end
  -- Seen after the wait: the turn is over, and the next step of the line settles it (and forgets that it
  -- was not seen). Until then a resume may still move the wait past a pause, and a later look count.
end
local out = redis.call('HMGET', KEYS[1], unpack(ARGV, 4))
out[#out + 1] = redis.call('HGET', KEYS[2], uid) or ''
out[#out + 1] = redis.call('HGET', KEYS[3], uid) or ''
out[#out + 1] = redis.call('HGET', KEYS[4], uid) or ''
out[#out + 1] = redis.call('HGET', KEYS[5], uid) or ''
out[#out + 1] = redis.call('HGET', KEYS[6], uid) or ''
out[#out + 1] = (ARGV[2] == '1' and redis.call('SISMEMBER', KEYS[7], uid) == 1) and '1' or ''
out[#out + 1] = redis.call('HGET', KEYS[8], 'left') or ''
local rank = redis.call('ZRANK', KEYS[9], uid)
if rank then
  local r = redis.call('HMGET', KEYS[1], 'tail', 'cursor')
  local tail, cursor = tonumber(r[1]) or 0, tonumber(r[2]) or 0
  local above = redis.call('ZCOUNT', KEYS[9], '(' .. cursor, '+inf')
  out[#out + 1] = tostring(math.max(tail - cursor - above, 0) + rank)
else
  out[#out + 1] = ''
end
return out
