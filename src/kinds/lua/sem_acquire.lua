-- KEYS as the mutex's acquire, then limit, slots, owners, fences, and the
-- waiters' queue, presence and wake (helpers.lua); ARGV as the mutex's,
-- then the permits N and, when the caller waits, its presence lease in
-- ms. Refused: NAME of another type, or live permits under another limit
-- (an error that starts with DLOCKLIMIT and names the limit in force).
-- The free permits are the first waiters' (one each, in the order they
-- came): an acquirer is granted when one of the free permits is its own,
-- or when there are more free permits than live waiters. Granted: {1,
-- fence, slot}, the lowest slot no live permit holds, fenced per slot; a
-- retry of our own call keeps its slot; a waiter leaves the queue. Else
-- busy: {0, ms until the soonest permit expires, or the lease of a waiter
-- a free permit is kept for ends}; a caller that waits joins the queue at
-- the tail (or keeps its place) and renews its lease, and is told to try
-- again by then, or within a third of its lease.

local name, limit, slots, owners, fences = KEYS[1], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local queue, presence, wake = KEYS[8], KEYS[9], KEYS[10]
local token, permits, lease = ARGV[1], tonumber(ARGV[5]), tonumber(ARGV[6])
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
    ARGV[4], nil, lease, now, now_us)
  return {0, math.max(0, math.min(wait, math.max(1, math.floor(lease / 3))))}
end
local taken, slot = {}, nil
for i = 1, #live, 2 do
  local s = redis.call('HGET', slots, live[i])
  if live[i] == token then
    slot = tonumber(s)
  elseif s then
    taken[s] = true
  end
end
if not slot then
  slot = 0
  while taken[tostring(slot)] do
    slot = slot + 1
  end
end
local last, err = fence_parse(redis.call('HGET', fences, slot), fences .. ' field ' .. slot)
if not last then
  return redis.error_reply(err)
end
if lease then
  leave(queue, presence, wake, token)
end
local f = next_fence(last, now_us)
redis.call('ZADD', name, now + tonumber(ARGV[2]), token)
redis.call('SET', limit, ARGV[5])
redis.call('HSET', slots, token, slot)
redis.call('HSET', owners, token, ARGV[4])
redis.call('HSET', fences, slot, f)
redis.call('PEXPIRE', fences, ARGV[3])
reap(name, limit, slots, owners, now)
audit('permit', token, f, ARGV[2])
return {1, f, slot}
