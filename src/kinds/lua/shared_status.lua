-- KEYS NAME, queue, writer, readers, rowners, epoch. Read-only. Returns
-- {owner record or false, PTTL, ...} for each live shared holder (none
-- unless NAME holds the marker 'dlock:shared').

if redis.call('GET', KEYS[1]) ~= 'dlock:shared' then
  return {}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local live = redis.call('ZRANGEBYSCORE', KEYS[4], '(' .. now, '+inf', 'WITHSCORES')
local out = {}
for i = 1, #live, 2 do
  local record = redis.call('HGET', KEYS[5], live[i])
  out[#out + 1] = record ~= '' and record or false
  out[#out + 1] = tonumber(live[i + 1]) - now
end
return out
