-- KEYS NAME, NAME again twice (where the mutex's acquire names its fence
-- and owner keys, which a semaphore has not), then limit, slots, owners,
-- fences, and the waiters' queue, presence and wake (helpers.lua), so
-- that a waiter's try names only keys that exist while it queues (its
-- slot may be migrating); ARGV as the mutex's,
-- then the permits N and, when the caller waits, its presence lease in
-- ms and "1" when it may be handed a permit (sem_release.lua). Refused:
-- NAME or one of the hashes of another type, or live permits under
-- another limit (an error that starts with DLOCKLIMIT and names the limit
-- in force).
-- The free permits are the first waiters' (one each, in the order they
-- came): an acquirer is granted when one of the free permits is its own,
-- or when there are more free permits than live waiters. Granted: {1,
-- fence, slot}, the lowest slot no live permit holds, fenced per slot; a
-- retry of our own call keeps its slot; a waiter leaves the queue. Else
-- busy: {0, ms until the soonest permit expires, or the lease of a waiter
-- a free permit is kept for ends}; a caller that waits joins the queue at
-- the tail (or keeps its place) and renews its lease, and is told to try
-- again by then, or within a third of its lease, and the end of its lease
-- ({0, ms, 0, end}), which a hand-over names.

local name, limit, slots, owners, fences = KEYS[1], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local queue, presence, wake = KEYS[8], KEYS[9], KEYS[10]
local token, permits = ARGV[1], tonumber(ARGV[5])
local lease, direct = tonumber(ARGV[6]), ARGV[7] == '1'
local now, now_us = clock()
local live = redis.call('ZRANGEBYSCORE', name, '(' .. now, '+inf', 'WITHSCORES')
local in_force = redis.call('GET', limit)
local mine = live_score(name, token, now)
if #live > 0 and in_force and tonumber(in_force) ~= permits then
  return redis.error_reply('DLOCKLIMIT ' .. name .. ' is a semaphore of ' .. in_force ..
    ' permits (' .. #live / 2 .. ' held), not ' .. ARGV[5])
end
local free, first, ends = permits - #live / 2, {}, {}
if free > 0 then
  first, ends = live_waiters(queue, presence, wake, now, free)
end
local ours = mine or #first < free
for _, waiter in ipairs(first) do
  ours = ours or waiter == token
end
if not ours then
  local wait = free > 0 and math.min(unpack(ends)) - now or tonumber(live[2]) - now
  if not lease then
    return {0, wait}
  end
  keep_place(queue, presence, wake, token, tonumber(redis.call('ZSCORE', presence, token)),
    ARGV[4], direct and ARGV[2] .. ' ' .. ARGV[3] .. ' ' .. ARGV[5] .. ' ' .. ARGV[4], lease,
    now, now_us)
  return {0, math.max(0, math.min(wait, math.max(1, math.floor(lease / 3)))), 0, now + lease}
end
local refused = hashes_refused(slots, owners, fences)
if refused then
  return refused
end
local slot = permit_slot(slots, token, live, 2)
local last, err = slot_fence(fences, slot)
if not last then
  return redis.error_reply(err)
end
if lease then
  leave(queue, presence, wake, token)
end
local f = grant_permit(name, slots, owners, fences, token, slot, last, tonumber(ARGV[2]),
  ARGV[3], ARGV[4], now_us)
redis.call('SET', limit, ARGV[5])
reap(name, limit, slots, owners, now)
return {1, f, slot}
