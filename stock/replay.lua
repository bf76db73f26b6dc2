-- Takes again, on a master that lost it, a unit an instance of the shop answered taken (a journal entry:
-- see journal.go): after a failover the promoted replica may lack the last takes the old master
-- acknowledged, or had its replica acknowledge, before it was replaced.
-- KEYS: 1 the buyer's home shard's sale hash, 2 its buyers set, 3 its order stream, 4 its paths hash,
--       5 its set of units received from other shards, 6 its results hash
-- ARGV: 1 user id, 2 order number, 3 the take's time (ms, as the message had it), 4 now (ms), 5 a unit
--       another shard lent for this replay (lend.lua), or '' for none, 6 the result that says this take
--       was found lost (journal.go)
-- Answers 'kept' when the buyer is marked already (the take survived, or the books' check marked the
-- buyer from the database) or an earlier replay told them this take was lost (they were told they may
-- buy again: not given an order after all, nor counted lost twice), 'restored' when the unit is taken and the order queued again, 'not_found'
-- when the sale is not loaded here, 'sold_out' when the shard has no unit left to take (the caller
-- borrows from the item's other shards, and with none left, a promise broken, which it logs and counts).
local uid, orderNo, at, loan = ARGV[1], ARGV[2], ARGV[3], ARGV[5]
local s = redis.call('HMGET', KEYS[1], 'left', 'price', 'activity')
local left = tonumber(s[1])
-- A lent unit lands here first, whatever comes next, and once however often it is asked (as take.lua
-- lands a buy's): it is never lost between the shards.
if loan ~= '' and left and redis.call('SADD', KEYS[5], loan) == 1 then
  redis.call('HINCRBY', KEYS[1], 'left', 1)
  left = left + 1
end
if redis.call('SISMEMBER', KEYS[2], uid) == 1 or redis.call('HGET', KEYS[6], uid) == ARGV[6] then
  return 'kept'
end
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
