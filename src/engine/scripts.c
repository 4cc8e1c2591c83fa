/* The Lua scripts. Redis does not roll back a script's earlier writes when a
 * later command fails, so each script does every read and check (types,
 * TIME) before its first write, and a release message goes through
 * redis.pcall. */
#include "scripts.h"

#include "dlock.h"
#include "resp.h"
#include "slot.h"

#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_WORDS 32 /* EVALSHA, sha, numkeys, then up to 29 keys and arguments */

/* The one parser of a stored fencing token, shared by every script that
 * reads a fence key: a decimal integer from 0 to 2^53 - 2, so that the next
 * token (+1) is still exact in Lua's doubles, written as the scripts write
 * it (no sign, no leading zero: one value, one spelling, as Redis's own
 * integers). Lua's tonumber() alone would
 * take "inf", "-5", "1e400" or 2^53 + 1, and the tokens would stop growing.
 * Returns the value (0 when the key is missing) or nil and an error that
 * names the key. A key of another type makes GET raise WRONGTYPE.
 * fence_parse() is the parser itself, for a token kept in a hash field. */
#define FENCE_PARSE_LUA                                                                            \
    "local function fence_parse(s, where)\n"                                                       \
    "  if not s then\n"                                                                            \
    "    return 0\n"                                                                               \
    "  end\n"                                                                                      \
    "  if #s > 16 or not (s == '0' or string.match(s, '^[1-9]%d*$')) or\n"                         \
    "      tonumber(s) > 9007199254740990 then\n"                                                  \
    "    return nil, 'ERR ' .. where .. ' holds ' .. string.format('%q', string.sub(s, 1, 40)) ..\n"\
    "      ', not a fencing token (a decimal integer from 0 to 9007199254740990)'\n"               \
    "  end\n"                                                                                      \
    "  return tonumber(s)\n"                                                                       \
    "end\n"
#define FENCE_OF_LUA                                                                               \
    FENCE_PARSE_LUA                                                                                \
    "local function fence_of(key)\n"                                                               \
    "  return fence_parse(redis.call('GET', key), key)\n"                                          \
    "end\n"

/* The audit (docs/operations.md#the-audit): a client with the audit on
 * ends its acquire, release and extend calls with a trailer, KEYS the
 * name's stream {T}:dlock:audit:NAME and ARGV fence, maxlen, host, pid,
 * note (why the call is made: grant, release, cleanup, loss), held_ms
 * (since the grant, client clock), left_ms (of the validity), keep_ms (the
 * stream lives that long after its last grant or extend: the fence TTL),
 * then the marker "dlock:audit". The prologue takes the trailer off, so that the
 * rest of the script sees the words a client without the audit sends, and
 * checks the stream's type before anything is written. audit() appends an
 * entry (server time in µs, the TTL it was given) in the call that grants
 * or ends, so that no grant lacks its record; without the trailer it does
 * nothing, and the script costs what it did. A grant's event is "grant"
 * (an exclusive hold), "permit" (a semaphore's) or "shared"; every entry's
 * `kind` says which of them the hold is (an end whose grant was trimmed
 * off the stream still tells). */
#define AUDIT_LUA                                                                                  \
    "local audit_key, audit_arg = nil, {}\n"                                                       \
    "if ARGV[#ARGV] == 'dlock:audit' then\n"                                                       \
    "  for i = 8, 1, -1 do\n"                                                                      \
    "    audit_arg[i] = ARGV[#ARGV - 9 + i]\n"                                                     \
    "  end\n"                                                                                      \
    "  for _ = 1, 9 do\n"                                                                          \
    "    table.remove(ARGV)\n"                                                                     \
    "  end\n"                                                                                      \
    "  audit_key = table.remove(KEYS)\n"                                                           \
    "  local t = redis.call('TYPE', audit_key)['ok']\n"                                            \
    "  if t ~= 'none' and t ~= 'stream' then\n"                                                    \
    "    return redis.error_reply('WRONGTYPE ' .. audit_key .. ' is a ' .. t .. ', not an audit stream')\n"\
    "  end\n"                                                                                      \
    "end\n"                                                                                        \
    "local function audit(event, token, fence, ttl, record, kind)\n"                               \
    "  if not audit_key then\n"                                                                    \
    "    return\n"                                                                                 \
    "  end\n"                                                                                      \
    "  local host, pid = audit_arg[3], audit_arg[4]\n"                                             \
    "  local ok, o = record ~= nil and pcall(cjson.decode, record)\n"                              \
    "  if ok and type(o) == 'table' and type(o.host) == 'string' and type(o.pid) == 'number' then\n"\
    "    host, pid = o.host, string.format('%d', o.pid)\n"                                         \
    "  end\n"                                                                                      \
    "  local t = redis.call('TIME')\n"                                                             \
    "  local now = string.format('%d', tonumber(t[1]) * 1000000 + tonumber(t[2]))\n"               \
    "  if event == 'release' or event == 'loss' then\n"                                            \
    "    redis.call('XADD', audit_key, 'MAXLEN', '~', audit_arg[2], '*', 'event', event,\n"        \
    "      'token', token, 'fence', audit_arg[1], 'host', host, 'pid', pid, 'time', now,\n"       \
    "      'reason', audit_arg[5], 'held', audit_arg[6], 'left', audit_arg[7],\n"                  \
    "      'kind', kind or 'grant')\n"                                                             \
    "    return\n"                                                                                 \
    "  end\n"                                                                                      \
    "  redis.call('XADD', audit_key, 'MAXLEN', '~', audit_arg[2], '*', 'event', event,\n"          \
    "    'token', token, 'fence', fence or audit_arg[1], 'host', host, 'pid', pid, 'time', now,\n"  \
    "    'ttl', ttl, 'kind', kind or ((event == 'permit' or event == 'shared') and event or 'grant'))\n"\
    "  redis.call('PEXPIRE', audit_key, audit_arg[8])\n"                                          \
    "end\n"                                                                                        \
    "local function audit_end(token, ours, kind)\n"                                                \
    "  local note = audit_arg[5]\n"                                                                \
    "  if note == 'loss' then\n"                                                                   \
    "    audit('loss', token, nil, nil, nil, kind)\n"                                              \
    "  elseif ours then\n"                                                                         \
    "    audit('release', token, nil, nil, nil, kind)\n"                                           \
    "  elseif note == 'release' then\n"                                                            \
    "    audit_arg[5] = 'expired'\n"                                                               \
    "    audit('release', token, nil, nil, nil, kind)\n"                                           \
    "  end\n"                                                                                      \
    "end\n"

