-- Reads a shopper's standing in an item's waiting room in one command: the room, the shopper's ticket,
-- place, turn and outcome, and the stock left in the room's shard.
-- KEYS: 1 room hash, 2 tickets, 3 late tickets, 4 places, 5 turns, 6 done, 7 the user's buyers set when it
--       shares the room's slot (else the room), 8 the first stock shard's sale hash, 9 the shadow line
-- ARGV: 1 user id, 2 '1' to check the buyers set, 3.. the room's fields to read
-- Answers {room fields..., ticket, late ticket, place, turn, done, bought ('1' or ''), stock left, shadow},
-- shadow being '' unless the shopper waits in the shadow line, else how many stand ahead of them: those the
-- line has yet to let in, and the shadowed before them.
local uid = ARGV[1]
local out = redis.call('HMGET', KEYS[1], unpack(ARGV, 3))
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
