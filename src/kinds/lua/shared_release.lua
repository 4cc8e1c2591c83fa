-- KEYS NAME, NAME again (where the mutex's names its owner key: the
-- holders' records are in rowners), readers and rowners; ARGV as the
-- mutex's release. The last live holder out deletes the keys at once (a
-- migrating slot's node refuses a script's access to a key the script
-- emptied) and publishes (an exclusive acquirer waits for that). 1
-- (released) or 0.

local name, readers, rowners = KEYS[1], KEYS[3], KEYS[4]
local token = ARGV[1]
if redis.call('GET', name) ~= SHARED_MARKER then
  audit_end(token, false, 'shared')
  return 0
end
local now = clock()
local score = redis.call('ZSCORE', readers, token)
if not (score and tonumber(score) > now) then
  audit_end(token, false, 'shared')
  return 0
end
if redis.call('ZCOUNT', readers, '(' .. now, '+inf') == 1 then
  redis.call('DEL', name, readers, rowners)
  if ARGV[3] == '1' then
    publish(ARGV[2], token)
  end
else
  redis.call('ZREM', readers, token)
  redis.call('HDEL', rowners, token)
  live(name, readers, rowners, now)
end
audit_end(token, true, 'shared')
return 1