/* A name held shared (docs/shared.md) holds this marker, never a token
 * (tokens are 32 lower-case hex characters): an exclusive acquire finds it
 * busy as it finds any other holder. An exclusive acquirer that finds it
 * puts its token in the sorted set `writer` (KEYS[5]), scored by the end
 * of its lease of WRITER_LEASE_MS in server ms, and tries again within
 * WRITER_RETRY_MS, which renews its lease: while a member's lease runs, no
 * new shared holder enters. A writer takes out only its own member, when
 * it is granted: another writer that still waits keeps the readers out. */
#define SHARED_MARKER "dlock:shared"
#define WRITER_LEASE_MS "2000"
#define WRITER_RETRY_MS "600"

/* A key of another type under the name makes GET raise WRONGTYPE before
 * anything is written. KEYS[4], the name's fair queue (docs/fair.md), is
 * only looked up when the lock is free (PTTL -2: no queue; PTTL rather than
 * EXISTS keeps the ACL rule's commands): a free lock with waiters queued is
 * theirs (the head's), so a plain acquire does not barge past them. The
 * token is max(stored + 1, server clock in µs), also for a retry of our
 * own call (our key already there): the clock
 * covers a counter rolled back by a restart from an older snapshot, not
 * only one that was lost, and +1 makes every grant's token new, so no two
 * holders can end up with the same largest token. Finding the marker, the
 * acquire answers a third element, 1: the caller waits among the writers
 * (see SHARED_MARKER), and its next tries send ARGV[5] "1", with which a
 * grant takes its own member out of KEYS[5]. So a name never held shared
 * costs no command more, and no sorted-set command (which a mutex's ACL
 * rule may lack). */
static const char acquire_lua[] = AUDIT_LUA FENCE_OF_LUA
    "local current = redis.call('GET', KEYS[1])\n"
    "if current and current ~= ARGV[1] then\n"
    "  if current == '" SHARED_MARKER "' and KEYS[5] then\n"
    "    local t = redis.call('TIME')\n"
    "    local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "    redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', now)\n"
    "    redis.call('ZADD', KEYS[5], now + " WRITER_LEASE_MS ", ARGV[1])\n"
    "    redis.call('PEXPIRE', KEYS[5], " WRITER_LEASE_MS ")\n"
    "    return {0, math.min(redis.call('PTTL', KEYS[1]), " WRITER_RETRY_MS "), 1}\n"
    "  end\n"
    "  return {0, redis.call('PTTL', KEYS[1])}\n"
    "end\n"
    "local queue = not current and KEYS[4] and redis.call('PTTL', KEYS[4]) or -2\n"
    "if queue ~= -2 then\n"
    "  return {0, queue}\n"
    "end\n"
    "local last, err = fence_of(KEYS[2])\n"
    "if not last then\n"
    "  return redis.error_reply(err)\n"
    "end\n"
    "local waited = ARGV[5] == '1' and redis.call('ZSCORE', KEYS[5], ARGV[1])\n"
    "local now = redis.call('TIME')\n"
    "local fence = math.max(last + 1, tonumber(now[1]) * 1000000 + tonumber(now[2]))\n"
    "local f = string.format('%d', fence)\n"
    "redis.call('SET', KEYS[1], ARGV[1], current and 'XX' or 'NX', 'PX', ARGV[2])\n"
    "redis.call('SET', KEYS[2], f, 'PX', ARGV[3])\n"
    "redis.call('SET', KEYS[3], ARGV[4], 'PX', ARGV[2])\n"
    "if waited then\n"
    "  redis.call('ZREM', KEYS[5], ARGV[1])\n"
    "end\n"
    "audit('grant', ARGV[1], f, ARGV[2])\n"
    "return {1, f}\n";

/* The release message, for waiters: sharded (SPUBLISH, heard on the
 * channel's slot only) on a cluster, PUBLISH elsewhere. A waiter tells the
 * two apart as this does, with CLUSTER KEYSLOT: a server without cluster
 * support, or a user not allowed to ask, answers an error, and both sides
 * fall back to PUBLISH. Through pcall: a message is not worth failing a
 * release for. */
#define PUBLISH_LUA                                                                                \
    "local function publish(channel, message)\n"                                                  \
    "  local cluster = type(redis.pcall('CLUSTER', 'KEYSLOT', channel)) == 'number'\n"            \
    "  redis.pcall(cluster and 'SPUBLISH' or 'PUBLISH', channel, message)\n"                      \
    "end\n"

/* Not ours: a writer that gives up its wait leaves the waiting writers
 * (KEYS[4], see SHARED_MARKER; looked at with PTTL first, as in the
 * acquire), but not in a cleanup (ARGV[3] "0"): a reply that came too late
 * must not end a wait that goes on. With several servers, the release of a
 * lock that was held (or lost) names its fence in ARGV[4] and the key
 * `freed` last in KEYS: raised to that fence (never lowered, ARGV[5] its
 * TTL), whether the key was still ours here or not, it keeps the extend's
 * repair from bringing our key back after this (see extend_lua). A failed
 * attempt's cleanup names none: it held nothing. */
