-- The fence write-back of every kind. KEYS the fence key, and the name's
-- epoch key when the grant's kind has one (see shared_acquire.lua); ARGV
-- fence, fence_ttl_ms, and "existing" from an exclusive holder, whose
-- write-back raises the epoch only where shared holders made one (the
-- epoch's absence lets a later exclusive grant skip its write-back,
-- docs/redlock.md). Each key is raised to at least ARGV[1], never lowered
-- (a delayed packet must not), and keeps a fair queue's mark (fence_of());
-- one that holds the value already gets its TTL again, so an epoch lives
-- as long as its shared holders keep coming. Returns 1.

local stored, queued = {}, {}
for i, key in ipairs(KEYS) do
  local raw = redis.call('GET', key)
  local value, ends = fence_read(raw, key)
  if not value then
    return redis.error_reply(ends)
  end
  if i > 1 and ARGV[3] == 'existing' and not raw then
    value = nil
  end
  stored[i], queued[i] = value, ends
end
local now = clock()
for i, key in ipairs(KEYS) do
  if stored[i] and stored[i] <= tonumber(ARGV[1]) then
    set_fence(key, ARGV[1], ARGV[2], queued[i], now)
  end
end
return 1
