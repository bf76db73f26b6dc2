-- Issues a purchase path to a buyer who may still buy: the sale is open, the buyer has not bought, stock
-- is left (in the buyer's shard, unless ARGV[5] says the caller saw stock in another).
-- KEYS: 1 the buyer's shard's sale hash, 2 its buyers set, 3 the buyer's purchase path
-- ARGV: 1 user id, 2 path token, 3 now (ms), 4 validity (ms), 5 '1' to skip the stock check
-- Answers {'ok'}, {'empty'} when the shard is out of stock but the item has other shards, or {reason}.
local now, valid = tonumber(ARGV[3]), tonumber(ARGV[4])
local s = redis.call('HMGET', KEYS[1], 'left', 'starts', 'ends', 'shards')
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
if ARGV[5] ~= '1' and tonumber(s[1]) <= 0 then
  if (tonumber(s[4]) or 1) > 1 then
    return {'empty'}
  end
  return {'sold_out'}
end
-- The path carries its own expiry, checked against the app's clock; Redis drops the key a little later.
redis.call('SET', KEYS[3], ARGV[2] .. ':' .. (now + valid), 'PX', valid + 60000)
return {'ok'}
