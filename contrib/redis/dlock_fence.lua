#!lua name=dlock_fence
-- dlock's guard for data kept in Redis: writes that carry the writer's
-- fencing token (DLOCK_FENCE) and are refused, atomically, when a newer
-- token has already written. Load it with `dlock guard load-redis` or
--   redis-cli -x FUNCTION LOAD REPLACE < /usr/share/dlock/dlock_fence.lua
--
-- Each function takes two keys, the data and the key that keeps the last
-- token accepted for it (one fence key may guard several data keys: pass
-- the same one), and the token as its last argument:
--   FCALL dlock_fenced_set    2 KEY FENCEKEY VALUE FENCE       -> OK
--   FCALL dlock_fenced_hset   2 KEY FENCEKEY FIELD VALUE FENCE -> HSET's reply
--   FCALL dlock_fenced_incrby 2 KEY FENCEKEY INCREMENT FENCE   -> the new value
-- A token equal to the last one accepted is the same holder writing again:
-- allowed. An older one: the error "STALE ...", and nothing is written. A
-- token that is not a decimal integer from 0 to 9007199254740990 (digits
-- only, as dlock writes it) or a fence key that does not hold one: an
-- error, and nothing is written. In a Redis Cluster both keys must hash to
-- one slot: give them one hash tag ({report}:data, {report}:fence).

local TOKEN_MAX = 9007199254740990 -- 2^53 - 2: exact as a Lua number

-- Each check returns nil when the call may go on, else the error reply
-- that refuses it ("CODE text", as Redis words its own).
local function refuse(message)
  return redis.error_reply(message)
end

-- The number in `s`, or nil if `s` is not a token as dlock writes it.
local function token_of(s)
  if type(s) ~= 'string' or not s:match('^[0-9]+$') or #s > 16 or
      (#s > 1 and s:sub(1, 1) == '0') then
    return nil
  end
  local n = tonumber(s)
  if n > TOKEN_MAX then
    return nil
  end
  return n
end

-- The call's token against the one stored at fence_key.
local function check_fence(fence_key, arg)
  local fence = token_of(arg)
  if not fence then
    return refuse('ERR fence "' .. tostring(arg) ..
      '" is not a fencing token (a decimal integer from 0 to 9007199254740990)')
  end
  local stored = redis.call('GET', fence_key)
  if not stored then
    return nil -- a resource never written with a token: any token is newer
  end
  local last = token_of(stored)
  if not last then
    return refuse('ERR ' .. fence_key .. ' holds "' .. stored .. '", not a fencing token')
  end
  if fence < last then
    return refuse('STALE fence ' .. arg .. ' is older than ' .. stored ..
      ', the last accepted at ' .. fence_key .. ': a newer holder has written')
  end
  return nil
end

-- The keys and arguments, the fence's, and the data key's type (absent or
-- `want`, so that the write cannot fail after the fence was checked).
local function check(keys, args, n, want)
  if #keys ~= 2 or #args ~= n then
    return refuse('ERR wrong number of arguments: 2 keys (KEY FENCEKEY) and ' .. n ..
      ' arguments, the fence last')
  end
  local err = check_fence(keys[2], args[n])
  if err or not want then
    return err
  end
  local t = redis.call('TYPE', keys[1])['ok']
  if t ~= 'none' and t ~= want then
    return refuse('WRONGTYPE ' .. keys[1] .. ' holds a ' .. t .. ', not a ' .. want)
  end
  return nil
end

-- The data is written first: a write Redis refuses (INCRBY of a value that
-- is not an integer) leaves the fence key as it was.
local function fenced_set(keys, args)
  local err = check(keys, args, 2, nil)
  if err then
    return err
  end
  redis.call('SET', keys[1], args[1])
  redis.call('SET', keys[2], args[2])
  return redis.status_reply('OK')
end

local function fenced_hset(keys, args)
  local err = check(keys, args, 3, 'hash')
  if err then
    return err
  end
  local added = redis.call('HSET', keys[1], args[1], args[2])
  redis.call('SET', keys[2], args[3])
  return added
end

local function fenced_incrby(keys, args)
  local err = check(keys, args, 2, 'string')
  if err then
    return err
  end
  local value = redis.call('INCRBY', keys[1], args[1])
  redis.call('SET', keys[2], args[2])
  return value
end

redis.register_function('dlock_fenced_set', fenced_set)
redis.register_function('dlock_fenced_hset', fenced_hset)
redis.register_function('dlock_fenced_incrby', fenced_incrby)
