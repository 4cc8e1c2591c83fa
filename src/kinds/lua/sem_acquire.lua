-- KEYS as the mutex's acquire, then limit, slots, owners, fences; ARGV as
-- the mutex's, then the permits N. Refused: NAME of another type, or live
-- permits under another limit (an error that starts with DLOCKLIMIT and
-- names the limit in force). Busy: {0, ms until the soonest permit
-- expires}. Granted: {1, fence, slot}, the lowest slot no live permit
-- holds, fenced per slot; a retry of our own call keeps its slot.

local name, limit, slots, owners, fences = KEYS[1], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local token, permits = ARGV[1], tonumber(ARGV[5])
local now, now_us = clock()
local live = redis.call('ZRANGEBYSCORE', name, '(' .. now, '+inf', 'WITHSCORES')
local in_force = redis.call('GET', limit)
local mine = live_score(name, token, now)
if #live > 0 and in_force and tonumber(in_force) ~= permits then
  return redis.error_reply('DLOCKLIMIT ' .. name .. ' is a semaphore of ' .. in_force ..
    ' permits (' .. #live / 2 .. ' held), not ' .. ARGV[5])
end
if not mine and #live / 2 >= permits then
  return {0, tonumber(live[2]) - now}
end
local taken, slot = {}, nil
for i = 1, #live, 2 do
  local s = redis.call('HGET', slots, live[i])
  if live[i] == token then
    slot = tonumber(s)
  elseif s then
    taken[s] = true
  end
end
if not slot then
  slot = 0
  while taken[tostring(slot)] do
    slot = slot + 1
  end
end
local last, err = fence_parse(redis.call('HGET', fences, slot), fences .. ' field ' .. slot)
if not last then
  return redis.error_reply(err)
end
local f = next_fence(last, now_us)
redis.call('ZADD', name, now + tonumber(ARGV[2]), token)
redis.call('SET', limit, ARGV[5])
redis.call('HSET', slots, token, slot)
redis.call('HSET', owners, token, ARGV[4])
redis.call('HSET', fences, slot, f)
redis.call('PEXPIRE', fences, ARGV[3])
reap(name, limit, slots, owners, now)
audit('permit', token, f, ARGV[2])
return {1, f, slot}
