-- Shared holders (docs/shared.md): NAME holds SHARED_MARKER
-- (see mutex_acquire.lua) with the PX of the last holder's expiry; the
-- holders are the sorted set `readers` (token -> expiry in server ms) with
-- their owner records in the hash `rowners`, both living as long as NAME.
-- Their fence names the exclusive epoch: every shared holder between two
-- exclusive ones has the same. live() takes out `leaving` (a live holder
-- that goes; nil: none), drops the expired holders and gives NAME and the
-- keys the last expiry left, or deletes them: at once when no other holder
-- is live, never reading a key it emptied (a migrating slot's node
-- refuses a script's access to it).

local function live(name, readers, rowners, now, leaving)
  if leaving then
    if redis.call('ZCOUNT', readers, '(' .. now, '+inf') == 1 then
      redis.call('DEL', name, readers, rowners)
      return false
    end
    redis.call('ZREM', readers, leaving)
    redis.call('HDEL', rowners, leaving)
  end
  local left = drop_expired(readers, {rowners}, now)
  if not left then
    redis.call('DEL', name, readers, rowners)
    return false
  end
  redis.call('SET', name, SHARED_MARKER, 'PX', left)
  redis.call('PEXPIRE', readers, left)
  redis.call('PEXPIRE', rowners, left)
  return true
end