static const char release_lua[] = AUDIT_LUA FENCE_PARSE_LUA PUBLISH_LUA
    "local freed = ARGV[4] and KEYS[#KEYS]\n"
    "local writer = KEYS[4] ~= freed and KEYS[4]\n"
    "local ours = redis.call('GET', KEYS[1]) == ARGV[1]\n"
    "local leave = not ours and writer and ARGV[3] == '1' and redis.call('PTTL', writer) ~= -2\n"
    "local raise = freed and\n"
    "  not ((fence_parse(redis.call('GET', freed), freed) or -1) >= tonumber(ARGV[4]))\n"
    "if raise then\n"
    "  redis.call('SET', freed, ARGV[4], 'PX', ARGV[5])\n"
    "end\n"
    "if not ours then\n"
    "  if leave then\n"
    "    redis.call('ZREM', writer, ARGV[1])\n"
    "  end\n"
    "  audit_end(ARGV[1], false)\n"
    "  return 0\n"
    "end\n"
    "redis.call('DEL', KEYS[1], KEYS[2])\n"
    "if ARGV[3] == '1' then\n"
    "  publish(ARGV[2], ARGV[1])\n"
    "end\n"
    "audit_end(ARGV[1], true)\n"
    "return 1\n";

/* Repair (Redlock, ARGV[3] "1", KEYS[4] the key `freed`): a server
 * without our key where no release of our fence or a later one ran
 * (`freed` below ours) lost it to a restart or an expiry, whoever was
 * granted and gone there since (another client's failed attempt): it gets
 * our key back, and its fence is raised to ours. One whose `freed` is ours
 * or above saw our own release (this extend overtook it on another
 * connection): no repair, so no ghost key. The caller does not count a
 * repair as a vote. */
static const char extend_lua[] = AUDIT_LUA FENCE_OF_LUA
    "local current = redis.call('GET', KEYS[1])\n"
    "if current == ARGV[1] then\n"
    "  redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
    "  redis.call('PEXPIRE', KEYS[2], ARGV[2])\n"
    "  audit('extend', ARGV[1], nil, ARGV[2])\n"
    "  return 1\n"
    "end\n"
    "if current or ARGV[3] ~= '1' then\n"
    "  return 0\n"
    "end\n"
    "local stored, err = fence_of(KEYS[3])\n"
    "if not stored then\n"
    "  return redis.error_reply(err)\n"
    "end\n"
    "local freed, why = fence_of(KEYS[4])\n"
    "if not freed then\n"
    "  return redis.error_reply(why)\n"
    "end\n"
    "local ours = tonumber(ARGV[4])\n"
    "if freed >= ours then\n"
    "  return 0\n"
    "end\n"
    "redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])\n"
    "if stored < ours then\n"
    "  redis.call('SET', KEYS[3], ARGV[4], 'PX', ARGV[5])\n"
    "end\n"
    "audit('repair', ARGV[1], nil, ARGV[2])\n"
    "return 2\n";

/* KEYS: the fence key, and the name's epoch key when the grant's kind has
 * one (see shared_acquire_lua). Each is raised, never lowered; one that
 * holds the value already gets its TTL again, so an epoch lives as long
 * as its shared holders keep coming. */
static const char fence_max_lua[] = FENCE_OF_LUA
    "local stored = {}\n"
    "for i, key in ipairs(KEYS) do\n"
    "  local value, err = fence_of(key)\n"
    "  if not value then\n"
    "    return redis.error_reply(err)\n"
    "  end\n"
    "  stored[i] = value\n"
    "end\n"
    "for i, key in ipairs(KEYS) do\n"
    "  if stored[i] <= tonumber(ARGV[1]) then\n"
    "    redis.call('SET', key, ARGV[1], 'PX', ARGV[2])\n"
    "  end\n"
    "end\n"
    "return 1\n";

/* The owner record names its token: it is this holder's only if the token
 * in it is exactly the lock key's value. */
static const char status_lua[] = FENCE_OF_LUA
    "local t = redis.call('TYPE', KEYS[1])['ok']\n"
    "local owner = false\n"
    "if t == 'string' then\n"
    "  local holder = redis.call('GET', KEYS[1])\n"
    "  local record = redis.call('GET', KEYS[3])\n"
    "  if record and string.find(record, '\"token\":\"' .. holder .. '\"', 1, true) then\n"
    "    owner = record\n"
    "  end\n"
    "end\n"
    "local fence, err = fence_of(KEYS[2])\n"
    "if not fence then\n"
    "  return redis.error_reply(err)\n"
    "end\n"
    "return {t, redis.call('PTTL', KEYS[1]), fence > 0 and string.format('%d', fence) or false, owner}\n";

/* A semaphore (docs/semaphores.md): NAME is a sorted set of the holders'
 * tokens scored by the expiry of their permit in server milliseconds; the
 * auxiliary hashes `slots` (token -> slot) and `owners` (token -> owner
 * record) and the string `limit` (N) live exactly as long as the last
 * permit; the hash `fences` (slot -> last token) lives fence_ttl. Every
 * script reads the clock and its expired permits first, checks, and only
 * then writes: reap() drops the expired permits and gives every key but
 * the fences the lifetime of the last permit left, or deletes them. */
#define SEMAPHORE_LUA                                                                              \
    "local function kind_error(name)\n"                                                            \
    "  local t = redis.call('TYPE', name)['ok']\n"                                                 \
    "  if t == 'zset' or t == 'none' then\n"                                                       \
    "    return nil\n"                                                                             \
    "  end\n"                                                                                      \
    "  return 'WRONGTYPE ' .. name .. ' is ' .. (t == 'string' and\n"                              \
    "    'a mutex or another kind of lock (a string)' or 'a ' .. t) .. ', not a semaphore'\n"     \
    "end\n"                                                                                        \
    "local function clock()\n"                                                                     \
    "  local t = redis.call('TIME')\n"                                                             \
    "  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000),\n"                       \
    "    tonumber(t[1]) * 1000000 + tonumber(t[2])\n"                                              \
    "end\n"                                                                                        \
    "local function reap(name, limit, slots, owners, now)\n"                                       \
    "  local dead = redis.call('ZRANGEBYSCORE', name, '-inf', now)\n"                              \
    "  if #dead > 0 then\n"                                                                        \
    "    redis.call('ZREMRANGEBYSCORE', name, '-inf', now)\n"                                      \
    "    redis.call('HDEL', slots, unpack(dead))\n"                                                \
    "    redis.call('HDEL', owners, unpack(dead))\n"                                               \
    "  end\n"                                                                                      \
    "  local last = redis.call('ZRANGE', name, -1, -1, 'WITHSCORES')\n"                            \
    "  if #last == 0 then\n"                                                                       \
    "    redis.call('DEL', limit, slots, owners)\n"                                                \
    "    return\n"                                                                                 \
    "  end\n"                                                                                      \
    "  local left = tonumber(last[2]) - now\n"                                                     \
    "  for _, key in ipairs({name, limit, slots, owners}) do\n"                                    \
    "    redis.call('PEXPIRE', key, left)\n"                                                       \
    "  end\n"                                                                                      \
    "end\n"                                                                                        \
    "local function live_score(name, token, now)\n"                                                \
    "  local score = redis.call('ZSCORE', name, token)\n"                                          \
    "  if score and tonumber(score) > now then\n"                                                  \
    "    return tonumber(score)\n"                                                                 \
    "  end\n"                                                                                      \
    "  return nil\n"                                                                               \
    "end\n"

