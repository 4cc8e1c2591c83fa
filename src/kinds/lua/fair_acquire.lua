-- KEYS as the mutex's acquire, then queue, presence and wake; ARGV as the
-- mutex's, then the presence lease in ms and "1" when the waiter may be
-- handed the lock. Granted ({1, fence}) when the lock is ours already (a
-- retry) or free with no live waiter ahead of us: we leave the queue (a
-- holder is never in it). Else we join it at the tail (or keep our place)
-- and renew our lease: {0, ms until the next renewal is due, 0, end of our
-- lease}, sooner if the holder's key or a free lock's reservation for the
-- head ends first. A waiter whose lease ended behind a live head has left:
-- it joins again at the tail, as if it had been dropped. The fence key is
-- read (and checked) first: it holds the queue's mark (fair_helpers.lua).

local lock, queue, presence, wake = KEYS[1], KEYS[4], KEYS[5], KEYS[6]
local token, lease, direct = ARGV[1], tonumber(ARGV[5]), ARGV[6] == '1'
local current = redis.call('GET', lock)
local last, marked = fence_of(KEYS[2])
if not last then
  return redis.error_reply(marked)
end
local now, now_us = clock()
-- Held by another, we are refused whoever heads the queue: it is not read.
local head, head_ends
if not current or current == token then
  head, head_ends = live_head(queue, presence, wake, now)
end
if current == token or (not current and (not head or head == token)) then
  local ends = queue_ends(presence, head == token and token)
  if head == token then
    leave(queue, presence, wake, token)
  end
  local f = next_fence(last, now_us)
  redis.call('SET', lock, token, current and 'XX' or 'NX', 'PX', ARGV[2])
  set_fence(KEYS[2], f, ARGV[3], ends, now)
  redis.call('SET', KEYS[3], ARGV[4], 'PX', ARGV[2])
  audit('grant', token, f, ARGV[2])
  return {1, f}
end
local ends = head == token and head_ends or tonumber(redis.call('ZSCORE', presence, token))
local longest = keep_place(queue, presence, wake, token, ends, ARGV[4],
  direct and ARGV[2] .. ' ' .. ARGV[3] .. ' ' .. ARGV[4], lease, now, now_us, marked)
mark_queue(KEYS[2], longest, last, marked, now)
local wait = math.max(1, math.floor(lease / 3))
if current then
  local pttl = redis.call('PTTL', lock)
  if pttl >= 0 and pttl < wait then
    wait = pttl
  end
elseif head then
  wait = math.min(wait, math.max(0, head_ends - now))
end
return {0, wait, 0, now + lease}
