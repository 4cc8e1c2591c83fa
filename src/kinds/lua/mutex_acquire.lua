-- The mutex's acquire. KEYS lock, fence, owner, and the name's waiting
-- writers once the name was found held shared; ARGV token, ttl_ms,
-- fence_ttl_ms, owner record, and "1" once the caller waits among the
-- writers. Returns {1, fence} (granted), {0, PTTL} (held by another),
-- {0, PTTL, 2} (held shared: ask again naming the writers) or
-- {0, ms, 1} (waiting among the writers).
--
-- A key of another type under the name makes GET raise WRONGTYPE before
-- anything is written. A free lock whose fence key carries a fair queue's
-- mark (fence_of(); docs/fair.md) is the queue's head's, so a plain
-- acquire does not barge past its waiters: it is busy until the mark ends
-- or the fair scripts take it off. The token follows next_fence(), also
-- for a retry of our own call (our key already there), and the mark is
-- kept.
--
-- A name held shared (docs/shared.md) holds SHARED_MARKER: an exclusive
-- acquire finds it busy as it finds any other holder, and says so with a
-- third element, 2. An acquirer that waits then asks again with the set
-- of waiting writers in KEYS[4]: it puts its token there, scored by the
-- end of its lease of WRITER_LEASE_MS in server ms, answers a third
-- element, 1, and tries again within WRITER_RETRY_MS, which renews its
-- lease: while a member's lease runs, no new shared holder enters. Its
-- next tries send ARGV[5] "1", with which a grant takes its own member
-- out of KEYS[4]: another writer that still waits keeps the readers out.
-- So the mutex names the keys of no other kind until its name is used by
-- one, and sends no sorted-set command (which a mutex's ACL rule may
-- lack) before.
local WRITER_LEASE_MS, WRITER_RETRY_MS = 2000, 600

local current = redis.call('GET', KEYS[1])
if current and current ~= ARGV[1] then
  local pttl = redis.call('PTTL', KEYS[1])
  if current ~= SHARED_MARKER then
    return {0, pttl}
  elseif not KEYS[4] then
    return {0, pttl, 2}
  end
  local now = clock()
  redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now)
  redis.call('ZADD', KEYS[4], now + WRITER_LEASE_MS, ARGV[1])
  redis.call('PEXPIRE', KEYS[4], WRITER_LEASE_MS)
  return {0, math.min(pttl, WRITER_RETRY_MS), 1}
end
local last, queued = fence_of(KEYS[2])
if not last then
  return redis.error_reply(queued)
end
local now, now_us = clock()
if not current and queued > now then
  return {0, queued - now}
end
local waited = ARGV[5] == '1' and redis.call('ZSCORE', KEYS[4], ARGV[1])
local f = next_fence(last, now_us)
redis.call('SET', KEYS[1], ARGV[1], current and 'XX' or 'NX', 'PX', ARGV[2])
set_fence(KEYS[2], f, ARGV[3], queued, now)
redis.call('SET', KEYS[3], ARGV[4], 'PX', ARGV[2])
if waited then
  redis.call('ZREM', KEYS[4], ARGV[1])
end
audit('grant', ARGV[1], f, ARGV[2])
return {1, f}
