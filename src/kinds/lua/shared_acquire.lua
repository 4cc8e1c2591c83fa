-- KEYS lock, fence, lock again (where the mutex's names the owner record,
-- which shared holders keep in rowners), the waiting writers, readers,
-- rowners and epoch; ARGV as the mutex's acquire, then "1" with several
-- servers.
-- Busy ({0, ms}) while an exclusive holder has NAME, and, for a new shared
-- holder, while an exclusive acquirer waits (a live waiting writer, or a
-- fair queue: its mark in the fence key, fence_of()). Granted: {1, fence}. The fence, on one server, is the
-- stored one, the last exclusive holder's (the clock's, stored, when there
-- is none). With several, a server's stored fence may have been raised by
-- an exclusive attempt that failed, so it is the epoch key, which only a
-- grant's write-back raises: the largest of a majority is the last
-- exclusive holder's token, which a majority got. A server without an
-- epoch key (or with 1, which an older client's shared holder writes back
-- where it found none) answers its stored fence: an exclusive grant
-- writes nothing back where a majority granted one token and none of them
-- had an epoch (docs/redlock.md), so that token is the stored fence of a
-- majority (1 before any token).

local name, writer, readers, rowners = KEYS[1], KEYS[4], KEYS[5], KEYS[6]
local token, several = ARGV[1], ARGV[5] == '1'
local current = redis.call('GET', name)
if current and current ~= SHARED_MARKER then
  return {0, redis.call('PTTL', name)}
end
local stored, queued = fence_of(KEYS[2])
if not stored then
  return redis.error_reply(queued)
end
local last = stored
if several then
  local epoch, err = fence_of(KEYS[7])
  if not epoch then
    return redis.error_reply(err)
  end
  last = epoch > 1 and epoch or stored
end
local now, now_us = clock()
local score = current and redis.call('ZSCORE', readers, token)
if not (score and tonumber(score) > now) then
  redis.call('ZREMRANGEBYSCORE', writer, '-inf', now)
  local pttl = redis.call('PTTL', writer)
  if pttl ~= -2 then
    return {0, pttl}
  elseif queued > now then
    return {0, queued - now}
  end
end
local f = last
if f == 0 and several then
  f = 1
elseif f == 0 then
  f = now_us
  set_fence(KEYS[2], string.format('%d', f), ARGV[3], queued, now)
end
redis.call('ZADD', readers, now + tonumber(ARGV[2]), token)
redis.call('HSET', rowners, token, ARGV[4])
live(name, readers, rowners, now)
audit('shared', token, string.format('%d', f), ARGV[2])
return {1, string.format('%d', f)}
