-- The mutex's release. KEYS lock, owner, with one server the fence key,
-- the waiting writers when the caller waited among them, and with several
-- servers, for a lock that was held, `freed` last (the lock's key in place
-- of those the client found absent while the slot migrates,
-- present_key(): a semaphore's or shared holders' name, released by an
-- adopted handle, has neither owner nor fence key); ARGV token, channel,
-- "1" to publish or "0", then "queue" with the fence key, or with `freed`
-- the lock's fence and fence_ttl_ms. Returns 1 (released), 0 (not ours)
-- or 2 (ours, left to a fair queue's release: nothing written).
--
-- Ours, with one server: a fair queue's live mark in the fence key
-- (fence_of(); docs/fair.md) says waiters queue for the name, whom this
-- script cannot name: it answers 2, and the client releases again with
-- the fair release, which hands the lock to the head. A fence key that
-- holds no token, or is of another type, says nothing: the release goes
-- on (the next acquire reports the key).
--
-- Ours, released: the message on the name's channel is release_message():
-- a holder that waited among the writers wakes the next of them alone.
--
-- Not ours: a writer that gives up its wait leaves the waiting writers
-- (see mutex_acquire.lua; looked at with PTTL first), but not in a cleanup
-- (ARGV[3] "0"): a reply that came too late must not end a wait that goes
-- on. With several servers, the release of a lock that was held (or lost)
-- names its fence in ARGV[4] and the key `freed` last in KEYS: raised to
-- that fence (never lowered, ARGV[5] its TTL), whether the key was still
-- ours here or not, it keeps the extend's repair from bringing our key
-- back after this (see mutex_extend.lua). A failed attempt's cleanup names
-- none: it held nothing.

local one_server = ARGV[4] == 'queue'
local freed = not one_server and ARGV[4] and present_key(#KEYS)
local writer = present_key(one_server and 4 or 3)
writer = writer ~= freed and writer
local ours = redis.call('GET', KEYS[1]) == ARGV[1]
local gives_up = not ours and writer and ARGV[3] == '1' and redis.call('PTTL', writer) ~= -2
local raise = freed and
  (fence_parse(redis.call('GET', freed), freed) or -1) < tonumber(ARGV[4])
if ours and one_server and present_key(3) then
  -- Only a value with a blank can hold a mark: a token alone is not read.
  local stored = redis.pcall('GET', KEYS[3])
  if type(stored) == 'string' and string.find(stored, ' ', 1, true) then
    local last, queued = fence_read(stored, KEYS[3])
    if last and queued > clock() then
      return 2
    end
  end
end
local message = ours and ARGV[3] == '1' and release_message(writer, ARGV[1], writer and clock())
if raise then
  redis.call('SET', freed, ARGV[4], 'PX', ARGV[5])
end
if not ours then
  if gives_up then
    redis.call('ZREM', writer, ARGV[1])
  end
  audit_end(ARGV[1], false)
  return 0
end
redis.call('DEL', KEYS[1], KEYS[2])
if message then
  publish(ARGV[2], message)
end
audit_end(ARGV[1], true)
return 1
