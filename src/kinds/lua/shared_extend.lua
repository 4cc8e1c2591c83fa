-- KEYS NAME, NAME again (where the mutex's extend names its owner key),
-- fence, readers and rowners;
-- ARGV as the mutex's. Extends only an entry that is there (1). Repair
-- (Redlock, ARGV[3] = "1"): a server whose fence is below ours (it lost
-- our grant's writes) gets our entry and fence back unless an exclusive
-- holder has NAME there; 2, never a vote. One that kept our fence saw our
-- entry go (a release this extend overtook, an expiry): 0.

local name, readers, rowners = KEYS[1], KEYS[4], KEYS[5]
local token = ARGV[1]
local current = redis.call('GET', name)
if current and current ~= SHARED_MARKER then
  return 0
end
local stored, queued = fence_of(KEYS[3])
if not stored then
  return redis.error_reply(queued)
end
local now = clock()
local score = current and redis.call('ZSCORE', readers, token)
local held = score and tonumber(score) > now
if not held and (ARGV[3] ~= '1' or stored >= tonumber(ARGV[4])) then
  return 0
end
redis.call('ZADD', readers, now + tonumber(ARGV[2]), token)
if not held then
  redis.call('HSET', rowners, token, '')
  set_fence(KEYS[3], ARGV[4], ARGV[5], queued, now)
end
live(name, readers, rowners, now)
audit(held and 'extend' or 'repair', token, nil, ARGV[2], nil, 'shared')
return held and 1 or 2
