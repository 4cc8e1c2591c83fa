-- KEYS NAME, NAME again twice (where the mutex's extend names its owner
-- and fence keys, which a semaphore has not), then limit, slots, owners;
-- ARGV as the mutex's (no repair: a semaphore lives on one server). 1 or 0.

local name, limit, slots, owners = KEYS[1], KEYS[4], KEYS[5], KEYS[6]
local now = clock()
local mine = live_score(name, ARGV[1], now)
if mine then
  redis.call('ZADD', name, 'XX', now + tonumber(ARGV[2]), ARGV[1])
  audit('extend', ARGV[1], nil, ARGV[2], nil, 'permit')
end
reap(name, limit, slots, owners, now)
return mine and 1 or 0
