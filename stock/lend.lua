-- Lends one unit of a stock shard to another shard whose buyer found it empty. The loan is recorded
-- here until the other shard has it (credit.lua, or the buy's own take.lua), so a unit is never lost
-- between two shards: a caller that dies after this leaves the loan for the settling job.
-- KEYS: 1 this shard's sale hash, 2 its loans hash (loan id → 'to shard:at ms')
-- ARGV: 1 loan id, 2 the borrowing shard, 3 now (ms)
-- Answers 1 lent, 0 this shard is empty too, -1 not loaded.
local left = tonumber(redis.call('HGET', KEYS[1], 'left'))
if not left then
  return -1
end
if left <= 0 then
  return 0
end
redis.call('HINCRBY', KEYS[1], 'left', -1)
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2] .. ':' .. ARGV[3])
return 1
