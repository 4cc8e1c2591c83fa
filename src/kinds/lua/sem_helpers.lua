-- A semaphore (docs/semaphores.md): NAME is a sorted set of the holders'
-- tokens scored by the expiry of their permit in server milliseconds; the
-- auxiliary hashes `slots` (token -> slot) and `owners` (token -> owner
-- record) and the string `limit` (N) live exactly as long as the last
-- permit; the hash `fences` (slot -> last token) lives fence_ttl. Every
-- script refuses a NAME of another type first (here, before the script's
-- own lines), reads the clock and its expired permits, checks, and only
-- then writes: reap() drops the expired permits and gives every key but
-- the fences the lifetime of the last permit left, or deletes them. The
-- waiters queue (helpers.lua: queue, presence, wake), and the free
-- permits are kept for the first of them: a release tells each waiter it
-- gives a permit to, and no other.

do
  local t = redis.call('TYPE', KEYS[1])['ok']
  if t ~= 'zset' and t ~= 'none' then
    return redis.error_reply('WRONGTYPE ' .. KEYS[1] .. ' is ' .. (t == 'string' and
      'a mutex or another kind of lock (a string)' or 'a ' .. t) .. ', not a semaphore')
  end
end
local function reap(name, limit, slots, owners, now)
  local left = drop_expired(name, {slots, owners}, now)
  if not left then
    redis.call('DEL', limit, slots, owners)
    return
  end
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