/* KEYS as the mutex's acquire, then limit, slots, owners, fences; ARGV as
 * the mutex's, then the permits N. Refused: NAME of another type, or live
 * permits under another limit (an error that starts with DLOCKLIMIT and
 * names the limit in force). Busy: {0, ms until the soonest permit
 * expires}. Granted: {1, fence, slot}, the lowest slot no live permit
 * holds, fenced per slot; a retry of our own call keeps its slot. */
static const char sem_acquire_lua[] = AUDIT_LUA FENCE_PARSE_LUA SEMAPHORE_LUA
    "local name, limit, slots, owners, fences = KEYS[1], KEYS[4], KEYS[5], KEYS[6], KEYS[7]\n"
    "local token, permits = ARGV[1], tonumber(ARGV[5])\n"
    "local wrong = kind_error(name)\n"
    "if wrong then\n"
    "  return redis.error_reply(wrong)\n"
    "end\n"
    "local now, now_us = clock()\n"
    "local live = redis.call('ZRANGEBYSCORE', name, '(' .. now, '+inf', 'WITHSCORES')\n"
    "local in_force = redis.call('GET', limit)\n"
    "local mine = live_score(name, token, now)\n"
    "if #live > 0 and in_force and tonumber(in_force) ~= permits then\n"
    "  return redis.error_reply('DLOCKLIMIT ' .. name .. ' is a semaphore of ' .. in_force ..\n"
    "    ' permits (' .. #live / 2 .. ' held), not ' .. ARGV[5])\n"
    "end\n"
    "if not mine and #live / 2 >= permits then\n"
    "  return {0, tonumber(live[2]) - now}\n"
    "end\n"
    "local taken, slot = {}, nil\n"
    "for i = 1, #live, 2 do\n"
    "  local s = redis.call('HGET', slots, live[i])\n"
    "  if live[i] == token then\n"
    "    slot = tonumber(s)\n"
    "  elseif s then\n"
    "    taken[s] = true\n"
    "  end\n"
    "end\n"
    "if not slot then\n"
    "  slot = 0\n"
    "  while taken[tostring(slot)] do\n"
    "    slot = slot + 1\n"
    "  end\n"
    "end\n"
    "local last, err = fence_parse(redis.call('HGET', fences, slot), fences .. ' field ' .. slot)\n"
    "if not last then\n"
    "  return redis.error_reply(err)\n"
    "end\n"
    "local f = string.format('%d', math.max(last + 1, now_us))\n"
    "redis.call('ZADD', name, now + tonumber(ARGV[2]), token)\n"
    "redis.call('SET', limit, ARGV[5])\n"
    "redis.call('HSET', slots, token, slot)\n"
    "redis.call('HSET', owners, token, ARGV[4])\n"
    "redis.call('HSET', fences, slot, f)\n"
    "redis.call('PEXPIRE', fences, ARGV[3])\n"
    "reap(name, limit, slots, owners, now)\n"
    "audit('permit', token, f, ARGV[2])\n"
    "return {1, f, slot}\n";

/* KEYS as the mutex's release, then limit, slots, owners, fences; ARGV as
 * the mutex's. 1 (released) or 0 (not a live permit of that token). */
static const char sem_release_lua[] = AUDIT_LUA PUBLISH_LUA SEMAPHORE_LUA
    "local name, limit, slots, owners = KEYS[1], KEYS[3], KEYS[4], KEYS[5]\n"
    "local wrong = kind_error(name)\n"
    "if wrong then\n"
    "  return redis.error_reply(wrong)\n"
    "end\n"
    "local now = clock()\n"
    "local mine = live_score(name, ARGV[1], now)\n"
    "if mine then\n"
    "  redis.call('ZREM', name, ARGV[1])\n"
    "  redis.call('HDEL', slots, ARGV[1])\n"
    "  redis.call('HDEL', owners, ARGV[1])\n"
    "end\n"
    "reap(name, limit, slots, owners, now)\n"
    "if mine and ARGV[3] == '1' then\n"
    "  publish(ARGV[2], ARGV[1])\n"
    "end\n"
    "audit_end(ARGV[1], mine, 'permit')\n"
    "return mine and 1 or 0\n";

/* KEYS as the mutex's extend, then limit, slots, owners, fences; ARGV as
 * the mutex's (no repair: a semaphore lives on one server). 1 or 0. */
static const char sem_extend_lua[] = AUDIT_LUA SEMAPHORE_LUA
    "local name, limit, slots, owners = KEYS[1], KEYS[4], KEYS[5], KEYS[6]\n"
    "local wrong = kind_error(name)\n"
    "if wrong then\n"
    "  return redis.error_reply(wrong)\n"
    "end\n"
    "local now = clock()\n"
    "local mine = live_score(name, ARGV[1], now)\n"
    "if mine then\n"
    "  redis.call('ZADD', name, 'XX', now + tonumber(ARGV[2]), ARGV[1])\n"
    "  audit('extend', ARGV[1], nil, ARGV[2], nil, 'permit')\n"
    "end\n"
    "reap(name, limit, slots, owners, now)\n"
    "return mine and 1 or 0\n";

