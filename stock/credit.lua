-- Credits a lent unit to the borrowing shard, once per loan however often it is asked.
-- KEYS: 1 the borrowing shard's sale hash, 2 its set of received loans. ARGV: 1 loan id.
-- Answers 1 credited now, 0 credited before, -1 the shard is not loaded (try again after preheating).
if redis.call('EXISTS', KEYS[1]) == 0 then
  return -1
end
if redis.call('SADD', KEYS[2], ARGV[1]) == 0 then
  return 0
end
redis.call('HINCRBY', KEYS[1], 'left', 1)
return 1
