-- The mutex's status. KEYS lock, fence, owner. Read-only. Returns {type
-- of the lock key, PTTL, fence or false, owner record of the current
-- holder or false}. The owner record names its token: it is this holder's
-- only if the token in it is exactly the lock key's value.

local t = redis.call('TYPE', KEYS[1])['ok']
local owner = false
if t == 'string' then
  local holder = redis.call('GET', KEYS[1])
  local record = redis.call('GET', KEYS[3])
  if record and string.find(record, '"token":"' .. holder .. '"', 1, true) then
    owner = record
  end
end
local fence, err = fence_of(KEYS[2])
if not fence then
  return redis.error_reply(err)
end
return {t, redis.call('PTTL', KEYS[1]), fence > 0 and string.format('%d', fence) or false, owner}
