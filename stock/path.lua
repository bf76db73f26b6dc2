-- Issues a purchase path to a buyer who may still buy: the sale is open, the buyer has not bought, stock is left.
-- KEYS: 1 sale hash, 2 buyers set, 3 the buyer's purchase path
-- ARGV: 1 user id, 2 path token, 3 now (ms), 4 validity (ms)
-- Answers {'ok'} or {reason}.
local now, valid = tonumber(ARGV[3]), tonumber(ARGV[4])
local s = redis.call('HMGET', KEYS[1], 'left', 'starts', 'ends')
if not s[1] then
  return {'not_found'}
end
if now < tonumber(s[2]) then
  return {'not_started'}
end
if now >= tonumber(s[3]) then
  return {'ended'}
end
if redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 1 then
  return {'already_bought'}
end
if tonumber(s[1]) <= 0 then
  return {'sold_out'}
end
-- The path carries its own expiry, checked against the app's clock; Redis drops the key a little later.
redis.call('SET', KEYS[3], ARGV[2] .. ':' .. (now + valid), 'PX', valid + 60000)
return {'ok'}
