-- One entrant per delivery address and phone in an activity (its one_per_address rule).
-- KEYS[1]: the activity's claims (a hash: a place's or a phone's key -> the user who gave it first)
-- ARGV[1]: the user; ARGV[2]: when the claims may go (unix seconds); ARGV[3]: "check" to look without
-- claiming, "claim" to claim; ARGV[4..]: the keys the user gives.
-- Answers 1 when every key is free or already the user's (and, claiming, now the user's), else 0.
for i = 4, #ARGV do
  local owner = redis.call('HGET', KEYS[1], ARGV[i])
  if owner and owner ~= ARGV[1] then
    return 0
  end
end
if ARGV[3] == 'claim' then
  for i = 4, #ARGV do
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[1])
  end
  redis.call('EXPIREAT', KEYS[1], tonumber(ARGV[2]))
end
return 1
