-- The one parser of a stored fencing token, shared by every script that
-- reads a fence key: a decimal integer from 0 to 2^53 - 2, so that the
-- next token (+1) is still exact in Lua's doubles, written as the scripts
-- write it (no sign, no leading zero: one value, one spelling, as Redis's
-- own integers). Lua's tonumber() alone would take "inf", "-5", "1e400" or
-- 2^53 + 1, and the tokens would stop growing. Returns the value (0 when
-- the key is missing) or nil and an error that names the key. For a token
-- kept in a hash field; fence_of() reads a fence key.

local function fence_parse(s, where)
  if not s then
    return 0
  end
  if #s > 16 or not (s == '0' or string.match(s, '^[1-9]%d*$')) or
      tonumber(s) > 9007199254740990 then
    return nil, 'ERR ' .. where .. ' holds ' .. string.format('%q', string.sub(s, 1, 40)) ..
      ', not a fencing token (a decimal integer from 0 to 9007199254740990)'
  end
  return tonumber(s)
end
