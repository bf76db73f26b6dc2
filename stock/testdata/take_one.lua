-- The take as it was before group commit, one buyer a call: the reference the batch is held to (batch_test.go).
-- (Changed since only where the paths live: a field per buyer in the shard's paths hash, not a key each.)
-- Takes one unit of an item for a buyer from the buyer's stock shard, or says why not: the whole buy in
-- one atomic step.
-- KEYS: 1 the shard's sale hash, 2 its buyers set, 3 the shard's paths hash, 4 its order stream,
--       5 its set of units received from other shards
-- ARGV: 1 user id, 2 path token, 3 now (ms), 4 order number, 5 a unit lent by another shard for this
--       buy ('' for none)
-- Answers {'queued', stock left in the shard}, {'empty'} when the shard is out of stock but the item
-- has other shards (the path stays valid: the caller borrows a unit and asks again), or {reason}.
local uid, now = ARGV[1], tonumber(ARGV[3])
local s = redis.call('HMGET', KEYS[1], 'left', 'starts', 'ends', 'price', 'activity', 'shards')

-- A lent unit lands here first, whatever comes next, and once however often it is asked: it is never
-- lost between the shards, even if this buy is refused.
local left = tonumber(s[1])
if ARGV[5] ~= '' and left and redis.call('SADD', KEYS[5], ARGV[5]) == 1 then
  left = redis.call('HINCRBY', KEYS[1], 'left', 1)
end

-- The path is this buyer's, for this item, unexpired.
local p = redis.call('HGET', KEYS[3], uid)
if not p then
  return {'invalid_path'}
end
local sep = string.find(p, ':', 1, true)
if not sep or string.sub(p, 1, sep - 1) ~= ARGV[2] or now >= tonumber(string.sub(p, sep + 1)) then
  return {'invalid_path'}
end

local function refuse(why)
  redis.call('HDEL', KEYS[3], uid) -- the path is used up by any answer but 'empty'
  return {why}
end
if not left then
  return refuse('not_found')
end
if now < tonumber(s[2]) then
  return refuse('not_started')
end
if now >= tonumber(s[3]) then
  return refuse('ended')
end
if redis.call('SISMEMBER', KEYS[2], uid) == 1 then
  return refuse('already_bought')
end
if left <= 0 then
  if (tonumber(s[6]) or 1) > 1 then
    return {'empty'}
  end
  return refuse('sold_out')
end

-- Stock, the buyer's mark and the order message change together or not at all: no message can be lost
-- between taking stock and queueing the order. (A marked buyer with no result yet is "queued".)
redis.call('HDEL', KEYS[3], uid)
redis.call('HINCRBY', KEYS[1], 'left', -1)
redis.call('SADD', KEYS[2], uid)
-- The message's field names are filled in from message.go when the script loads.
redis.call('XADD', KEYS[4], '*', '{{.OrderNo}}', ARGV[4], '{{.UserID}}', uid, '{{.Price}}', s[4],
  '{{.ActivityID}}', s[5], '{{.At}}', ARGV[3])
return {'queued', tostring(left - 1)}
