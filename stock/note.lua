-- Keeps a join of a line as evidence, once: the same account's join from the same device and prefix with
-- the same outcome is kept only the first time, and an account's first few distinct traces only, so that
-- no one account can flood the evidence (and push others' out of its bounded stream).
-- KEYS: 1 the joins (a stream), 2 the traces seen (a set), 3 each account's traces kept (a hash)
-- ARGV: 1 user, 2 device, 3 prefix, 4 refusal, 5 the stream's bound, 6 when the keys expire (ms),
--       7 the traces kept per account at most
-- Answers 1 when kept, 0 when not.
local trace = ARGV[1] .. '|' .. ARGV[2] .. '|' .. ARGV[3] .. '|' .. ARGV[4]
if redis.call('SISMEMBER', KEYS[2], trace) == 1 then
  return 0
end
if tonumber(redis.call('HGET', KEYS[3], ARGV[1]) or '0') >= tonumber(ARGV[7]) then
  return 0
end
redis.call('HINCRBY', KEYS[3], ARGV[1], 1)
redis.call('SADD', KEYS[2], trace)
redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[5], '*', 'u', ARGV[1], 'd', ARGV[2], 'p', ARGV[3], 'r', ARGV[4])
for i = 1, 3 do
  redis.call('PEXPIREAT', KEYS[i], ARGV[6])
end
return 1
