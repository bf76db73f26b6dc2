-- Settles an order message that will not become a new order, exactly once: acknowledges it and, only if
-- this call is the one that acknowledged it, gives its unit back and sets the buyer's result. A message
-- delivered again after it was settled changes nothing.
-- KEYS: 1 sale hash, 2 buyers set, 3 results hash, 4 order stream
-- ARGV: 1 stream entry id, 2 user id, 3 '1' to give the unit back, 4 the buyer's new result ('' keeps it),
--       5 '1' to let the buyer buy again
-- The consumer group's name, {{.Group}}, is filled in from message.go when the script loads.
if redis.call('XACK', KEYS[4], '{{.Group}}', ARGV[1]) == 0 then
  return 0
end
redis.call('XDEL', KEYS[4], ARGV[1])
if ARGV[3] == '1' and redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('HINCRBY', KEYS[1], 'left', 1)
end
if ARGV[5] == '1' then
  redis.call('SREM', KEYS[2], ARGV[2])
end
if ARGV[4] ~= '' then
  redis.call('HSET', KEYS[3], ARGV[2], ARGV[4])
end
return 1