/* KEYS NAME, limit, slots, owners, fences. Read-only: expired permits are
 * left out, not reaped. Returns {limit or false, {owner record or false,
 * PTTL, slot, fence, ...} for each live permit, by slot}. */
static const char sem_status_lua[] = FENCE_PARSE_LUA SEMAPHORE_LUA
    "local wrong = kind_error(KEYS[1])\n"
    "if wrong then\n"
    "  return redis.error_reply(wrong)\n"
    "end\n"
    "local now = clock()\n"
    "local live = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. now, '+inf', 'WITHSCORES')\n"
    "local held = {}\n"
    "for i = 1, #live, 2 do\n"
    "  local slot = tonumber(redis.call('HGET', KEYS[3], live[i])) or -1\n"
    "  local fence, err = fence_parse(redis.call('HGET', KEYS[5], slot), KEYS[5] .. ' field ' .. slot)\n"
    "  if not fence then\n"
    "    return redis.error_reply(err)\n"
    "  end\n"
    "  held[#held + 1] = {redis.call('HGET', KEYS[4], live[i]), tonumber(live[i + 1]) - now, slot,\n"
    "    string.format('%d', fence)}\n"
    "end\n"
    "table.sort(held, function(a, b) return a[3] < b[3] end)\n"
    "local out = {}\n"
    "for _, h in ipairs(held) do\n"
    "  for _, v in ipairs(h) do\n"
    "    out[#out + 1] = v\n"
    "  end\n"
    "end\n"
    "return {redis.call('GET', KEYS[2]), out}\n";

/* A fair lock (docs/fair.md): NAME is the mutex's string. Its waiters
 * queue in the sorted set `queue` (token -> arrival, in server µs), and
 * each keeps its place with a presence lease in the sorted set `presence`
 * (token -> end of the lease, in server ms). Both keys live as long as the
 * longest lease. A free lock with a queue is the head's, for as long as
 * its lease lasts. The wake-up is targeted: "next:" and the head's token,
 * on the channel of the head's process (the mutex's channel, ":", then
 * the host and pid of its owner record, kept in the hash `wake`), so that
 * only that process wakes up; it acts only on its own token. A token is in
 * all three keys or in none. leave() takes waiters out: `wake` first, so
 * that a key of another type there fails before anything is written (the
 * scripts read queue and presence before they write). live_head() is the
 * first waiter whose lease has not ended: only when the head's has are the
 * dead dropped (all of them), since a dead waiter behind a live head
 * changes no grant until it is the head; that spares a ZRANGEBYSCORE per
 * call. */
#define FAIR_LUA                                                                                   \
    "local function clock()\n"                                                                     \
    "  local t = redis.call('TIME')\n"                                                             \
    "  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000),\n"                        \
    "    tonumber(t[1]) * 1000000 + tonumber(t[2])\n"                                              \
    "end\n"                                                                                        \
    "local function leave(queue, presence, wake, ...)\n"                                           \
    "  redis.call('HDEL', wake, ...)\n"                                                            \
    "  redis.call('ZREM', queue, ...)\n"                                                           \
    "  redis.call('ZREM', presence, ...)\n"                                                        \
    "end\n"                                                                                        \
    "local function live_head(queue, presence, wake, now)\n"                                       \
    "  while true do\n"                                                                            \
    "    local head = redis.call('ZRANGE', queue, 0, 0)[1]\n"                                      \
    "    if not head then\n"                                                                       \
    "      return nil\n"                                                                           \
    "    end\n"                                                                                    \
    "    local ends = tonumber(redis.call('ZSCORE', presence, head))\n"                            \
    "    if ends and ends > now then\n"                                                            \
    "      return head, ends\n"                                                                    \
    "    end\n"                                                                                    \
    "    local dead = redis.call('ZRANGEBYSCORE', presence, '-inf', now)\n"                        \
    "    dead[#dead + 1] = head\n"                                                                 \
    "    leave(queue, presence, wake, unpack(dead))\n"                                             \
    "  end\n"                                                                                      \
    "end\n"                                                                                        \
    "local function process_of(record)\n"                                                          \
    "  local ok, o = pcall(cjson.decode, record)\n"                                                \
    "  if ok and type(o) == 'table' and type(o.host) == 'string' and type(o.pid) == 'number' then\n"\
    "    return o.host .. ':' .. string.format('%d', o.pid)\n"                                    \
    "  end\n"                                                                                      \
    "  return ''\n"                                                                                \
    "end\n"

/* KEYS as the mutex's acquire, then queue, presence and wake; ARGV as the
 * mutex's, then the presence lease in ms. Granted ({1, fence}) when the
 * lock is ours already (a retry) or free with no live waiter ahead of us:
 * we leave the queue (a holder is never in it). Else we join it at the
 * tail (or keep our place) and renew our lease: {0, ms until the next
 * renewal is due}, sooner if the holder's key or a free lock's reservation
 * for the head ends first. A waiter whose lease ended behind a live head
 * has left: it joins again at the tail, as if it had been dropped. The
 * fence is read (and checked) only when the lock may be granted. */
