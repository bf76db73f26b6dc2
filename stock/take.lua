-- Takes one unit of an item for a buyer, or says why not: the whole buy in one atomic step.
-- KEYS: 1 sale hash, 2 buyers set, 3 the buyer's purchase path, 4 order stream
-- ARGV: 1 user id, 2 path token, 3 now (ms), 4 order number
-- Answers {'queued', stock left} or {reason}.
local uid, now = ARGV[1], tonumber(ARGV[3])

-- The path is this buyer's, for this item, unexpired; it is used up here, whatever comes next.
local p = redis.call('GET', KEYS[3])
if not p then
  return {'invalid_path'}
end
local sep = string.find(p, ':', 1, true)
if not sep or string.sub(p, 1, sep - 1) ~= ARGV[2] or now >= tonumber(string.sub(p, sep + 1)) then
  return {'invalid_path'}
end
redis.call('DEL', KEYS[3])

local s = redis.call('HMGET', KEYS[1], 'left', 'starts', 'ends', 'price', 'activity')
if not s[1] then
  return {'not_found'}
end
if now < tonumber(s[2]) then
  return {'not_started'}
end
if now >= tonumber(s[3]) then
  return {'ended'}
end
if redis.call('SISMEMBER', KEYS[2], uid) == 1 then
  return {'already_bought'}
end
local left = tonumber(s[1])
if left <= 0 then
  return {'sold_out'}
end

-- Stock, the buyer's mark and the order message change together or not at all: no message can be lost
-- between taking stock and queueing the order. (A marked buyer with no result yet is "queued".)
redis.call('HINCRBY', KEYS[1], 'left', -1)
redis.call('SADD', KEYS[2], uid)
redis.call('XADD', KEYS[4], '*', 'order_no', ARGV[4], 'user_id', uid, 'price', s[4], 'activity_id', s[5], 'at', ARGV[3])
return {'queued', tostring(left - 1)}
