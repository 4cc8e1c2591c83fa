-- KEYS NAME, NAME again (where the mutex's names its owner key: the
-- holders' records are in rowners), readers, rowners and the waiting
-- writers (NAME in their place when the client found them absent while
-- the slot migrates, present_key()); ARGV as the mutex's release. The last
-- holder out publishes release_message(): an exclusive acquirer waits for
-- that, and the one that asked last is woken alone. 1 (released) or 0.

local name, readers, rowners, writer = KEYS[1], KEYS[3], KEYS[4], present_key(5)
local token = ARGV[1]
if redis.call('GET', name) ~= SHARED_MARKER or not (present_key(3) and present_key(4)) then
  audit_end(token, false, 'shared')
  return 0
end
local now = clock()
local score = redis.call('ZSCORE', readers, token)
if not (score and tonumber(score) > now) then
  audit_end(token, false, 'shared')
  return 0
end
local message = ARGV[3] == '1' and release_message(writer, token, now)
if not live(name, readers, rowners, now, token) and message then
  publish(ARGV[2], message)
end
audit_end(token, true, 'shared')
return 1
