-- KEYS NAME, NAME again (where the mutex's names its owner key, which a
-- semaphore has not), then limit, slots, owners, fences, and the waiters'
-- queue, presence and wake (NAME in place of those the client found
-- absent while the slot migrates, present_key(): the queue's keys exist
-- only while waiters queue); ARGV as the mutex's. NAME or one of the
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

local name, limit, slots, owners = KEYS[1], present_key(3), present_key(4), present_key(5)
local fences, queue, presence, wake = present_key(6), present_key(7), present_key(8), present_key(9)
local token = ARGV[1]
local refused = hashes_refused(slots, owners, fences)
if refused then
  return refused
end
local now, now_us = clock()
local live = redis.call('ZRANGEBYSCORE', name, '(' .. now, '+inf', 'WITHSCORES')
local gone = redis.call('ZRANGEBYSCORE', name, '-inf', now)
local permits = tonumber(limit and redis.call('GET', limit) or 0)
local queued = queue and presence and wake and redis.call('ZRANGE', queue, 0, 0)[1] ~= nil
-- The live permits that stay (ours is given back), and the end of the
-- last of them.
local holders, last_end, mine = {}, nil, false
for i = 1, #live, 2 do
  if live[i] == token then
    mine = true
  else
    holders[#holders + 1], last_end = live[i], tonumber(live[i + 1])
  end
end
-- A waiter that gives up leaves the queue (not in a cleanup), if its
-- lease runs: a dead one is dropped with the others.
local leaving = queued and ARGV[3] == '1' and
  tonumber(redis.call('ZSCORE', presence, token) or 0) > now
-- The waiters the free permits were kept for (`told`), and those they
-- are kept for once ours is given back and a leaving token has left
-- (`after`, with the ends of their leases): one read of the queue's head.
local told, after, after_ends = {}, {}, {}
local free_before, free_after = permits - #live / 2, permits - #holders
if queued and free_after > 0 then
  local waiters, leases = live_waiters(queue, presence, wake, now, free_after + 1)
  for n, waiter in ipairs(waiters) do
    told[waiter] = told[waiter] or n <= free_before
    if #after < free_after and not (leaving and waiter == token) then
      after[#after + 1], after_ends[#after_ends + 1] = waiter, leases[n]
    end
  end
end
local handed = {}
-- Hands `waiter`, whose lease ends at `ends`, a free permit, or tells it
-- to try.
local function hand_over(waiter, ends)
  local channel, ttl, fence_ttl, rest = waiter_channel(wake, waiter, ARGV[2])
  local n, record = string.match(rest or '', '^(%d+) (.+)$')
  local slot, last
  if ttl and slots and owners and fences and tonumber(n) == permits then
    slot = permit_slot(slots, waiter, holders, 1)
    last = slot_fence(fences, slot)
  end
  if not last then
    publish(channel, 'next:' .. waiter)
    return
  end
  local px = math.min(ttl, ends - now)
  leave(queue, presence, wake, waiter)
  local f = grant_permit(name, slots, owners, fences, waiter, slot, last, px, fence_ttl,
    handed_record(record, now), now_us)
  holders[#holders + 1], last_end = waiter, math.max(last_end or 0, now + px)
  handed[waiter] = true
  publish(channel, 'grant:' .. waiter .. ':' .. f .. ':' .. string.format('%d', ends) .. ':' ..
    slot)
end
audit_end(token, mine, 'permit')
if leaving then
  leave(queue, presence, wake, token)
end
for n, waiter in ipairs(after) do
  if not told[waiter] then
    hand_over(waiter, after_ends[n])
  end
end
if mine and ARGV[3] == '1' and not queued then
  publish(ARGV[2], token)
end
-- Our permit and the expired ones go (but a permit just handed over), in
-- one step per key and after every read of them: a node of a migrating
-- slot refuses a script's access to a key that it emptied.
if mine then
  gone[#gone + 1] = token
end
for n = #gone, 1, -1 do
  if handed[gone[n]] then
    table.remove(gone, n)
  end
end
if #holders == 0 then
  redis.call('DEL', name, limit or name, slots or name, owners or name)
  return mine and 1 or 0
end
if #gone > 0 then
  redis.call('ZREM', name, unpack(gone))
  for _, hash in ipairs({slots or false, owners or false}) do
    if hash then
      redis.call('HDEL', hash, unpack(gone))
    end
  end
end
for _, key in ipairs({name, limit or name, slots or name, owners or name}) do
  redis.call('PEXPIRE', key, last_end - now)
end
return mine and 1 or 0
