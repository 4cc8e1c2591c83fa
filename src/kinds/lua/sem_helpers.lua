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
-- A WRONGTYPE error naming the first of `slots`, `owners` and `fences`
-- that is not a hash, or nil: checked before a script's first write, as
-- its HGETs and HSETs would raise it halfway. A key given as nil (absent
-- while the slot migrates, present_key()) is not asked.
local function hashes_refused(slots, owners, fences)
  local keys = {slots, owners, fences}
  for i = 1, 3 do
    local t = keys[i] and redis.call('TYPE', keys[i])['ok']
    if t and t ~= 'hash' and t ~= 'none' then
      return redis.error_reply('WRONGTYPE ' .. keys[i] .. ' is a ' .. t .. ', not a hash')
    end
  end
  return nil
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
-- The slot of the live permit of `token` (a retry of our own call keeps
-- it), else the lowest slot that no live permit holds: `live` lists the
-- live holders' tokens, every `step`-th element (2: a list read WITHSCORES).
local function permit_slot(slots, token, live, step)
  local taken = {}
  for i = 1, #live, step do
    local holder = live[i]
    local s = redis.call('HGET', slots, holder)
    if holder == token and s then
      return tonumber(s)
    elseif s then
      taken[s] = true
    end
  end
  local slot = 0
  while taken[tostring(slot)] do
    slot = slot + 1
  end
  return slot
end
-- The last token of `slot` in the hash `fences`, or nil and the error
-- when the stored one is no token.
local function slot_fence(fences, slot)
  return fence_parse(redis.call('HGET', fences, slot), fences .. ' field ' .. slot)
end
-- Gives `token` the permit of `slot` for `px` ms, its owner `record`, and
-- the slot's next token after `last` (slot_fence()), which the hash keeps
-- `fence_ttl` ms. Returns that token.
local function grant_permit(name, slots, owners, fences, token, slot, last, px, fence_ttl,
                            record, now_us)
  local f = next_fence(last, now_us)
  local now = math.floor(now_us / 1000) -- clock()'s ms
  redis.call('ZADD', name, now + px, token)
  redis.call('HSET', slots, token, slot)
  redis.call('HSET', owners, token, record)
  redis.call('HSET', fences, slot, f)
  redis.call('PEXPIRE', fences, fence_ttl)
  audit('permit', token, f, string.format('%d', px), record)
  return f
end