static const char fair_acquire_lua[] = AUDIT_LUA FENCE_OF_LUA FAIR_LUA
    "local lock, queue, presence, wake = KEYS[1], KEYS[4], KEYS[5], KEYS[6]\n"
    "local token, lease, direct = ARGV[1], tonumber(ARGV[5]), ARGV[6] == '1'\n"
    "local current = redis.call('GET', lock)\n"
    "local last = 0\n"
    "if not current or current == token then\n"
    "  local err\n"
    "  last, err = fence_of(KEYS[2])\n"
    "  if not last then\n"
    "    return redis.error_reply(err)\n"
    "  end\n"
    "end\n"
    "local now, now_us = clock()\n"
    "local head, head_ends = live_head(queue, presence, wake, now)\n"
    "if current == token or (not current and (not head or head == token)) then\n"
    "  if head == token then\n"
    "    leave(queue, presence, wake, token)\n"
    "  end\n"
    "  local f = string.format('%d', math.max(last + 1, now_us))\n"
    "  redis.call('SET', lock, token, current and 'XX' or 'NX', 'PX', ARGV[2])\n"
    "  redis.call('SET', KEYS[2], f, 'PX', ARGV[3])\n"
    "  redis.call('SET', KEYS[3], ARGV[4], 'PX', ARGV[2])\n"
    "  audit('grant', token, f, ARGV[2])\n"
    "  return {1, f}\n"
    "end\n"
    "local ends = head == token and head_ends or tonumber(redis.call('ZSCORE', presence, token))\n"
    "if ends and ends <= now then\n"
    "  leave(queue, presence, wake, token)\n"
    "  ends = nil\n"
    "end\n"
    "if not ends then\n"
    "  local seq = now_us\n"
    "  local tail = head and redis.call('ZRANGE', queue, -1, -1, 'WITHSCORES') or {}\n"
    "  if #tail > 0 and tonumber(tail[2]) >= seq then\n"
    "    seq = tonumber(tail[2]) + 1\n"
    "  end\n"
    "  local where = process_of(ARGV[4])\n"
    "  if direct and where ~= '' and not string.find(where, '\\n', 1, true) then\n"
    "    where = where .. '\\n' .. ARGV[2] .. ' ' .. ARGV[3] .. ' ' .. ARGV[4]\n"
    "  end\n"
    "  redis.call('HSET', wake, token, where)\n"
    "  redis.call('ZADD', queue, seq, token)\n"
    "end\n"
    "redis.call('ZADD', presence, now + lease, token)\n"
    "local longest = redis.call('ZRANGE', presence, -1, -1, 'WITHSCORES')\n"
    "for _, key in ipairs({queue, presence, wake}) do\n"
    "  redis.call('PEXPIRE', key, tonumber(longest[2]) - now)\n"
    "end\n"
    "local wait = math.max(1, math.floor(lease / 3))\n"
    "if current then\n"
    "  local pttl = redis.call('PTTL', lock)\n"
    "  if pttl >= 0 and pttl < wait then\n"
    "    wait = pttl\n"
    "  end\n"
    "elseif head then\n"
    "  wait = math.min(wait, math.max(0, head_ends - now))\n"
    "end\n"
    "return {0, wait, 0, now + lease}\n";

/* KEYS as the mutex's release, then queue, presence, wake and the fence;
 * ARGV as the mutex's. Releases the lock if it is ours, and takes us out
 * of the queue (a waiter that gives up leaves by it), but not in a cleanup
 * (ARGV[3] "0"): a reply that came too late must not cost a waiter its
 * place. When that frees the lock or the head's place, the head (only) is
 * told: also after a cleanup, which must not stall the queue for a lease.
 * A head that asked for it (its `wake` entry holds, after a newline, its
 * TTL, fence TTL and owner record) is handed our lock at once: it becomes
 * the holder, for at most what is left of its lease until it claims the
 * lock with an extend (so a dead head costs no more than its lease), and
 * the message "grant:TOKEN:FENCE:LEASE_END" tells it so; LEASE_END, the
 * end of its lease that it was told, lets it tell this grant from one
 * before its last try. Any other head is told "next:TOKEN" and tries, as
 * is a head when the stored fence is not a token: its own acquire then
 * reports it. The fence and the head's entry are read before the first
 * write, so that a key of another type fails before anything is written.
 * With no queue, a release publishes as the mutex's does (plain acquirers
 * wait on it). 1 or 0. */
static const char fair_release_lua[] = AUDIT_LUA FENCE_OF_LUA PUBLISH_LUA FAIR_LUA
    "local lock, queue, presence, wake = KEYS[1], KEYS[3], KEYS[4], KEYS[5]\n"
    "local token = ARGV[1]\n"
    "local current = redis.call('GET', lock)\n"
    "local last = current == token and fence_of(KEYS[6])\n"
    "local now, now_us = clock()\n"
    "local head, head_ends = live_head(queue, presence, wake, now)\n"
    "local function head_entry()\n"
    "  local entry = redis.call('HGET', wake, head) or ''\n"
    "  local nl = string.find(entry, '\\n', 1, true)\n"
    "  local where = nl and string.sub(entry, 1, nl - 1) or entry\n"
    "  local channel = where ~= '' and ARGV[2] .. ':' .. where or ARGV[2]\n"
    "  if not nl then\n"
    "    return channel\n"
    "  end\n"
    "  local ttl, fence_ttl, record = string.match(string.sub(entry, nl + 1), '^(%d+) (%d+) (.+)$')\n"
    "  return channel, tonumber(ttl), fence_ttl, record\n"
    "end\n"
    "if current == token then\n"
    "  local channel, ttl, fence_ttl, record\n"
    "  if head then\n"
    "    channel, ttl, fence_ttl, record = head_entry()\n"
    "  end\n"
    "  if ttl and last then\n"
    "    local px = math.min(ttl, head_ends - now)\n"
    "    local f = string.format('%d', math.max(last + 1, now_us))\n"
    "    leave(queue, presence, wake, head)\n"
    "    redis.call('SET', lock, head, 'PX', px)\n"
    "    redis.call('SET', KEYS[6], f, 'PX', fence_ttl)\n"
    "    record = string.gsub(record, '\"since\":%d+', '\"since\":' .. string.format('%d', now), 1)\n"
    "    redis.call('SET', KEYS[2], record, 'PX', px)\n"
    "    publish(channel, 'grant:' .. head .. ':' .. f .. ':' .. string.format('%d', head_ends))\n"
    "    audit_end(token, true)\n"
    "    audit('grant', head, f, string.format('%d', px), record)\n"
    "    return 1\n"
    "  end\n"
    "  redis.call('DEL', lock, KEYS[2])\n"
    "  if head then\n"
    "    publish(channel, 'next:' .. head)\n"
    "  elseif ARGV[3] == '1' then\n"
    "    publish(ARGV[2], token)\n"
    "  end\n"
    "  audit_end(token, true)\n"
    "  return 1\n"
    "end\n"
    "if ARGV[3] == '1' and redis.call('ZSCORE', presence, token) then\n"
    "  leave(queue, presence, wake, token)\n"
    "  if head == token and not current then\n"
    "    head = live_head(queue, presence, wake, now)\n"
    "    if head then\n"
    "      publish((head_entry()), 'next:' .. head)\n"
    "    end\n"
    "  end\n"
    "end\n"
    "audit_end(token, false)\n"
    "return 0\n";

