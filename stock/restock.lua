-- Gives one unit of a cancelled order back on sale, once per order however often it is asked (the job
-- retries until the database records it done). The buyer stays marked: one per user holds for the
-- whole sale.
-- KEYS: 1 sale hash, 2 set of orders whose units came back. ARGV: 1 order number.
-- Answers the stock left after, -2 when this order's unit came back before, or -1 when the sale is not
-- loaded (preheat then loads it from the database, which already counts the unit as back).
if redis.call('EXISTS', KEYS[1]) == 0 then
  return -1
end
if redis.call('SADD', KEYS[2], ARGV[1]) == 0 then
  return -2
end
-- The set lives as long as the sale (a sale over and drained is retired: its keys expire).
local ttl = redis.call('PTTL', KEYS[1])
if ttl > 0 then
  redis.call('PEXPIRE', KEYS[2], ttl)
end
return redis.call('HINCRBY', KEYS[1], 'left', 1)
