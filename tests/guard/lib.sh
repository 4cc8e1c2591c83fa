# shellcheck shell=bash
# Sourced by the guard tests (postgresql.sh, redis.sh): a redis-server for
# the locks, a scratch folder, checks that stop the test, and the two
# scenarios both guards must pass.
#   guard_setup DLOCK SOURCE_DIR   sets DLOCK (the command with -r), WORK, SRC
set -euo pipefail

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

expect_eq() { # ACTUAL EXPECTED WHAT
  [ "$1" = "$2" ] || fail "$3: got '$1', expected '$2'"
}

expect_match() { # TEXT PATTERN WHAT
  printf '%s' "$1" | grep -Eq -- "$2" || fail "$3: '$1' does not match /$2/"
}

# Generous upper bounds: the machine is shared and may run under sanitizers.
slowdown=${DLOCK_TEST_SLOWDOWN:-1}

# wait_until SECONDS WHAT CMD...: runs CMD every 20 ms until it succeeds.
wait_until() {
  local limit=$(( $1 * 50 * slowdown )) what=$2 i
  shift 2
  for ((i = 0; i < limit; i++)); do
    "$@" && return 0
    sleep 0.02
  done
  fail "$what: not within $(( limit / 50 )) s"
}

guard_setup() {
  SRC=$2
  WORK=$(mktemp -d /tmp/dlock-guard-XXXXXX)
  . "$SRC/scripts/redis-lib.sh"
  start_redis "$WORK"
  DLOCK="$1 -q -r redis://127.0.0.1:$REDIS_PORT"
}

# paused_holder NAME WRITE: the case fencing is for. WRITE is a program
# that writes its first argument to the resource under the lock, with the
# holder's $DLOCK_FENCE. Holder A takes NAME with a TTL of 1 s and is
# stopped (SIGSTOP: dlock and its command) until its lock expired; holder B
# takes the lock and writes B; then A's command continues and writes A.
# Sets FENCE_A, FENCE_B, A_RC and A_OUT (A's write's exit status and output).
paused_holder() {
  local name=$1 write=$2 d=$WORK/paused-$1 holder child b_rc=0
  mkdir -p "$d"
  # shellcheck disable=SC2016 # expanded by the holder's sh
  $DLOCK run -t 1s "$name" -- sh -c 'd=$1; shift
    echo "$DLOCK_FENCE" > "$d/fence.tmp" && mv "$d/fence.tmp" "$d/fence"; echo $$ > "$d/pid"
    while [ ! -e "$d/go" ]; do sleep 0.02; done
    "$@" A > "$d/out" 2>&1; echo $? > "$d/rc.tmp"; mv "$d/rc.tmp" "$d/rc"' sh "$d" "$write" &
  holder=$!
  wait_until 30 "holder A started" test -s "$d/pid" -a -s "$d/fence"
  child=$(cat "$d/pid")
  FENCE_A=$(cat "$d/fence")
  kill -STOP "$holder" "$child"
  # A's lock expires while it is stopped: no renewal, and nobody to notice.
  wait_until 30 "A's lock expired" sh -c "! $DLOCK check '$name' '$FENCE_A'"
  # shellcheck disable=SC2016
  $DLOCK run -n -t 30s "$name" -- sh -c 'echo "$DLOCK_FENCE" > "$0/fence-b"; "$@" B' \
    "$d" "$write" || b_rc=$?
  expect_eq "$b_rc" 0 "holder B's run"
  FENCE_B=$(cat "$d/fence-b")
  [ "$FENCE_B" -gt "$FENCE_A" ] || fail "B's fence $FENCE_B is not above A's $FENCE_A"
  # A wakes, still believing it holds the lock, and writes; then dlock wakes
  # too (it finds the lock lost; the command has ended already).
  touch "$d/go"
  kill -CONT "$child"
  wait_until 30 "A's write" test -s "$d/rc"
  kill -CONT "$holder"
  wait "$holder" || true
  # shellcheck disable=SC2034 # results, for the caller
  A_RC=$(cat "$d/rc")
  # shellcheck disable=SC2034
  A_OUT=$(cat "$d/out")
}

# counter_jobs NAME JOBS WRITE: JOBS holders at once, each running the
# program WRITE (no argument) under NAME; every run must succeed.
counter_jobs() {
  local name=$1 jobs=$2 write=$3 pids=() i rc
  for ((i = 0; i < jobs; i++)); do
    $DLOCK run -t 30s -w $(( 120 * slowdown ))s "$name" -- "$write" &
    pids+=($!)
  done
  for i in "${pids[@]}"; do
    rc=0
    wait "$i" || rc=$?
    expect_eq "$rc" 0 "a counter job's run"
  done
}