/* Shared holders (docs/shared.md): NAME holds SHARED_MARKER with the PX
 * of the last holder's expiry; the holders are the sorted set `readers`
 * (token -> expiry in server ms) with their owner records in the hash
 * `rowners`, both living as long as NAME. Their fence names the exclusive
 * epoch: every shared holder between two exclusive ones has the same.
 * live() drops the expired holders and gives NAME and the keys the last
 * expiry left, or deletes them. */
#define SHARED_LUA                                                                                 \
    "local function clock()\n"                                                                     \
    "  local t = redis.call('TIME')\n"                                                             \
    "  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000),\n"                       \
    "    tonumber(t[1]) * 1000000 + tonumber(t[2])\n"                                              \
    "end\n"                                                                                        \
    "local function live(name, readers, rowners, now)\n"                                           \
    "  local dead = redis.call('ZRANGEBYSCORE', readers, '-inf', now)\n"                           \
    "  if #dead > 0 then\n"                                                                        \
    "    redis.call('ZREM', readers, unpack(dead))\n"                                              \
    "    redis.call('HDEL', rowners, unpack(dead))\n"                                              \
    "  end\n"                                                                                      \
    "  local last = redis.call('ZRANGE', readers, -1, -1, 'WITHSCORES')\n"                         \
    "  if #last == 0 then\n"                                                                       \
    "    redis.call('DEL', name, readers, rowners)\n"                                              \
    "    return false\n"                                                                           \
    "  end\n"                                                                                      \
    "  local left = tonumber(last[2]) - now\n"                                                     \
    "  redis.call('SET', name, '" SHARED_MARKER "', 'PX', left)\n"                                  \
    "  redis.call('PEXPIRE', readers, left)\n"                                                     \
    "  redis.call('PEXPIRE', rowners, left)\n"                                                     \
    "  return true\n"                                                                              \
    "end\n"

/* KEYS as the mutex's acquire (queue and writer included), then readers,
 * rowners and epoch; ARGV as the mutex's, then "1" with several servers.
 * Busy ({0, ms}) while an exclusive holder has NAME, and, for a new shared
 * holder, while an exclusive acquirer waits (a live waiting writer, or a
 * fair queue). Granted: {1, fence}. The fence, on one server, is the
 * stored one, the last exclusive holder's (the clock's, stored, when there
 * is none). With several, a server's stored fence may have been raised by
 * an exclusive attempt that failed, so it is the epoch key, which only a
 * grant's write-back raises: the largest of a majority is the last
 * exclusive holder's token, which a majority got (1 before any). */
static const char shared_acquire_lua[] = AUDIT_LUA FENCE_OF_LUA SHARED_LUA
    "local name, queue, writer, readers, rowners = KEYS[1], KEYS[4], KEYS[5], KEYS[6], KEYS[7]\n"
    "local token, several = ARGV[1], ARGV[5] == '1'\n"
    "local current = redis.call('GET', name)\n"
    "if current and current ~= '" SHARED_MARKER "' then\n"
    "  return {0, redis.call('PTTL', name)}\n"
    "end\n"
    "local last, err = fence_of(several and KEYS[8] or KEYS[2])\n"
    "if not last then\n"
    "  return redis.error_reply(err)\n"
    "end\n"
    "local now, now_us = clock()\n"
    "local score = current and redis.call('ZSCORE', readers, token)\n"
    "if not (score and tonumber(score) > now) then\n"
    "  redis.call('ZREMRANGEBYSCORE', writer, '-inf', now)\n"
    "  for _, waiting in ipairs({writer, queue}) do\n"
    "    local pttl = redis.call('PTTL', waiting)\n"
    "    if pttl ~= -2 then\n"
    "      return {0, pttl}\n"
    "    end\n"
    "  end\n"
    "end\n"
    "local f = last\n"
    "if f == 0 and several then\n"
    "  f = 1\n"
    "elseif f == 0 then\n"
    "  f = now_us\n"
    "  redis.call('SET', KEYS[2], string.format('%d', f), 'PX', ARGV[3])\n"
    "end\n"
    "redis.call('ZADD', readers, now + tonumber(ARGV[2]), token)\n"
    "redis.call('HSET', rowners, token, ARGV[4])\n"
    "live(name, readers, rowners, now)\n"
    "audit('shared', token, string.format('%d', f), ARGV[2])\n"
    "return {1, string.format('%d', f)}\n";

/* KEYS as the mutex's release (queue and writer included), then readers
 * and rowners; ARGV as the mutex's. The last holder out publishes (an
 * exclusive acquirer waits for that). 1 (released) or 0. */
static const char shared_release_lua[] = AUDIT_LUA PUBLISH_LUA SHARED_LUA
    "local name, readers, rowners = KEYS[1], KEYS[5], KEYS[6]\n"
    "local token = ARGV[1]\n"
    "if redis.call('GET', name) ~= '" SHARED_MARKER "' then\n"
    "  audit_end(token, false, 'shared')\n"
    "  return 0\n"
    "end\n"
    "local now = clock()\n"
    "local score = redis.call('ZSCORE', readers, token)\n"
    "if not (score and tonumber(score) > now) then\n"
    "  audit_end(token, false, 'shared')\n"
    "  return 0\n"
    "end\n"
    "redis.call('ZREM', readers, token)\n"
    "redis.call('HDEL', rowners, token)\n"
    "if not live(name, readers, rowners, now) and ARGV[3] == '1' then\n"
    "  publish(ARGV[2], token)\n"
    "end\n"
    "audit_end(token, true, 'shared')\n"
    "return 1\n";

/* KEYS as the mutex's extend (queue and writer included), then readers
 * and rowners; ARGV as the mutex's. Extends only an entry that is there
 * (1). Repair (Redlock, ARGV[3] = "1"): a server whose fence is below
 * ours (it lost our grant's writes) gets our entry and fence back unless an
 * exclusive holder has NAME there; 2, never a vote. One that kept our
 * fence saw our entry go (a release this extend overtook, an expiry): 0. */
