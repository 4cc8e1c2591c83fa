-- KEYS NAME, limit, slots, owners, fences. Read-only: expired permits are
-- left out, not reaped. Returns {limit or false, {owner record or false,
-- PTTL, slot, fence, ...} for each live permit, by slot}.

local now = clock()
local live = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. now, '+inf', 'WITHSCORES')
local held = {}
for i = 1, #live, 2 do
  local slot = tonumber(redis.call('HGET', KEYS[3], live[i])) or -1
  local fence, err = fence_parse(redis.call('HGET', KEYS[5], slot), KEYS[5] .. ' field ' .. slot)
  if not fence then
    return redis.error_reply(err)
  end
  held[#held + 1] = {redis.call('HGET', KEYS[4], live[i]), tonumber(live[i + 1]) - now, slot,
    string.format('%d', fence)}
end
table.sort(held, function(a, b) return a[3] < b[3] end)
local out = {}
for _, h in ipairs(held) do
  for _, v in ipairs(h) do
    out[#out + 1] = v
  end
end
return {redis.call('GET', KEYS[2]), out}
