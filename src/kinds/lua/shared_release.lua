-- KEYS NAME, NAME again (where the mutex's names its owner key: the
-- holders' records are in rowners), readers and rowners; ARGV as the
-- mutex's release. The last holder out publishes (an exclusive acquirer
-- waits for that). 1 (released) or 0.

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
if not live(name, readers, rowners, now, token) and ARGV[3] == '1' then
  publish(ARGV[2], token)
end
audit_end(token, true, 'shared')
return 1
