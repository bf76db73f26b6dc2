-- Takes one unit of an item for each of a batch of buyers on one stock shard, in order, or says why not:
-- the whole buy in one atomic step. A take of one buyer is a batch of one: the rules are written once.
-- KEYS: 1 the shard's sale hash, 2 its buyers set, 3 its order stream, 4 its set of units received from
--       other shards, then 4 + i: buyer i's purchase path
-- ARGV: 1 now (ms), then for buyer i (from 1): 4i - 2 user id, 4i - 1 path token, 4i order number,
--       4i + 1 a unit lent by another shard for this buy ('' for none)
-- Answers two fields per buyer, in order: {'queued', stock left in the shard after this buyer's unit},
-- {'empty', ''} when the shard is out of stock but the item has other shards (the path stays valid: the
-- caller borrows a unit and asks again), or {reason, ''}.
--
-- Every buyer is decided first, reading only, as if the buyers before had been written; then everything
-- is written. A batch that fails (a key of the wrong type, say) fails before it writes anything.
--
-- A path used up keeps, until it expires, the answer it got and the order number it got it for
-- ('!order:answer:left'): the same buy asked again (the Redis client resends a call whose reply came
-- late) gets the same answer, and takes nothing more; another order number finds the path used.
local now = tonumber(ARGV[1])
local n = (#ARGV - 1) / 4
local s = redis.call('HMGET', KEYS[1], 'left', 'starts', 'ends', 'price', 'activity', 'shards')
local kinds = { 'set', 'stream', 'set' } -- of KEYS[2], KEYS[3], KEYS[4]
for i, want in ipairs(kinds) do
  local t = redis.call('TYPE', KEYS[i + 1])['ok']
  if t ~= 'none' and t ~= want then
    return redis.error_reply('WRONGTYPE ' .. KEYS[i + 1] .. ' is a ' .. t)
  end
end
local left = tonumber(s[1])
local split = (tonumber(s[6]) or 1) > 1

local out = {}
local loans, paths, takes = {}, {}, {} -- what the write pass writes
local lent, used = {}, {} -- the batch's own effects on what later buyers read
for i = 1, n do
  local uid, token, orderNo, loan = ARGV[4 * i - 2], ARGV[4 * i - 1], ARGV[4 * i], ARGV[4 * i + 1]
  local pathKey = KEYS[4 + i]
  -- A lent unit lands here first, whatever comes next, and once however often it is asked: it is never
  -- lost between the shards, even if this buy is refused.
  if loan ~= '' and left and not lent[loan] and redis.call('SISMEMBER', KEYS[4], loan) == 0 then
    lent[loan] = true
    loans[#loans + 1] = loan
    left = left + 1
  end
  local answer, again
  -- The path is this buyer's, for this item, unexpired.
  local p = not used[pathKey] and redis.call('GET', pathKey)
  local sep = p and string.find(p, ':', 1, true)
  if p and string.sub(p, 1, 1) == '!' then
    local o, a, l = string.match(p, '^!([^:]*):([^:]*):(.*)$')
    if o == orderNo then
      again = {a, l} -- this very buy, asked again
    end
    answer = 'invalid_path'
  elseif not sep or string.sub(p, 1, sep - 1) ~= token or now >= tonumber(string.sub(p, sep + 1)) then
    answer = 'invalid_path'
  elseif not left then
    answer = 'not_found'
  elseif now < tonumber(s[2]) then
    answer = 'not_started'
  elseif now >= tonumber(s[3]) then
    answer = 'ended'
  elseif redis.call('SISMEMBER', KEYS[2], uid) == 1 then
    -- (A buyer reaches this once a batch: the first answer past the path check uses the path up.)
    answer = 'already_bought'
  elseif left <= 0 then
    answer = split and 'empty' or 'sold_out'
  else
    answer = 'queued'
    left = left - 1
    takes[#takes + 1] = {uid, orderNo}
  end
  local leftText = answer == 'queued' and tostring(left) or ''
  -- The path is used up by any answer but 'empty' (and a path that is not this buyer's is not touched).
  if answer ~= 'invalid_path' and answer ~= 'empty' then
    used[pathKey] = true
    paths[#paths + 1] = {pathKey, '!' .. orderNo .. ':' .. answer .. ':' .. leftText}
  end
  if again then
    answer, leftText = again[1], again[2]
  end
  out[#out + 1] = answer
  out[#out + 1] = leftText
end

-- Stock, the buyers' marks and the order messages change together or not at all: no message can be
-- lost between taking stock and queueing the order. (A marked buyer with no result yet is "queued".)
for _, p in ipairs(paths) do
  redis.call('SET', p[1], p[2], 'KEEPTTL')
end
if #loans > 0 then
  redis.call('SADD', KEYS[4], unpack(loans))
end
if #loans ~= #takes then
  redis.call('HINCRBY', KEYS[1], 'left', #loans - #takes)
end
for _, t in ipairs(takes) do
  redis.call('SADD', KEYS[2], t[1])
  -- The message's field names are filled in from message.go when the script loads.
  redis.call('XADD', KEYS[3], '*', '{{.OrderNo}}', t[2], '{{.UserID}}', t[1], '{{.Price}}', s[4],
    '{{.ActivityID}}', s[5], '{{.At}}', ARGV[1])
end
return out
