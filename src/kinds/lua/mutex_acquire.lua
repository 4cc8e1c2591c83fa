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
-- them. The token is max(stored + 1, server clock in µs), also for a retry
-- of our own call (our key already there): the clock covers a counter
-- rolled back by a restart from an older snapshot, not only one that was
-- lost, and +1 makes every grant's token new, so no two holders can end up
-- with the same largest token.
--
-- A name held shared (docs/shared.md) holds the marker 'dlock:shared',
-- never a token (tokens are 32 lower-case hex characters): an exclusive
-- acquire finds it busy as it finds any other holder. An exclusive
-- acquirer that finds it puts its token in the sorted set of waiting
-- writers (KEYS[5]), scored by the end of its lease of 2000 ms in server
-- ms, answers a third element, 1, and tries again within 600 ms, which
-- renews its lease: while a member's lease runs, no new shared holder
-- enters. Its next tries send ARGV[5] "1", with which a grant takes its
-- own member out of KEYS[5]: another writer that still waits keeps the
-- readers out. So a name never held shared costs no command more, and no
-- sorted-set command (which a mutex's ACL rule may lack).

local current = redis.call('GET', KEYS[1])
if current and current ~= ARGV[1] then
  if current == 'dlock:shared' and KEYS[5] then
    local t = redis.call('TIME')
    local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', now)
    redis.call('ZADD', KEYS[5], now + 2000, ARGV[1])
    redis.call('PEXPIRE', KEYS[5], 2000)
    return {0, math.min(redis.call('PTTL', KEYS[1]), 600), 1}
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
local now = redis.call('TIME')
local fence = math.max(last + 1, tonumber(now[1]) * 1000000 + tonumber(now[2]))
local f = string.format('%d', fence)
redis.call('SET', KEYS[1], ARGV[1], current and 'XX' or 'NX', 'PX', ARGV[2])
redis.call('SET', KEYS[2], f, 'PX', ARGV[3])
redis.call('SET', KEYS[3], ARGV[4], 'PX', ARGV[2])
if waited then
  redis.call('ZREM', KEYS[5], ARGV[1])
end
audit('grant', ARGV[1], f, ARGV[2])
return {1, f}
