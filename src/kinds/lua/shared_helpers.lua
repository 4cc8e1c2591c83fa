-- Shared holders (docs/shared.md): NAME holds SHARED_MARKER
-- (see mutex_acquire.lua) with the PX of the last holder's expiry; the
-- holders are the sorted set `readers` (token -> expiry in server ms) with
-- their owner records in the hash `rowners`, both living as long as NAME.
-- Their fence names the exclusive epoch: every shared holder between two
-- exclusive ones has the same. live() drops the expired holders and gives
-- NAME and the keys the last expiry left, or deletes them.

local function live(name, readers, rowners, now)
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
