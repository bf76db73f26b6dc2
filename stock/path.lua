-- Issues purchase paths to a batch of buyers of one stock shard who may still buy: the sale is open, the
-- buyer has not bought, stock is left (in the buyer's shard, unless the caller saw stock in another). A
-- path for one buyer is a batch of one: the rules are written once.
-- KEYS: 1 the shard's sale hash, 2 its buyers set, 3 its paths hash (a field per buyer)
-- ARGV: 1 now (ms), 2 validity (ms), then for buyer i (from 1): 3i user id, 3i + 1 path token,
--       3i + 2 '1' to skip the stock check
-- Answers, per buyer in order: 'ok', 'empty' when the shard is out of stock but the item has other
-- shards, or a reason. Issuing writes only each buyer's own path: no buyer's answer depends on another's.
-- The paths hash lives a minute past the validity of the last path written: lengthened, never shortened.
local now, valid = tonumber(ARGV[1]), tonumber(ARGV[2])
local n = (#ARGV - 2) / 3
local s = redis.call('HMGET', KEYS[1], 'left', 'starts', 'ends', 'shards')
local t = redis.call('TYPE', KEYS[2])['ok']
if t ~= 'none' and t ~= 'set' then
  return redis.error_reply('WRONGTYPE ' .. KEYS[2] .. ' is a ' .. t)
end
local out, paths = {}, {}
for i = 1, n do
  local uid, token, anyStock = ARGV[3 * i], ARGV[3 * i + 1], ARGV[3 * i + 2]
  local answer = 'ok'
  if not s[1] then
    answer = 'not_found'
  elseif now < tonumber(s[2]) then
    answer = 'not_started'
  elseif now >= tonumber(s[3]) then
    answer = 'ended'
  elseif redis.call('SISMEMBER', KEYS[2], uid) == 1 then
    answer = 'already_bought'
  elseif anyStock ~= '1' and tonumber(s[1]) <= 0 then
    answer = (tonumber(s[4]) or 1) > 1 and 'empty' or 'sold_out'
  else
    -- The path carries its own expiry, checked against the app's clock; Redis drops the hash a little later.
    paths[#paths + 1] = uid
    paths[#paths + 1] = token .. ':' .. string.format('%d', now + valid)
  end
  out[i] = answer
end
if #paths > 0 then
  redis.call('HSET', KEYS[3], unpack(paths))
  if redis.call('PTTL', KEYS[3]) < valid + 60000 then
    redis.call('PEXPIRE', KEYS[3], valid + 60000)
  end
end
return out
