-- KEYS as the mutex's release, then queue, presence, wake and the fence
-- (NAME in place of the owner record and of the queue's keys when the
-- client found them absent while the slot migrates, present_key(): the
-- queue's keys exist only while waiters queue); ARGV as the mutex's.
-- Releases the lock if it is ours, and takes us out
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

local lock, owner = KEYS[1], present_key(2)
local queue, presence, wake = present_key(3), present_key(4), present_key(5)
local queued = queue and presence and wake
local token = ARGV[1]
local current = redis.call('GET', lock)
local last, marked = fence_of(KEYS[6])
local now, now_us = clock()
local head, head_ends
if queued then
  head, head_ends = live_head(queue, presence, wake, now)
end
-- The end of the queue's life once `leaving` has left it.
local function ends_without(leaving)
  return queued and queue_ends(presence, leaving) or 0
end
if current == token then
  local channel, ttl, fence_ttl, record
  if head then
    channel, ttl, fence_ttl, record = waiter_channel(wake, head, ARGV[2])
  end
  if ttl and last then
    local px = string.format('%d', math.min(ttl, head_ends - now))
    local f = next_fence(last, now_us)
    local ends = ends_without(head)
    leave(queue, presence, wake, head)
    redis.call('SET', lock, head, 'PX', px)
    set_fence(KEYS[6], f, fence_ttl, ends, now)
    record = handed_record(record, now)
    if owner then -- a migrating slot's node would refuse to create it
      redis.call('SET', owner, record, 'PX', px)
    end
    publish(channel, 'grant:' .. head .. ':' .. f .. ':' .. string.format('%d', head_ends))
    audit_end(token, true)
    audit('grant', head, f, px, record)
    return 1
  end
  redis.call('DEL', lock, KEYS[2])
  mark_queue(KEYS[6], ends_without(nil), last, marked, now)
  if head then
    publish(channel, 'next:' .. head)
  elseif ARGV[3] == '1' then
    publish(ARGV[2], token)
  end
  audit_end(token, true)
  return 1
end
local leaving = ARGV[3] == '1' and queued and redis.call('ZSCORE', presence, token) and token
local ends = ends_without(leaving)
if leaving then
  -- The next head, told once we leave: read first, as queue_ends() is.
  local next_head = head == token and not current and
    live_waiters(queue, presence, wake, now, 2)[2]
  local channel = next_head and waiter_channel(wake, next_head, ARGV[2])
  leave(queue, presence, wake, token)
  if next_head then
    publish(channel, 'next:' .. next_head)
  end
end
mark_queue(KEYS[6], ends, last, marked, now)
audit_end(token, false)
return 0