static const char shared_extend_lua[] = AUDIT_LUA FENCE_OF_LUA SHARED_LUA
    "local name, readers, rowners = KEYS[1], KEYS[6], KEYS[7]\n"
    "local token = ARGV[1]\n"
    "local current = redis.call('GET', name)\n"
    "if current and current ~= '" SHARED_MARKER "' then\n"
    "  return 0\n"
    "end\n"
    "local stored, err = fence_of(KEYS[3])\n"
    "if not stored then\n"
    "  return redis.error_reply(err)\n"
    "end\n"
    "local now = clock()\n"
    "local score = current and redis.call('ZSCORE', readers, token)\n"
    "local held = score and tonumber(score) > now\n"
    "if not held and (ARGV[3] ~= '1' or stored >= tonumber(ARGV[4])) then\n"
    "  return 0\n"
    "end\n"
    "redis.call('ZADD', readers, now + tonumber(ARGV[2]), token)\n"
    "if not held then\n"
    "  redis.call('HSET', rowners, token, '')\n"
    "  redis.call('SET', KEYS[3], ARGV[4], 'PX', ARGV[5])\n"
    "end\n"
    "live(name, readers, rowners, now)\n"
    "audit(held and 'extend' or 'repair', token, nil, ARGV[2], nil, 'shared')\n"
    "return held and 1 or 2\n";

/* KEYS NAME, queue, writer, readers, rowners, epoch. Read-only. Returns
 * {owner record or false, PTTL, ...} for each live shared holder (none
 * unless NAME holds the marker). */
static const char shared_status_lua[] =
    "if redis.call('GET', KEYS[1]) ~= '" SHARED_MARKER "' then\n"
    "  return {}\n"
    "end\n"
    "local t = redis.call('TIME')\n"
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "local live = redis.call('ZRANGEBYSCORE', KEYS[4], '(' .. now, '+inf', 'WITHSCORES')\n"
    "local out = {}\n"
    "for i = 1, #live, 2 do\n"
    "  local record = redis.call('HGET', KEYS[5], live[i])\n"
    "  out[#out + 1] = record ~= '' and record or false\n"
    "  out[#out + 1] = tonumber(live[i + 1]) - now\n"
    "end\n"
    "return out\n";

/* NULL-terminated: also the list a fresh connection loads. */
static const char *const sources[DLOCK__SCRIPT_COUNT + 1] = {
    acquire_lua,     release_lua,     extend_lua,     status_lua,     fence_max_lua,
    sem_acquire_lua, sem_release_lua, sem_extend_lua, sem_status_lua, fair_acquire_lua,
    fair_release_lua, shared_acquire_lua, shared_release_lua, shared_extend_lua,
    shared_status_lua, NULL};

const char *const *dlock__script_sources(void)
{
    return sources;
}
static char shas[DLOCK__SCRIPT_COUNT][41];
static pthread_once_t shas_once = PTHREAD_ONCE_INIT;

static void compute_shas(void)
{
    for (int i = 0; i < DLOCK__SCRIPT_COUNT; i++) {
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned int len = 0;
        if (!EVP_Digest(sources[i], strlen(sources[i]), md, &len, EVP_sha1(), NULL))
            len = 0; /* an empty SHA only costs a NOSCRIPT and the EVAL fallback */
        for (unsigned int j = 0; j < len && j < 20; j++)
            snprintf(&shas[i][(size_t)j * 2], 3, "%02x", md[j]);
    }
}

const char *dlock__script_source(enum dlock__script_id id)
{
    return sources[id];
}

const char *dlock__script_sha(enum dlock__script_id id)
{
    pthread_once(&shas_once, compute_shas);
    return shas[id];
}

static long long encode(char **out, const char *verb, const char *body, int nkeys,
                        const char *const *keys, int nargs, const char *const *args)
{
    const char *argv[MAX_WORDS];
    size_t lens[MAX_WORDS];
    char numkeys[12];
    int argc = 0;

    if (3 + nkeys + nargs > MAX_WORDS)
        return DLOCK_EINVAL;
    snprintf(numkeys, sizeof(numkeys), "%d", nkeys);
    argv[argc++] = verb;
    argv[argc++] = body;
    argv[argc++] = numkeys;
    for (int i = 0; i < nkeys; i++)
        argv[argc++] = keys[i];
    for (int i = 0; i < nargs; i++)
        argv[argc++] = args[i];
    for (int i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    return dlock__command_format(out, argc, argv, lens);
}

static int encode_eval(dlock__call *call)
{
    dlock__script_call *sc = (dlock__script_call *)call;
    long long len = encode(&call->fallback, "EVAL", sources[sc->id], sc->nkeys, sc->keys,
                           sc->nargs, sc->args);
    if (len < 0)
        return (int)len;
    call->fallback_len = (size_t)len;
    return 0;
}

int dlock__script_encode(dlock__script_call *sc, enum dlock__script_id id, int nkeys,
                       const char *const *keys, int nargs, const char *const *args)
{
    long long len;
    memset(sc, 0, sizeof(*sc));
    len = encode(&sc->call.cmd, "EVALSHA", dlock__script_sha(id), nkeys, keys, nargs, args);
    if (len < 0)
        return (int)len;
    sc->call.len = (size_t)len;
    /* All keys of a name share its slot: the first one tells. */
    sc->call.slot = nkeys > 0 ? (int)dlock__key_slot(keys[0], strlen(keys[0])) : -1;
    /* The EVAL form, script text and all, is only encoded after a NOSCRIPT. */
    sc->call.encode_fallback = encode_eval;
    sc->id = id;
    sc->nkeys = nkeys;
    sc->keys = keys;
    sc->nargs = nargs;
    sc->args = args;
    return 0;
}

void dlock__script_call_free(dlock__script_call *sc)
{
    dlock__command_free(sc->call.cmd);
    dlock__command_free(sc->call.fallback);
    memset(sc, 0, sizeof(*sc));
}
