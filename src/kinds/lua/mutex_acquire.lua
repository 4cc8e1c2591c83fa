-- The mutex's acquire. KEYS lock, fence, owner, and optionally the name's
-- fair queue and its waiting writers; ARGV token, ttl_ms, fence_ttl_ms,
-- owner record, and "1" once the caller waits among the writers. Returns
-- {1, fence} (granted), {0, PTTL} (held by another), or {0, ms, 1}.
--
-- A key of another type under the name makes GET raise WRONGTYPE before
-- anything is written. KEYS[4], the name's fair queue (docs/fair.md), is
-- only looked up when the lock is free (PTTL -2: no queue; PTTL rather
-- than EXISTS keeps the ACL rule's commands): a free lock with waiters
-- queued is theirs (the head's), so a plain acquire does not barge past
-- them. The token follows next_fence(), also for a retry of our own call
-- (our key already there).
--
-- A name held shared (docs/shared.md) holds SHARED_MARKER: an exclusive
-- acquire finds it busy as it finds any other holder. An exclusive
-- acquirer that finds it puts its token in the sorted set of waiting
-- writers (KEYS[5]), scored by the end of its lease of WRITER_LEASE_MS in
-- server ms, answers a third element, 1, and tries again within
-- WRITER_RETRY_MS, which renews its lease: while a member's lease runs, no
-- new shared holder enters. Its next tries send ARGV[5] "1", with which a
-- grant takes its own member out of KEYS[5]: another writer that still
-- waits keeps the readers out. So a name never held shared costs no
-- command more, and no sorted-set command (which a mutex's ACL rule may
-- lack).
local WRITER_LEASE_MS, WRITER_RETRY_MS = 2000, 600

local current = redis.call('GET', KEYS[1])
if current and current ~= ARGV[1] then
  if current == SHARED_MARKER and KEYS[5] then
    local now = clock()
    redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', now)
    redis.call('ZADD', KEYS[5], now + WRITER_LEASE_MS, ARGV[1])
    redis.call('PEXPIRE', KEYS[5], WRITER_LEASE_MS)
    return {0, math.min(redis.call('PTTL', KEYS[1]), WRITER_RETRY_MS), 1}
  end
  return {0, redis.call('PTTL', KEYS[1])}
end
local queue = not current and KEYS[4] and redis.call('PTTL', KEYS[4]) or -2
if queue ~= -2 then
  return {0, queue}
end
local last, err = fence_of(KEYS[2])
if not last then
  return redis.error_reply(err)
end
local waited = ARGV[5] == '1' and redis.call('ZSCORE', KEYS[5], ARGV[1])
local _, now_us = clock()
local f = next_fence(last, now_us)
redis.call('SET', KEYS[1], ARGV[1], current and 'XX' or 'NX', 'PX', ARGV[2])
redis.call('SET', KEYS[2], f, 'PX', ARGV[3])
redis.call('SET', KEYS[3], ARGV[4], 'PX', ARGV[2])
if waited then
  redis.call('ZREM', KEYS[5], ARGV[1])
end
audit('grant', ARGV[1], f, ARGV[2])
return {1, f}
