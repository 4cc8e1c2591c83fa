#!/usr/bin/env bash
# The Redis guard (contrib/redis/dlock_fence.lua, loaded by `dlock guard
# load-redis`) against a real redis-server: a paused holder's late write is
# refused and the newer holder's stays; 20 holders at once count exactly;
# tokens that are not tokens, a resource never seen, a fence key that does
# not hold a token, a data key of another type; and `dlock check`.
#   redis.sh DLOCK SOURCE_DIR
. "$2/tests/guard/lib.sh"
guard_setup "$1" "$2"
trap 'stop_redis; rm -rf "$WORK"' EXIT
R="redis-cli -p $REDIS_PORT"
export REDISCLI_ARGS="-p $REDIS_PORT" # for the example

# fcall ARGS...: the reply, which must not be an error; fcall_error ARGS...:
# the error reply, which it must be.
fcall() {
  local out
  out=$($R FCALL "$@" 2>&1)
  case $out in ERR* | STALE* | WRONGTYPE*) fail "FCALL $*: $out" ;; esac
  printf '%s' "$out"
}
fcall_error() {
  local out
  out=$($R FCALL "$@" 2>&1)
  case $out in ERR* | STALE* | WRONGTYPE*) printf '%s' "$out" ;; *) fail "FCALL $* gave $out" ;; esac
}

echo "== dlock guard load-redis"
expect_match "$(fcall_error dlock_fenced_set 2 x x:fence v 1)" "^ERR Function not found" \
  "before loading"
$DLOCK guard load-redis
$DLOCK guard load-redis # again: REPLACE
expect_eq "$($R FUNCTION LIST LIBRARYNAME dlock_fence | sed -n 2p)" dlock_fence "the library"
# A user the ACL does not allow FUNCTION: exit 77, the server named.
$R ACL SETUSER noguard on '>pw' '~*' '&*' +@all -function >/dev/null
rc=0
out=$($1 -r "redis://noguard:pw@127.0.0.1:$REDIS_PORT" guard load-redis 2>&1) || rc=$?
expect_eq "$rc" 77 "guard load-redis as a user without FUNCTION"
expect_match "$out" "127.0.0.1:$REDIS_PORT: FUNCTION LOAD: NOPERM" "its message"
case $out in *:pw@*) fail "the password in the message: $out" ;; esac

echo "== a paused holder's late write is refused"
paused_holder report "$SRC/examples/fence-redis.sh"
[ "$A_RC" != 0 ] || fail "A's stale write succeeded: $A_OUT"
expect_match "$A_OUT" "STALE fence $FENCE_A is older than $FENCE_B" "A's refusal"
expect_eq "$($R GET '{report}:body')" B "the report after A's write"
expect_eq "$($R GET '{report}:fence')" "$FENCE_B" "the fence after A's write"
expect_eq "$(fcall dlock_fenced_set 2 '{report}:body' '{report}:fence' B2 "$FENCE_B")" OK \
  "B again, with its token"

echo "== dlock check"
tok=$($DLOCK acquire --json checked)
fence=$(printf '%s' "$tok" | sed 's/.*"fence":\([0-9]*\).*/\1/')
token=$(printf '%s' "$tok" | sed 's/.*"token":"\([0-9a-f]*\)".*/\1/')
$DLOCK check checked "$fence" || fail "the holder's own fence is not current"
rc=0; $DLOCK check checked $((fence - 1)) || rc=$?
expect_eq "$rc" 1 "check of an older fence"
rc=0; $DLOCK check checked $((fence + 1)) || rc=$?
expect_eq "$rc" 1 "check of a fence never issued"
$DLOCK release checked "$token"
rc=0; $DLOCK check checked "$fence" || rc=$?
expect_eq "$rc" 1 "check after the release"
for bad in abc -5 '' 1e3 18446744073709551616; do
  rc=0; $DLOCK check checked "$bad" 2>/dev/null || rc=$?
  expect_eq "$rc" 64 "check of '$bad'"
done
rc=0; $1 -q -r redis://127.0.0.1:1 check checked 5 2>/dev/null || rc=$?
expect_eq "$rc" 69 "check against a server that is not there"

