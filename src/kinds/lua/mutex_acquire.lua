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
--
-- With several servers (Redlock) ARGV[5] is "1" or "0" (among the writers
-- or not), ARGV[6] the client's proposal for the token (next_fence()),
-- and the name's epoch key (docs/shared.md) comes last in KEYS; a grant
-- answers {1, fence, 0, 0} when the token is the proposal and no epoch
-- key exists here, else {1, fence, 0, 1}. Where every server counted
-- answered 0 with one token, the client writes nothing back: the token is
-- its clock's, which the restart rule covers, not a stored counter ahead
-- of it, which only the servers storing it keep (docs/redlock.md).
local WRITER_LEASE_MS, WRITER_RETRY_MS = 2000, 600
local proposal, epoch = tonumber(ARGV[6]), ARGV[6] and KEYS[#KEYS]
local writers = KEYS[4] ~= epoch and KEYS[4] or nil

local current = redis.call('GET', KEYS[1])
if current and current ~= ARGV[1] then
  local pttl = redis.call('PTTL', KEYS[1])
  if current ~= SHARED_MARKER then
    return {0, pttl}
  elseif not writers then
    return {0, pttl, 2}
  end
  local now = clock()
  redis.call('ZREMRANGEBYSCORE', writers, '-inf', now)
  redis.call('ZADD', writers, now + WRITER_LEASE_MS, ARGV[1])
  redis.call('PEXPIRE', writers, WRITER_LEASE_MS)
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
local waited = ARGV[5] == '1' and writers and redis.call('ZSCORE', writers, ARGV[1])
local has_epoch = epoch and redis.call('GET', epoch)
local f = next_fence(last, now_us, proposal)
redis.call('SET', KEYS[1], ARGV[1], current and 'XX' or 'NX', 'PX', ARGV[2])
set_fence(KEYS[2], f, ARGV[3], queued, now)
redis.call('SET', KEYS[3], ARGV[4], 'PX', ARGV[2])
if waited then
  redis.call('ZREM', writers, ARGV[1])
end
audit('grant', ARGV[1], f, ARGV[2])
if epoch then
  return {1, f, 0, (has_epoch or tonumber(f) ~= proposal) and 1 or 0}
end
return {1, f}
