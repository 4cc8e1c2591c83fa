-- The fence write-back of every kind. KEYS the fence key, and the name's
-- epoch key when the grant's kind has one (see shared_acquire.lua); ARGV
-- fence, fence_ttl_ms. Each key is raised to at least ARGV[1], never
-- lowered (a delayed packet must not); one that holds the value already
-- gets its TTL again, so an epoch lives as long as its shared holders keep
-- coming. Returns 1.

local stored = {}
for i, key in ipairs(KEYS) do
  local value, err = fence_of(key)
  if not value then
    return redis.error_reply(err)
  end
  stored[i] = value
end
for i, key in ipairs(KEYS) do
  if stored[i] <= tonumber(ARGV[1]) then
    redis.call('SET', key, ARGV[1], 'PX', ARGV[2])
  end
end
return 1
