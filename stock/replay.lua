-- Takes again, on a master that lost it, a unit an instance of the shop answered taken (a journal entry:
-- see journal.go): after a failover the promoted replica may lack the last takes the old master
-- acknowledged, or had its replica acknowledge, before it was replaced.
-- KEYS: 1 the shard's sale hash, 2 its buyers set, 3 its order stream, 4 its paths hash
-- ARGV: 1 user id, 2 order number, 3 the take's time (ms, as the message had it), 4 now (ms)
-- Answers 'kept' when the buyer is marked already (the take survived, or the books' check marked the
-- buyer from the database), 'restored' when the unit is taken and the order queued again, 'not_found'
-- when the sale is not loaded here, 'sold_out' when no unit is left to take: a promise broken, which the
-- caller logs and counts.
local uid, orderNo, at = ARGV[1], ARGV[2], ARGV[3]
if redis.call('SISMEMBER', KEYS[2], uid) == 1 then
  return 'kept'
end
local s = redis.call('HMGET', KEYS[1], 'left', 'price', 'activity')
local left = tonumber(s[1])
if not left then
  return 'not_found'
end
if left <= 0 then
  return 'sold_out'
end
left = left - 1
redis.call('HINCRBY', KEYS[1], 'left', -1)
redis.call('SADD', KEYS[2], uid)
-- The path answers as it did: this order, queued (a resent buy gets the same answer, takes nothing).
redis.call('HSET', KEYS[4], uid, '!' .. orderNo .. ':queued:' .. string.format('%d', left))
redis.call('XADD', KEYS[3], '*', '{{.OrderNo}}', orderNo, '{{.UserID}}', uid, '{{.Price}}', s[2],
  '{{.ActivityID}}', s[3], '{{.At}}', at)
return 'restored'
