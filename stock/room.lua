-- Opens an item's waiting room, once: a later call changes nothing (the seed, once published, stays).
-- KEYS: 1 room hash
-- ARGV: 1 seed, 2 its SHA-256 (hex), 3 opens (ms), 4 starts (ms), 5 ends (ms), 6 when the keys expire (ms)
-- Answers 1 opened now, 0 open already.
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
redis.call('HSET', KEYS[1], 'seed', ARGV[1], 'seed_hash', ARGV[2], 'opens', ARGV[3], 'starts', ARGV[4],
  'ends', ARGV[5], 'state', 'open', 'tail', 0, 'cursor', 0, 'entrants', 0, 'let_in', 0, 'bought', 0, 'missed', 0)
redis.call('PEXPIREAT', KEYS[1], ARGV[6])
return 1
