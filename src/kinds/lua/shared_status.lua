-- KEYS NAME, writer, readers, rowners, epoch. Read-only. Returns
-- {owner record or false, PTTL, ...} for each live shared holder (none
-- unless NAME holds SHARED_MARKER). Keys named as NAME are absent
-- (present_key()): no readers, or none with an owner record.

local readers, rowners = present_key(3), present_key(4)
if redis.call('GET', KEYS[1]) ~= SHARED_MARKER or not readers then
  return {}
end
local now = clock()
local holders = redis.call('ZRANGEBYSCORE', readers, '(' .. now, '+inf', 'WITHSCORES')
local out = {}
for i = 1, #holders, 2 do
  local record = rowners and redis.call('HGET', rowners, holders[i])
  out[#out + 1] = record and record ~= '' and record or false
  out[#out + 1] = tonumber(holders[i + 1]) - now
end
return out
