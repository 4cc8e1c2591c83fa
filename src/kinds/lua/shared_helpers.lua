-- Shared holders (docs/shared.md): NAME holds the marker 'dlock:shared'
-- (see mutex_acquire.lua) with the PX of the last holder's expiry; the
-- holders are the sorted set `readers` (token -> expiry in server ms) with
-- their owner records in the hash `rowners`, both living as long as NAME.
-- Their fence names the exclusive epoch: every shared holder between two
-- exclusive ones has the same. live() drops the expired holders and gives
-- NAME and the keys the last expiry left, or deletes them.

local function clock()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000),
    tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local function live(name, readers, rowners, now)
  local dead = redis.call('ZRANGEBYSCORE', readers, '-inf', now)
  if #dead > 0 then
    redis.call('ZREM', readers, unpack(dead))
    redis.call('HDEL', rowners, unpack(dead))
  end
  local last = redis.call('ZRANGE', readers, -1, -1, 'WITHSCORES')
  if #last == 0 then
    redis.call('DEL', name, readers, rowners)
    return false
  end
  local left = tonumber(last[2]) - now
  redis.call('SET', name, 'dlock:shared', 'PX', left)
  redis.call('PEXPIRE', readers, left)
  redis.call('PEXPIRE', rowners, left)
  return true
end
