-- A fair lock (docs/fair.md): NAME is the mutex's string. Its waiters
-- queue (helpers.lua: the sorted sets `queue` and `presence`, the hash
-- `wake`). A free lock with a queue is the head's, for as long as its
-- lease lasts. The wake-up is targeted: "next:" and the head's token, on
-- the channel of the head's process, so that only that process wakes up;
-- it acts only on its own token. The queue's life (the longest lease) is
-- marked in the fence key (fence_of()), where a plain acquire and a new
-- shared holder, which name none of these keys, find it: each script
-- leaves the mark true of the queue it leaves, with set_fence() when it
-- writes a fence, else with mark_queue().

-- The head: the first waiter whose lease has not ended, and that end.
local function live_head(queue, presence, wake, now)
  local first, ends = live_waiters(queue, presence, wake, now, 1)
  return first[1], ends[1]
end

-- The end of the queue's life: its longest presence lease (0: no waiter),
-- once `leaving` (a token, or nil) has left it. Read before it leaves: a
-- node of a migrating slot refuses a script's access to a key the script
-- emptied.
local function queue_ends(presence, leaving)
  local longest = redis.call('ZRANGE', presence, -1, -1, 'WITHSCORES')
  if longest[1] and longest[1] == leaving then
    longest = redis.call('ZRANGE', presence, -2, -2, 'WITHSCORES')
  end
  return tonumber(longest[2]) or 0
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
    redis.call('SET', fence, value, 'PX', string.format('%d', ends - now))
  end
end
