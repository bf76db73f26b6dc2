-- The QR login state machine, one step at a time, atomically.
-- KEYS[1]: the code's hash. ARGV: action (scan|confirm|cancel|poll), now in ms, session id (the phone's
-- for scan/confirm/cancel, the hash of the PC's binding cookie for poll), user id (scan only), the number
-- the person picked on the phone (confirm only).
-- Answers {'ok', state[, user id[, number]]} or {'not_found'} or {'qr_state', state} or {'bad_code'}.
local action, now, sid, uid, picked = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4], ARGV[5]
local f = redis.call('HMGET', KEYS[1], 'state', 'expires_at', 'phone_sid', 'confirmed_at', 'bind', 'uid', 'consumed', 'code')
local state = f[1]
if not state then
  return {'not_found'}
end
if (state == 'pending' or state == 'scanned') and now >= tonumber(f[2]) then
  state = 'expired'
end

if action == 'scan' then
  if state == 'scanned' and f[3] == sid then
    return {'ok', 'scanned'} -- the same phone opening the page again
  end
  if state ~= 'pending' then
    return {'qr_state', state}
  end
  redis.call('HSET', KEYS[1], 'state', 'scanned', 'phone_sid', sid, 'uid', uid)
  return {'ok', 'scanned'}
end

if action == 'confirm' or action == 'cancel' then
  if state ~= 'scanned' then
    return {'qr_state', state}
  end
  if f[3] ~= sid then
    return {'qr_state', 'scanned_elsewhere'}
  end
  if action == 'confirm' then
    if not f[8] or picked ~= f[8] then
      -- Not the PC's number: one try only, so a relay cannot guess it by asking again.
      redis.call('HSET', KEYS[1], 'state', 'cancelled')
      return {'bad_code'}
    end
    redis.call('HSET', KEYS[1], 'state', 'confirmed', 'confirmed_at', now)
    return {'ok', 'confirmed'}
  end
  redis.call('HSET', KEYS[1], 'state', 'cancelled')
  return {'ok', 'cancelled'}
end

if action == 'poll' then
  if f[5] ~= sid then
    return {'not_found'} -- only the browser that made the code may read it
  end
  if state == 'confirmed' and not f[7] and now < tonumber(f[4]) + 30000 then
    -- The first read after the phone confirmed, within 30 s, logs this browser in, once.
    redis.call('HSET', KEYS[1], 'consumed', '1')
    return {'ok', 'confirmed', f[6]}
  end
  if state == 'scanned' then
    return {'ok', state, '0', f[8] or ''} -- the number the person picks on the phone
  end
  return {'ok', state}
end
return redis.error_reply('unknown action ' .. tostring(action))
