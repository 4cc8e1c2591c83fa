-- The mutex's extend. KEYS lock, owner, fence, and `freed` when
-- repairing; ARGV token, ttl_ms, "1" to repair a missing key (Redlock) or
-- "0", fence, fence_ttl_ms. Returns 1 (extended), 2 (repaired: not a vote)
-- or 0.
--
-- Repair (Redlock, ARGV[3] "1", KEYS[4] the key `freed`): a server
-- without our key where no release of our fence or a later one ran
-- (`freed` below ours) lost it to a restart or an expiry, whoever was
-- granted and gone there since (another client's failed attempt): it gets
-- our key back, and its fence is raised to ours. One whose `freed` is ours
-- or above saw our own release (this extend overtook it on another
-- connection): no repair, so no ghost key. The caller does not count a
-- repair as a vote.

local current = redis.call('GET', KEYS[1])
if current == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
  audit('extend', ARGV[1], nil, ARGV[2])
  return 1
end
if current or ARGV[3] ~= '1' then
  return 0
end
local stored, queued = fence_of(KEYS[3])
if not stored then
  return redis.error_reply(queued)
end
local freed, why = fence_of(KEYS[4])
if not freed then
  return redis.error_reply(why)
end
local ours = tonumber(ARGV[4])
if freed >= ours then
  return 0
end
redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])
if stored < ours then
  set_fence(KEYS[3], ARGV[4], ARGV[5], queued, (clock()))
end
audit('repair', ARGV[1], nil, ARGV[2])
return 2
