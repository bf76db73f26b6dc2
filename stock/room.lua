-- Opens an item's waiting room, once: a later call changes nothing (the seed, once published, stays),
-- except where the seed is kept in PostgreSQL (ARGV[7] 'kept'): a room still open whose hash is not the
-- kept one's takes the kept seed (stock/seeds.go says why).
-- KEYS: 1 room hash
-- ARGV: 1 seed ('' when it is kept in PostgreSQL: Redis holds it from the draw's close on), 2 its SHA-256
-- (hex), 3 opens (ms), 4 starts (ms), 5 ends (ms), 6 when the keys expire (ms), 7 'kept' or ''
-- Answers {what, the room's hash before}: 'opened' now, 'open' already (with the same hash, or nothing
-- kept), 'replaced' (open with another hash: it has the kept one now), 'differs' (another hash, and the
-- draw is closed: left as it is).
local r = redis.call('HMGET', KEYS[1], 'state', 'seed_hash')
if r[1] then
  if ARGV[7] ~= 'kept' or r[2] == ARGV[2] then
    return {'open', r[2] or ''}
  end
  if r[1] ~= 'open' then
    return {'differs', r[2] or ''}
  end
  redis.call('HSET', KEYS[1], 'seed', ARGV[1], 'seed_hash', ARGV[2])
  return {'replaced', r[2] or ''}
end
redis.call('HSET', KEYS[1], 'seed', ARGV[1], 'seed_hash', ARGV[2], 'opens', ARGV[3], 'starts', ARGV[4],
  'ends', ARGV[5], 'state', 'open', 'tail', 0, 'cursor', 0, 'entrants', 0, 'let_in', 0, 'bought', 0, 'missed', 0)
redis.call('PEXPIREAT', KEYS[1], ARGV[6])
return {'opened', ''}
