-- KEYS NAME, NAME again (where the mutex's names its owner key, which a
-- semaphore has not), then limit, slots, owners, fences, and the waiters'
-- queue, presence and wake; ARGV as the mutex's. NAME or one of the
-- hashes of another type: an error, nothing written. Gives back the
-- permit of the token if it holds one, and takes it out of the queue (a
-- waiter that gives up leaves by it), but not in a cleanup (ARGV[3] "0"):
-- a reply that came too late must not cost a waiter its place. Every
-- waiter that the call gives a free permit to (one per permit freed, or
-- the next when an entitled waiter leaves) is told on its process's
-- channel, and no other. One that asked for it (its `wake` entry holds,
-- after a newline, its TTL, fence TTL, permits and owner record) is
-- handed the permit at once: it holds it, in the lowest free slot, for
-- at most what is left of its lease until it claims it with an extend (so
-- a dead waiter costs no more than its lease), and is told
-- "grant:TOKEN:FENCE:LEASE_END:SLOT" (LEASE_END, the end of its lease
-- that it was told, lets it tell this grant from one before its last
-- try). Any other is told "next:TOKEN" and tries, as is one that asked for
-- another limit or whose slot's stored fence is no token: its own acquire
-- then reports it. With no queue, the release publishes its token on the
-- name's channel, as the mutex's does. 1 (released) or 0 (not a live
-- permit of that token).

local name, limit, slots, owners, fences = KEYS[1], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local queue, presence, wake = KEYS[7], KEYS[8], KEYS[9]
local token = ARGV[1]
local refused = hashes_refused(slots, owners, fences)
if refused then
  return refused
end
local now, now_us = clock()
local mine = live_score(name, token, now)
local permits = tonumber(redis.call('GET', limit) or 0)
local queued = redis.call('ZRANGE', queue, 0, 0)[1] ~= nil
-- The waiters the free permits are kept for, and the ends of their leases.
local function entitled()
  local free = permits - #redis.call('ZRANGEBYSCORE', name, '(' .. now, '+inf')
  if not queued or free <= 0 then
    return {}, {}
  end
  return live_waiters(queue, presence, wake, now, free)
end
-- Hands `waiter`, whose lease ends at `ends`, a free permit, or tells it
-- to try.
local function hand_over(waiter, ends)
  local channel, ttl, fence_ttl, rest = waiter_channel(wake, waiter, ARGV[2])
  local n, record = string.match(rest or '', '^(%d+) (.+)$')
  local slot, last
  if ttl and tonumber(n) == permits then
    slot = permit_slot(slots, waiter, redis.call('ZRANGEBYSCORE', name, '(' .. now, '+inf'), 1)
    last = slot_fence(fences, slot)
  end
  if not last then
    publish(channel, 'next:' .. waiter)
    return
  end
  leave(queue, presence, wake, waiter)
  local f = grant_permit(name, slots, owners, fences, waiter, slot, last,
    math.min(ttl, ends - now), fence_ttl, handed_record(record, now), now_us)
  publish(channel, 'grant:' .. waiter .. ':' .. f .. ':' .. string.format('%d', ends) .. ':' ..
    slot)
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
audit_end(token, mine, 'permit')
if queued then
  local after, ends = entitled()
  local told = {}
  for _, waiter in ipairs(before) do
    told[waiter] = true
  end
  for i, waiter in ipairs(after) do
    if not told[waiter] then
      hand_over(waiter, ends[i])
    end
  end
elseif mine and ARGV[3] == '1' then
  publish(ARGV[2], token)
end
reap(name, limit, slots, owners, now)
return mine and 1 or 0
