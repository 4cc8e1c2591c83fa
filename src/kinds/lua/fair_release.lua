-- KEYS as the mutex's release, then queue, presence, wake and the fence;
-- ARGV as the mutex's. Releases the lock if it is ours, and takes us out
-- of the queue (a waiter that gives up leaves by it), but not in a cleanup
-- (ARGV[3] "0"): a reply that came too late must not cost a waiter its
-- place. When that frees the lock or the head's place, the head (only) is
-- told: also after a cleanup, which must not stall the queue for a lease.
-- A head that asked for it (its `wake` entry holds, after a newline, its
-- TTL, fence TTL and owner record) is handed our lock at once: it becomes
-- the holder, for at most what is left of its lease until it claims the
-- lock with an extend (so a dead head costs no more than its lease), and
-- the message "grant:TOKEN:FENCE:LEASE_END" tells it so; LEASE_END, the
-- end of its lease that it was told, lets it tell this grant from one
-- before its last try. Any other head is told "next:TOKEN" and tries, as
-- is a head when the stored fence is not a token: its own acquire then
-- reports it. The fence and the head's entry are read before the first
-- write, so that a key of another type fails before anything is written.
-- With no queue, a release publishes as the mutex's does (plain acquirers
-- wait on it). 1 or 0.

local lock, queue, presence, wake = KEYS[1], KEYS[3], KEYS[4], KEYS[5]
local token = ARGV[1]
local current = redis.call('GET', lock)
local last, marked = fence_of(KEYS[6])
local now, now_us = clock()
local head, head_ends = live_head(queue, presence, wake, now)
if current == token then
  local channel, ttl, fence_ttl, record
  if head then
    channel, ttl, fence_ttl, record = waiter_channel(wake, head, ARGV[2])
  end
  if ttl and last then
    local px = math.min(ttl, head_ends - now)
    local f = next_fence(last, now_us)
    leave(queue, presence, wake, head)
    redis.call('SET', lock, head, 'PX', px)
    set_fence(KEYS[6], f, fence_ttl, queue_ends(presence), now)
    record = handed_record(record, now)
    redis.call('SET', KEYS[2], record, 'PX', px)
    publish(channel, 'grant:' .. head .. ':' .. f .. ':' .. string.format('%d', head_ends))
    audit_end(token, true)
    audit('grant', head, f, string.format('%d', px), record)
    return 1
  end
  redis.call('DEL', lock, KEYS[2])
  mark_queue(KEYS[6], queue_ends(presence), last, marked, now)
  if head then
    publish(channel, 'next:' .. head)
  elseif ARGV[3] == '1' then
    publish(ARGV[2], token)
  end
  audit_end(token, true)
  return 1
end
if ARGV[3] == '1' and redis.call('ZSCORE', presence, token) then
  leave(queue, presence, wake, token)
  if head == token and not current then
    head = live_head(queue, presence, wake, now)
    if head then
      publish((waiter_channel(wake, head, ARGV[2])), 'next:' .. head)
    end
  end
end
mark_queue(KEYS[6], queue_ends(presence), last, marked, now)
audit_end(token, false)
return 0