echo "== 20 holders at once increment a counter exactly"
# Read, then write through the guard (the data key is not the lock's): only the lock keeps two jobs from
# reading one value.
cat >"$WORK/count.sh" <<SH
#!/bin/sh
set -e
n=\$($R GET hits)
reply=\$($R FCALL dlock_fenced_set 2 hits hits:fence \$((\${n:-0} + 1)) "\$DLOCK_FENCE")
[ "\$reply" = OK ] || { echo "\$reply" >&2; exit 1; }
SH
chmod +x "$WORK/count.sh"
counter_jobs counter 20 "$WORK/count.sh"
expect_eq "$($R GET hits)" 20 "the counter"
status=$($DLOCK status --json counter || true) # free: exit 1
expect_eq "$($R GET hits:fence)" "$(printf '%s' "$status" | sed 's/.*"fence":\([0-9]*\).*/\1/')" \
  "the counter's fence (the last one issued)"

echo "== fenced HSET and INCRBY"
expect_eq "$(fcall dlock_fenced_hset 2 h h:fence f1 v1 10)" 1 "a new field"
expect_eq "$(fcall dlock_fenced_hset 2 h h:fence f1 v2 10)" 0 "the same field, the same token"
expect_match "$(fcall_error dlock_fenced_hset 2 h h:fence f1 v3 9)" "^STALE fence 9 is older than 10" \
  "an older token"
expect_eq "$($R HGET h f1)" v2 "the field"
expect_eq "$(fcall dlock_fenced_incrby 2 n n:fence 5 10)" 5 "INCRBY"
expect_eq "$(fcall dlock_fenced_incrby 2 n n:fence -2 11)" 3 "INCRBY, a newer token"
expect_match "$(fcall_error dlock_fenced_incrby 2 n n:fence 1 10)" "^STALE " "INCRBY, older"
expect_eq "$($R GET n):$($R GET n:fence)" 3:11 "the counter and its fence"

echo "== tokens that are not tokens"
for bad in abc -5 +5 05 1e3 ' 5' '' 9007199254740991; do
  expect_match "$(fcall_error dlock_fenced_set 2 bad bad:fence v "$bad")" \
    "^ERR fence \".*\" is not a fencing token" "token '$bad'"
done
expect_eq "$($R EXISTS bad bad:fence)" 0 "keys written by refused calls"
expect_match "$(fcall_error dlock_fenced_set 2 bad bad:fence v)" "^ERR wrong number of arguments" \
  "no token"

echo "== a resource never seen before takes any token, 0 too"
expect_eq "$(fcall dlock_fenced_set 2 new new:fence v 0)" OK "the first token"
expect_eq "$($R GET new:fence)" 0 "its fence key"

echo "== what the guard refuses before it writes"
$R SET garbled:fence ' 5' >/dev/null
expect_match "$(fcall_error dlock_fenced_set 2 garbled garbled:fence v 9)" \
  '^ERR garbled:fence holds " 5", not a fencing token' "a fence key that holds no token"
$R SET str x >/dev/null
expect_match "$(fcall_error dlock_fenced_hset 2 str str:fence f v 9)" \
  "^WRONGTYPE str holds a string, not a hash" "HSET into a string"
$R SET word abc >/dev/null
expect_match "$(fcall_error dlock_fenced_incrby 2 word word:fence 1 9)" "^ERR " "INCRBY of a word"
expect_eq "$($R EXISTS garbled str:fence word:fence)" 0 "keys written by refused calls"

echo "== two resources, one fence key"
# One token guards several keys when they share the fence key; each FCALL
# is atomic on its own (Redis has no rollback across calls).
fcall dlock_fenced_set 2 '{inv}:a' '{inv}:fence' 1 50 >/dev/null
fcall dlock_fenced_set 2 '{inv}:b' '{inv}:fence' 1 50 >/dev/null
expect_match "$(fcall_error dlock_fenced_set 2 '{inv}:b' '{inv}:fence' 2 49)" "^STALE " \
  "the older token on the second key"
expect_eq "$($R MGET '{inv}:a' '{inv}:b' | tr '\n' ' ')" "1 1 " "both keys"
echo "guard redis: ok"
