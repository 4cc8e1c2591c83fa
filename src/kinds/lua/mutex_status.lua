-- The mutex's status. KEYS lock, fence, owner. Read-only. Returns {type
-- of the lock key, PTTL, fence or false, owner record of the current
-- holder or false}. The owner record names its token: it is this holder's
-- only if the token in it is exactly the lock key's value. A fence or owner
-- key named as the lock key is absent (present_key()).

local fence_key, owner_key = present_key(2), present_key(3)
local t = redis.call('TYPE', KEYS[1])['ok']
local owner = false
if t == 'string' and owner_key then
  local holder = redis.call('GET', KEYS[1])
  local record = redis.call('GET', owner_key)
  if record and string.find(record, '"token":"' .. holder .. '"', 1, true) then
    owner = record
  end
end
local fence, err = 0, nil
if fence_key then
  fence, err = fence_of(fence_key)
end
if not fence then
  return redis.error_reply(err)
end
return {t, redis.call('PTTL', KEYS[1]), fence > 0 and string.format('%d', fence) or false, owner}
