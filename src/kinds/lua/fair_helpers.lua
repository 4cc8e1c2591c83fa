-- A fair lock (docs/fair.md): NAME is the mutex's string. Its waiters
-- queue in the sorted set `queue` (token -> arrival, in server µs), and
-- each keeps its place with a presence lease in the sorted set `presence`
-- (token -> end of the lease, in server ms). Both keys live as long as the
-- longest lease. A free lock with a queue is the head's, for as long as
-- its lease lasts. The wake-up is targeted: "next:" and the head's token,
-- on the channel of the head's process (the mutex's channel, ":", then
-- the host and pid of its owner record, kept in the hash `wake`), so that
-- only that process wakes up; it acts only on its own token. A token is
-- in all three keys or in none. leave() takes waiters out: `wake` first,
-- so that a key of another type there fails before anything is written
-- (the scripts read queue and presence before they write). live_head() is
-- the first waiter whose lease has not ended: only when the head's has are
-- the dead dropped (all of them), since a dead waiter behind a live head
-- changes no grant until it is the head; that spares a ZRANGEBYSCORE per
-- call. The queue's life (the longest lease) is marked in the fence key
-- (fence_of()), where a plain acquire and a new shared holder, which name
-- none of these keys, find it: each script leaves the mark true of the
-- queue it leaves, with set_fence() when it writes a fence, else with
-- mark_queue().

local function leave(queue, presence, wake, ...)
  redis.call('HDEL', wake, ...)
  redis.call('ZREM', queue, ...)
  redis.call('ZREM', presence, ...)
end
local function live_head(queue, presence, wake, now)
  while true do
    local head = redis.call('ZRANGE', queue, 0, 0)[1]
    if not head then
      return nil
    end
    local ends = tonumber(redis.call('ZSCORE', presence, head))
    if ends and ends > now then
      return head, ends
    end
    local dead = redis.call('ZRANGEBYSCORE', presence, '-inf', now)
    dead[#dead + 1] = head
    leave(queue, presence, wake, unpack(dead))
  end
end

-- The end of the queue's life: its longest presence lease (0: no waiter).
local function queue_ends(presence)
  return tonumber(redis.call('ZRANGE', presence, -1, -1, 'WITHSCORES')[2]) or 0
end

-- Makes the mark in the fence key true of a queue whose life ends at
-- `ends` (queue_ends()), when it is not: `last` and `marked` are what
-- fence_of() read (nil: the key holds no token, which is left for an
-- acquire to report). The fence key keeps its TTL if that outlasts the
-- mark.
local function mark_queue(fence, ends, last, marked, now)
  if not last or ends == marked or (ends <= now and marked <= now) then
    return
  end
  local value = fence_value(string.format('%d', last), ends, now)
  local pttl = ends > now and redis.call('PTTL', fence) or -1
  if pttl == -1 or pttl >= ends - now then
    redis.call('SET', fence, value, 'KEEPTTL')
  else
    redis.call('SET', fence, value, 'PX', ends - now)
  end
end
