-- KEYS NAME, writer, readers, rowners, epoch. Read-only. Returns
-- {owner record or false, PTTL, ...} for each live shared holder (none
-- unless NAME holds SHARED_MARKER).

if redis.call('GET', KEYS[1]) ~= SHARED_MARKER then
  return {}
end
local now = clock()
local holders = redis.call('ZRANGEBYSCORE', KEYS[3], '(' .. now, '+inf', 'WITHSCORES')
local out = {}
for i = 1, #holders, 2 do
  local record = redis.call('HGET', KEYS[4], holders[i])
  out[#out + 1] = record ~= '' and record or false
  out[#out + 1] = tonumber(holders[i + 1]) - now
end
return out
