-- KEYS as the mutex's release, then limit, slots, owners, fences; ARGV as
-- the mutex's. 1 (released) or 0 (not a live permit of that token).

local name, limit, slots, owners = KEYS[1], KEYS[3], KEYS[4], KEYS[5]
local now = clock()
local mine = live_score(name, ARGV[1], now)
if mine then
  redis.call('ZREM', name, ARGV[1])
  redis.call('HDEL', slots, ARGV[1])
  redis.call('HDEL', owners, ARGV[1])
end
reap(name, limit, slots, owners, now)
if mine and ARGV[3] == '1' then
  publish(ARGV[2], ARGV[1])
end
audit_end(ARGV[1], mine, 'permit')
return mine and 1 or 0
