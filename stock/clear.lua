-- Records an admin's decision on a flagged cluster's entrants. Cleared: each leaves the shadow line for
-- its drawn place, in the line when the line has not reached it, else held (let in first, as a turn the
-- line passed). Confirmed: each stays where it is.
-- KEYS: 1 room hash, 2 the shadow line (user by place), 3 the line, 4 held, 5 places, 6 cleared,
--       7 confirmed
-- ARGV: 1 'cleared' or 'confirmed', 2 when the sets expire (ms), 3.. the users
-- Answers how many left the shadow line.
local moved = 0
local cursor = tonumber(redis.call('HGET', KEYS[1], 'cursor')) or 0
for i = 3, #ARGV do
  local uid = ARGV[i]
  if ARGV[1] == 'confirmed' then
    redis.call('SADD', KEYS[7], uid)
  else
    redis.call('SADD', KEYS[6], uid) -- confirmed stays recorded: the report counts both decisions
    if redis.call('ZREM', KEYS[2], uid) == 1 then
      local place = tonumber(redis.call('HGET', KEYS[5], uid)) or 0
      if place > cursor then
        redis.call('ZADD', KEYS[3], place, uid)
      else
        redis.call('ZADD', KEYS[4], place, uid)
      end
      moved = moved + 1
    end
  end
end
redis.call('PEXPIREAT', KEYS[6], ARGV[2])
redis.call('PEXPIREAT', KEYS[7], ARGV[2])
return moved
