-- Takes one unit of an item for each of a batch of buyers on one stock shard, in order, or says why not:
-- the whole buy in one atomic step. A take of one buyer is a batch of one: the rules are written once.
-- KEYS: 1 the shard's sale hash, 2 its buyers set, 3 its order stream, 4 its set of units received from
--       other shards, 5 its paths hash (a field per buyer: see Keys.Paths)
-- ARGV: 1 now (ms), then for buyer i (from 1): 4i - 2 user id, 4i - 1 path token, 4i order number,
--       4i + 1 a unit lent by another shard for this buy ('' for none)
-- Answers two fields per buyer, in order: {'queued', stock left in the shard after this buyer's unit},
-- {'empty', ''} when the shard is out of stock but the item has other shards (the path stays valid: the
-- caller borrows a unit and asks again), or {reason, ''}.
--
-- Every buyer is decided first, reading only, as if the buyers before had been written; then everything
-- is written. A batch that fails (a key of the wrong type, say) fails before it writes anything. The
-- buyers' paths and marks are read in one command each, and written in one: what a buyer costs Redis
-- beyond that is its order message (scripts/take-cost.sh counts the instructions; docs/performance.md
-- has the counts).
--
-- A path used up keeps, until it expires, the answer it got and the order number it got it for
-- ('!order:answer:left'): the same buy asked again (the Redis client resends a call whose reply came
-- late) gets the same answer, and takes nothing more; another order number finds the path used.
local now, nowText = tonumber(ARGV[1]), ARGV[1]
local n = (#ARGV - 1) / 4
local s = redis.call('HMGET', KEYS[1], 'left', 'starts', 'ends', 'price', 'activity', 'shards')
local kinds = { 'set', 'stream', 'set', 'hash' } -- of KEYS[2] to KEYS[5]
for i, want in ipairs(kinds) do
  local t = redis.call('TYPE', KEYS[i + 1])['ok']
  if t ~= 'none' and t ~= want then
    return redis.error_reply('WRONGTYPE ' .. KEYS[i + 1] .. ' is a ' .. t)
  end
end
local left = tonumber(s[1])
local closed -- why no buyer with a good path may buy now; nil while the sale is open
if not left then
  closed = 'not_found'
elseif now < tonumber(s[2]) then
  closed = 'not_started'
elseif now >= tonumber(s[3]) then
  closed = 'ended'
end
local split = (tonumber(s[6]) or 1) > 1

-- Whether a path's expiry (ms, as text) is later than now: compared as text while both have as many
-- digits (until the year 2286), which spares a number conversion a buyer.
local function later(ms)
  if #ms == #nowText then
    return ms > nowText
  end
  return now < tonumber(ms)
end

local uids = {}
for i = 1, n do
  uids[i] = ARGV[4 * i - 2]
end
local paths = redis.call('HMGET', KEYS[5], unpack(uids))
local bought = redis.call('SMISMEMBER', KEYS[2], unpack(uids))

local out = {}
-- What the write pass writes: loans landed, used paths (field, value, …), and the takes.
local loans, used, takeUids, takeOrders = {}, {}, {}, {}
local lent, usedBy = {}, {} -- the batch's own effects on what later buyers read
for i = 1, n do
  local a = 4 * i - 2
  local uid, token, orderNo, loan = ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3]
  -- A lent unit lands here first, whatever comes next, and once however often it is asked: it is never
  -- lost between the shards, even if this buy is refused.
  if loan ~= '' and left and not lent[loan] and redis.call('SISMEMBER', KEYS[4], loan) == 0 then
    lent[loan] = true
    loans[#loans + 1] = loan
    left = left + 1
  end
  local answer, leftText = 'invalid_path', ''
  local p = not usedBy[uid] and paths[i]
  if p and string.byte(p) == 33 then
    -- '!': used up. This very buy, asked again, gets the answer it got.
    local o, got, l = string.match(p, '^!([^:]*):([^:]*):(.*)$')
    if o == orderNo then
      answer, leftText = got, l
    end
  elseif p and string.byte(p, #token + 1) == 58 and string.sub(p, 1, #token) == token
      and later(string.sub(p, #token + 2)) then
    -- The path is this buyer's, for this item, unexpired.
    if closed then
      answer = closed
    elseif bought[i] == 1 then
      -- (A buyer reaches this once a batch: the first answer past the path check uses the path up.)
      answer = 'already_bought'
    elseif left <= 0 then
      answer = split and 'empty' or 'sold_out'
    else
      answer = 'queued'
      left = left - 1
      leftText = string.format('%d', left)
      takeUids[#takeUids + 1] = uid
      takeOrders[#takeOrders + 1] = orderNo
    end
    -- The path is used up by any answer but 'empty'.
    if answer ~= 'empty' then
      usedBy[uid] = true
      used[#used + 1] = uid
      used[#used + 1] = '!' .. orderNo .. ':' .. answer .. ':' .. leftText
    end
  end
  out[#out + 1] = answer
  out[#out + 1] = leftText
end

-- Stock, the buyers' marks and the order messages change together or not at all: no message can be
-- lost between taking stock and queueing the order. (A marked buyer with no result yet is "queued".)
if #used > 0 then
  redis.call('HSET', KEYS[5], unpack(used))
end
if #loans > 0 then
  redis.call('SADD', KEYS[4], unpack(loans))
end
if #loans ~= #takeUids then
  redis.call('HINCRBY', KEYS[1], 'left', #loans - #takeUids)
end
if #takeUids > 0 then
  redis.call('SADD', KEYS[2], unpack(takeUids))
end
for i, uid in ipairs(takeUids) do
  -- The message's field names are filled in from message.go when the script loads.
  redis.call('XADD', KEYS[3], '*', '{{.OrderNo}}', takeOrders[i], '{{.UserID}}', uid, '{{.Price}}', s[4],
    '{{.ActivityID}}', s[5], '{{.At}}', nowText)
end
return out
