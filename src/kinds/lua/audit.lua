-- The audit (docs/operations.md#the-audit): a client with the audit on
-- ends its acquire, release and extend calls with a trailer, KEYS the
-- name's stream {T}:dlock:audit:NAME and ARGV fence, maxlen, host, pid,
-- note (why the call is made: grant, release, cleanup, loss), held_ms
-- (since the grant, client clock), left_ms (of the validity), keep_ms (the
-- stream lives that long after its last grant or extend: the fence TTL),
-- then the marker "dlock:audit". The prologue takes the trailer off, so
-- that the rest of the script sees the words a client without the audit
-- sends, and checks the stream's type before anything is written. audit()
-- appends an entry (server time in µs, the TTL it was given) in the call
-- that grants or ends, so that no grant lacks its record; without the
-- trailer it does nothing, and the script costs what it did. A grant's
-- event is "grant" (an exclusive hold), "permit" (a semaphore's) or
-- "shared"; every entry's `kind` says which of them the hold is (an end
-- whose grant was trimmed off the stream still tells).

local audit_key, audit_arg = nil, {}
if ARGV[#ARGV] == 'dlock:audit' then
  for i = 8, 1, -1 do
    audit_arg[i] = ARGV[#ARGV - 9 + i]
  end
  for _ = 1, 9 do
    table.remove(ARGV)
  end
  audit_key = table.remove(KEYS)
  local t = redis.call('TYPE', audit_key)['ok']
  if t ~= 'none' and t ~= 'stream' then
    return redis.error_reply('WRONGTYPE ' .. audit_key .. ' is a ' .. t .. ', not an audit stream')
  end
end
local function audit(event, token, fence, ttl, record, kind)
  if not audit_key then
    return
  end
  local host, pid = audit_arg[3], audit_arg[4]
  local ok, o = pcall(cjson.decode, record)
  if ok and type(o) == 'table' and type(o.host) == 'string' and type(o.pid) == 'number' then
    host, pid = o.host, string.format('%d', o.pid)
  end
  local t = redis.call('TIME')
  local now = string.format('%d', tonumber(t[1]) * 1000000 + tonumber(t[2]))
  if event == 'release' or event == 'loss' then
    redis.call('XADD', audit_key, 'MAXLEN', '~', audit_arg[2], '*', 'event', event,
      'token', token, 'fence', audit_arg[1], 'host', host, 'pid', pid, 'time', now,
      'reason', audit_arg[5], 'held', audit_arg[6], 'left', audit_arg[7],
      'kind', kind or 'grant')
    return
  end
  redis.call('XADD', audit_key, 'MAXLEN', '~', audit_arg[2], '*', 'event', event,
    'token', token, 'fence', fence or audit_arg[1], 'host', host, 'pid', pid, 'time', now,
    'ttl', ttl, 'kind', kind or ((event == 'permit' or event == 'shared') and event or 'grant'))
  redis.call('PEXPIRE', audit_key, audit_arg[8])
end
local function audit_end(token, ours, kind)
  local note = audit_arg[5]
  if note == 'loss' then
    audit('loss', token, nil, nil, nil, kind)
  elseif ours then
    audit('release', token, nil, nil, nil, kind)
  elseif note == 'release' then
    audit_arg[5] = 'expired'
    audit('release', token, nil, nil, nil, kind)
  end
end
