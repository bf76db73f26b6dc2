-- One entrant per delivery address and phone in an activity (its one_per_address rule).
-- KEYS[1]: the activity's claims (a hash: a place's or a phone's key -> the user who gave it first)
-- KEYS[2]: how many keys each user has claimed in the activity (a hash: user -> count)
-- ARGV[1]: the user; ARGV[2]: when the claims may go (unix seconds); ARGV[3]: "check" to look without
-- claiming, "claim" to claim, "owned" to ask whether every key is the user's already; ARGV[4]: the most
-- keys one user may claim; ARGV[5..]: the keys the user gives.
-- Answers 1 when every key is free or the user's (claiming: now the user's), 0 when another user gave
-- one, 2 when claiming would take the user past the most keys, 3 (owned) when a key is not the user's.
local fresh = 0
for i = 5, #ARGV do
  local owner = redis.call('HGET', KEYS[1], ARGV[i])
  if owner and owner ~= ARGV[1] then
    return 0
  end
  if not owner then
    if ARGV[3] == 'owned' then
      return 3
    end
    fresh = fresh + 1
  end
end
if ARGV[3] == 'claim' and fresh > 0 then
  local had = tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0')
  if had + fresh > tonumber(ARGV[4]) then
    return 2
  end
  for i = 5, #ARGV do
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[1])
  end
  redis.call('HINCRBY', KEYS[2], ARGV[1], fresh)
  redis.call('EXPIREAT', KEYS[1], tonumber(ARGV[2]))
  redis.call('EXPIREAT', KEYS[2], tonumber(ARGV[2]))
end
return 1
