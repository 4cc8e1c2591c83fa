-- A semaphore (docs/semaphores.md): NAME is a sorted set of the holders'
-- tokens scored by the expiry of their permit in server milliseconds; the
-- auxiliary hashes `slots` (token -> slot) and `owners` (token -> owner
-- record) and the string `limit` (N) live exactly as long as the last
-- permit; the hash `fences` (slot -> last token) lives fence_ttl. Every
-- script reads the clock and its expired permits first, checks, and only
-- then writes: reap() drops the expired permits and gives every key but
-- the fences the lifetime of the last permit left, or deletes them.

local function kind_error(name)
  local t = redis.call('TYPE', name)['ok']
  if t == 'zset' or t == 'none' then
    return nil
  end
  return 'WRONGTYPE ' .. name .. ' is ' .. (t == 'string' and
    'a mutex or another kind of lock (a string)' or 'a ' .. t) .. ', not a semaphore'
end
local function clock()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000),
    tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local function reap(name, limit, slots, owners, now)
  local dead = redis.call('ZRANGEBYSCORE', name, '-inf', now)
  if #dead > 0 then
    redis.call('ZREMRANGEBYSCORE', name, '-inf', now)
    redis.call('HDEL', slots, unpack(dead))
    redis.call('HDEL', owners, unpack(dead))
  end
  local last = redis.call('ZRANGE', name, -1, -1, 'WITHSCORES')
  if #last == 0 then
    redis.call('DEL', limit, slots, owners)
    return
  end
  local left = tonumber(last[2]) - now
  for _, key in ipairs({name, limit, slots, owners}) do
    redis.call('PEXPIRE', key, left)
  end
end
local function live_score(name, token, now)
  local score = redis.call('ZSCORE', name, token)
  if score and tonumber(score) > now then
    return tonumber(score)
  end
  return nil
end
