-- Gives one unit of a cancelled order back on sale. The buyer stays marked: one per user holds for the
-- whole sale. KEYS: 1 sale hash. Answers the stock left after, or -1 when the sale is not loaded
-- (preheat then loads it from the database, which already counts the unit as back).
if redis.call('EXISTS', KEYS[1]) == 0 then
  return -1
end
return redis.call('HINCRBY', KEYS[1], 'left', 1)
