-- What every script shares. The build puts this file first in every
-- script, then the kind's KIND_helpers.lua if there is one (KIND: the
-- script's name up to its first '_'), then the script's own file
-- (cmake/embed_lua.cmake); comment and blank lines are left out, and so
-- is every local function the script does not call. Every helper is a
-- local: Redis allows a script no globals.
--
-- Redis does not roll back a script's earlier writes when a later command
-- fails, so each script does every read and check (types, TIME) before its
-- first write, and a release message goes through redis.pcall.

-- The marker a name held shared holds (docs/shared.md), never a token
-- (tokens are 32 lower-case hex characters): the mutex's acquire must
-- know it as well as the shared holders' scripts.
local SHARED_MARKER = 'dlock:shared'

-- KEYS[i], or nil where the call names KEYS[1] instead: a key the client
-- found absent while the name's slot migrates (a node of a migrating slot
-- serves no call that names a key it lacks, even one that exists nowhere,
-- and lets no script touch one). Only the scripts that take such calls
-- (engine/scripts.h) ask.
local function present_key(i)
  return KEYS[i] ~= KEYS[1] and KEYS[i] or nil
end

-- The server's clock, in ms and in µs: TIME, read once per call of a
-- script (Redis holds a script's time still for its keys' expiry too), so
-- that the audit's entry costs no second reading. Its two strings become
-- numbers in the arithmetic: exact, as µs stay below 2^53.
local clock_ms = nil
local clock_us = nil
local function clock()
  if not clock_us then
    local t = redis.call('TIME')
    clock_us = t[1] * 1000000 + t[2]
    clock_ms = math.floor(clock_us / 1000)
  end
  return clock_ms, clock_us
end

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
  local n = #s <= 16 and (s == '0' or string.match(s, '^[1-9]%d*$')) and tonumber(s)
  if not n or n > 9007199254740990 then
    return nil, 'ERR ' .. where .. ' holds ' .. string.format('%q', string.sub(s, 1, 40)) ..
      ', not a fencing token (a decimal integer from 0 to 9007199254740990)'
  end
  return n
end

-- The fence stored in a string key, by fence_parse(), and the mark a fair
-- queue keeps there: a fence key holds the token alone, or, while a fair
-- lock's waiters queue on its name (docs/fair.md), the token, " queue "
-- and the end of the queue's life in server ms. So the scripts of another
-- kind learn of the queue from the key they read anyway, without naming
-- the queue's keys. Returns the fence and that end (0: no queue), or nil
-- and an error; fence_read() reads a value got otherwise. A key of another
-- type makes GET raise WRONGTYPE.
local function fence_read(s, key)
  if not s or not string.find(s, ' ', 1, true) then
    local fence, err = fence_parse(s, key) -- no mark: the common case
    return fence, fence and 0 or err
  end
  local token, ends = string.match(s, '^(%d+) queue ([1-9]%d*)$')
  if ends and #ends > 15 then
    token, ends = nil, nil
  end
  local fence, err = fence_parse(token or s, key)
  if not fence then
    return nil, err
  end
  return fence, tonumber(ends) or 0
end
local function fence_of(key)
  return fence_read(redis.call('GET', key), key)
end

-- A fence key's value: the fence `f` (a decimal string), with the queue's
-- mark (see fence_of()) while it lasts: until `ends`, server ms; `now` is
-- the server's time in ms.
local function fence_value(f, ends, now)
  return ends > now and f .. ' queue ' .. string.format('%d', ends) or f
end

-- Writes fence_value() to `key` for `px` ms, and at least as long as the
-- mark lasts.
local function set_fence(key, f, px, ends, now)
  if ends <= now then
    redis.call('SET', key, f, 'PX', px)
  else
    redis.call('SET', key, fence_value(f, ends, now), 'PX',
      string.format('%d', math.max(tonumber(px), ends - now)))
  end
end

