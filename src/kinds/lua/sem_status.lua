-- KEYS NAME, limit, slots, owners, fences. Read-only: expired permits are
-- left out, not reaped. Returns {limit or false, {owner record or false,
-- PTTL, slot, fence, ...} for each live permit, by slot}. Keys named as
-- NAME are absent (present_key()).

local limit, slots, owners, fences = present_key(2), present_key(3), present_key(4), present_key(5)
local function field(hash, key)
  return hash and redis.call('HGET', hash, key)
end
local now = clock()
local live = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. now, '+inf', 'WITHSCORES')
local held = {}
for i = 1, #live, 2 do
  local slot = tonumber(field(slots, live[i])) or -1
  local fence, err = fence_parse(field(fences, slot) or nil, KEYS[5] .. ' field ' .. slot)
  if not fence then
    return redis.error_reply(err)
  end
  held[#held + 1] = {field(owners, live[i]) or false, tonumber(live[i + 1]) - now, slot,
    string.format('%d', fence)}
end
table.sort(held, function(a, b) return a[3] < b[3] end)
local out = {}
for _, h in ipairs(held) do
  for _, v in ipairs(h) do
    out[#out + 1] = v
  end
end
return {limit and redis.call('GET', limit) or false, out}
