-- KEYS NAME, NAME again (where the mutex's names its owner key, which a
-- semaphore has not), then limit, slots, owners, fences, and the waiters'
-- queue, presence and wake; ARGV as the mutex's. Gives back the
-- permit of the token if it holds one, and takes it out of the queue (a
-- waiter that gives up leaves by it), but not in a cleanup (ARGV[3] "0"):
-- a reply that came too late must not cost a waiter its place. Every
-- waiter that the call gives a free permit to (one per permit freed, or
-- the next when an entitled waiter leaves) is told "next:TOKEN" on its
-- process's channel, and no other; with no queue, the release publishes
-- its token on the name's channel, as the mutex's does. 1 (released) or 0
-- (not a live permit of that token).

local name, limit, slots, owners = KEYS[1], KEYS[3], KEYS[4], KEYS[5]
local queue, presence, wake = KEYS[7], KEYS[8], KEYS[9]
local token = ARGV[1]
local now = clock()
local mine = live_score(name, token, now)
local permits = tonumber(redis.call('GET', limit) or 0)
local queued = redis.call('ZRANGE', queue, 0, 0)[1] ~= nil
-- The waiters the free permits are kept for.
local function entitled()
  local free = permits - #redis.call('ZRANGEBYSCORE', name, '(' .. now, '+inf')
  if not queued or free <= 0 then
    return {}
  end
  return (live_waiters(queue, presence, wake, now, free))
end
local before = entitled()
if queued and ARGV[3] == '1' then
  leave(queue, presence, wake, token)
end
if mine then
  redis.call('ZREM', name, token)
  redis.call('HDEL', slots, token)
  redis.call('HDEL', owners, token)
end
local after = entitled()
reap(name, limit, slots, owners, now)
if queued then
  local told = {}
  for _, waiter in ipairs(before) do
    told[waiter] = true
  end
  for _, waiter in ipairs(after) do
    if not told[waiter] then
      publish((waiter_channel(wake, waiter, ARGV[2])), 'next:' .. waiter)
    end
  end
elseif mine and ARGV[3] == '1' then
  publish(ARGV[2], token)
end
audit_end(token, mine, 'permit')
return mine and 1 or 0
