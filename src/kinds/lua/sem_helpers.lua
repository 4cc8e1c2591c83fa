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
-- The keys given that are not nil (a release may find some absent:
-- present_key()).
local function present(...)
  local keys = {}
  for i = 1, select('#', ...) do
    keys[#keys + 1] = select(i, ...)
  end
  return keys
end
local function reap(name, limit, slots, owners, now)
  local left = drop_expired(name, present(slots, owners), now)
  local keys = present(limit, slots, owners)
  if not left then
    if #keys > 0 then
      redis.call('DEL', unpack(keys))
    end
    return
  end
  redis.call('PEXPIRE', name, left)
  for _, key in ipairs(keys) do
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