-- The fence rule of every grant: a token is max(last + 1, server clock in
-- µs), as a decimal string. The clock covers a counter rolled back by a
-- restart from an older snapshot, not only one that was lost, and +1
-- makes every grant's token new, so no two holders can end up with the
-- same largest token. A Redlock acquire also sends a `proposal` (the
-- client's clock and a lead, docs/redlock.md), which is the token when it
-- is larger and at most PROPOSAL_AHEAD_US ahead of the server's clock: so
-- every server of a majority usually grants the same token, and that
-- token needs no write-back; the bound keeps a token near the clock of
-- the server that grants it (the restart rule counts on that), whatever
-- the client's clock says.
local PROPOSAL_AHEAD_US = 100000
local function next_fence(last, now_us, proposal)
  local f = math.max(last + 1, now_us)
  if proposal and proposal > f and proposal <= now_us + PROPOSAL_AHEAD_US then
    f = proposal
  end
  return string.format('%d', f)
end

-- The host and pid (a decimal string) an owner record names, or nil when
-- it is not a JSON object with both. A record as dlock's clients write it
-- (src/base/owner.c), with a host that needs no escape, is matched
-- without decoding the JSON: a waiter's every join reads one.
local function process_of(record)
  if not record then
    return nil
  end
  local host, pid = string.match(record, '^{"host":"([^"\\]*)","pid":([1-9]%d*),')
  if host and #pid <= 15 then
    return host, pid
  end
  local ok, o = pcall(cjson.decode, record)
  if ok and type(o) == 'table' and type(o.host) == 'string' and type(o.pid) == 'number' then
    return o.host, string.format('%d', o.pid)
  end
  return nil
end

-- Drops the members of the sorted set `zset` whose score, an expiry in
-- server ms, is `now` or past, and their fields in the `hashes`. Returns
-- the ms left until the last live member's expiry, or nil when none is
-- left: the semaphore's permits and the shared holders.
local function drop_expired(zset, hashes, now)
  local dead = redis.call('ZRANGEBYSCORE', zset, '-inf', now)
  if #dead > 0 then
    redis.call('ZREMRANGEBYSCORE', zset, '-inf', now)
    for _, hash in ipairs(hashes) do
      redis.call('HDEL', hash, unpack(dead))
    end
  end
  local last = redis.call('ZRANGE', zset, -1, -1, 'WITHSCORES')
  return last[1] and tonumber(last[2]) - now
end

-- The waiters' queue of a kind whose waiters queue (the fair lock,
-- docs/fair.md; the semaphore, docs/semaphores.md): the sorted set `queue`
-- (token -> arrival, in server µs), the sorted set `presence` (token ->
-- the end of the waiter's presence lease, in server ms) and the hash
-- `wake` (token -> the host and pid of the waiter's process, whose channel
-- a release tells: the name's channel, ":", host:pid; then, for a waiter
-- that asked to be handed the lock or a permit, a newline and what the
-- hand-over needs). A token is in all three or in none, and the three live
-- as long as the longest lease. leave() takes waiters out: `wake` first,
-- so that a key of another type there fails before anything is written
-- (the scripts read queue and presence before they write).
local function leave(queue, presence, wake, ...)
  redis.call('HDEL', wake, ...)
  redis.call('ZREM', queue, ...)
  redis.call('ZREM', presence, ...)
end

-- The first `k` waiters (k >= 1) whose lease has not ended, in the order
-- they came, and the ends of their leases. Only when one of them is dead
-- are the dead dropped (all of them): a dead waiter further back changes
-- no grant until it is among the first, and that spares a ZRANGEBYSCORE
-- per call.
local function live_waiters(queue, presence, wake, now, k)
  while true do
    local first, ends, dead = redis.call('ZRANGE', queue, 0, k - 1), {}, nil
    for i, token in ipairs(first) do
      ends[i] = tonumber(redis.call('ZSCORE', presence, token))
      if not ends[i] or ends[i] <= now then
        dead = redis.call('ZRANGEBYSCORE', presence, '-inf', now)
        dead[#dead + 1] = token
        break
      end
    end
    if not dead then
      return first, ends
    end
    leave(queue, presence, wake, unpack(dead))
  end
end

-- Puts `token` at the tail of the queue, after every arrival (two in one
-- µs keep their order): after `tail`, the queue's last member and score
-- as keep_place() read them. `where` is its entry in `wake`. The score is
-- written as an integer: Redis spells a Lua number with "%.17g", which
-- costs more.
local function join(queue, wake, token, where, now_us, tail)
  local seq = now_us
  if tail[2] and tonumber(tail[2]) >= seq then
    seq = tonumber(tail[2]) + 1
  end
  redis.call('HSET', wake, token, where)
  redis.call('ZADD', queue, string.format('%d', seq), token)
end

-- Renews the presence lease of `token`, a waiter, to `lease` ms from now,
-- and gives the queue's keys the life of the longest lease, whose end it
-- returns. `marked` (nil: not known) is an end the keys already live to,
-- at least the longest lease's: a fair queue's mark (fair_helpers.lua),
-- which every fair script keeps so. A lease that ends by then changes
-- neither the longest lease nor the keys' life.
local function renew(queue, presence, wake, token, lease, now, marked)
  local ends = now + lease
  redis.call('ZADD', presence, string.format('%d', ends), token)
  if marked and ends <= marked then
    return marked
  end
  local longest = tonumber(redis.call('ZRANGE', presence, -1, -1, 'WITHSCORES')[2])
  local px = string.format('%d', longest - now)
  for _, key in ipairs({queue, presence, wake}) do
    redis.call('PEXPIRE', key, px)
  end
  return longest
end

-- A refused waiter keeps its place, or, when it has none (never queued,
-- or its lease `ends` has come: it left), joins at the tail, its entry in
-- `wake` the host and pid of its owner `record`, then a newline and
-- `handover` when given (a waiter that may be handed the lock or a
-- permit: what the release needs to grant it); then its lease is
-- renewed (renew(), with `marked`). Returns renew()'s end of the longest
-- lease. The caller read `presence` (`ends`); a waiter that joins reads
-- the queue's tail before anything is written, so that a key of another
-- type there fails first (a caller may not have read the queue).
local function keep_place(queue, presence, wake, token, ends, record, handover, lease, now, now_us,
                          marked)
  if not ends or ends <= now then
    local tail = redis.call('ZRANGE', queue, -1, -1, 'WITHSCORES')
    if ends then
      leave(queue, presence, wake, token)
    end
    local host, pid = process_of(record)
    local where = host and host .. ':' .. pid or ''
    if handover and where ~= '' and not string.find(where, '\n', 1, true) then
      where = where .. '\n' .. handover
    end
    join(queue, wake, token, where, now_us, tail)
  end
  return renew(queue, presence, wake, token, lease, now, marked)
end

-- The owner record of a waiter a release hands the lock or a permit to,
-- its time of "since" the hand-over's (server ms).
local function handed_record(record, now)
  return (string.gsub(record, '"since":%d+', '"since":' .. string.format('%d', now), 1))
end

-- The channel of the process of `token`, a waiter (the name's channel
-- `base` when its entry names none), and, if the waiter asked to be
-- handed the lock or a permit, what its entry keeps for that after the
-- newline: its TTL (a number), fence TTL and the rest (its owner record,
-- after a semaphore's N).
local function waiter_channel(wake, token, base)
  local entry = redis.call('HGET', wake, token) or ''
  local nl = string.find(entry, '\n', 1, true)
  local where = nl and string.sub(entry, 1, nl - 1) or entry
  local ttl, fence_ttl, rest = string.match(nl and string.sub(entry, nl + 1) or '',
    '^(%d+) (%d+) (.+)$')
  return where ~= '' and base .. ':' .. where or base, tonumber(ttl), fence_ttl, rest
end

-- The release message, for waiters: sharded (SPUBLISH) on every server,
-- so that no call has to ask whether it runs on a cluster (where it is
-- heard on the channel's slot only; a standalone Redis 7 has shard
-- channels too). A server without it (before Redis 7) or a user not
-- allowed it answers an error, and the message goes by PUBLISH; a waiter
-- falls back from SSUBSCRIBE to SUBSCRIBE alike. Through pcall: a message
-- is not worth failing a release for.
local function publish(channel, message)
  if type(redis.pcall('SPUBLISH', channel, message)) ~= 'number' then
    redis.pcall('PUBLISH', channel, message)
  end
end

-- What a release tells on the name's channel (publish()) when exclusive
-- acquirers wait among the name's waiting writers (the sorted set
-- `writer`, token -> the end of its lease in server ms; docs/shared.md):
-- "writer:TOKEN", which wakes that writer alone, the live one that asked
-- last (a dead one's lease ends within 2 s; the other writers try again
-- within 600 ms, any other waiter on its own timer); with no live writer,
-- `token`, the release's own, which wakes every waiter. `writer` nil: the
-- call names none; not a sorted set (an older client's string mark): no
-- writer to single out.
local function release_message(writer, token, now)
  local last = writer and redis.pcall('ZRANGE', writer, -1, -1, 'WITHSCORES')
  if type(last) == 'table' and last[1] and tonumber(last[2]) > now then
    return 'writer:' .. last[1]
  end
  return token
end

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
  -- The trailer comes off the end (nil there shortens the arrays).
  local n = #ARGV
  for i = 1, 9 do
    audit_arg[i] = ARGV[n - 9 + i]
    ARGV[n - 9 + i] = nil
  end
  audit_key = KEYS[#KEYS]
  KEYS[#KEYS] = nil
  if audit_key == KEYS[1] then
    -- Named as NAME (present_key()): absent while the slot migrates, where
    -- no script may create it.
    audit_key = nil
  else
    local t = redis.call('TYPE', audit_key)['ok']
    if t ~= 'none' and t ~= 'stream' then
      return redis.error_reply('WRONGTYPE ' .. audit_key .. ' is a ' .. t .. ', not an audit stream')
    end
  end
end
local function audit(event, token, fence, ttl, record, kind)
  if not audit_key then
    return
  end
  local host, pid = process_of(record)
  if not host then
    host, pid = audit_arg[3], audit_arg[4]
  end
  local _, now_us = clock()
  local now = string.format('%d', now_us)
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
  if not audit_key then
    return
  end
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
