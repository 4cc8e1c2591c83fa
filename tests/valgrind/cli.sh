#!/usr/bin/env bash
# The dlock command under valgrind: no leak, no invalid access, in the
# process that runs the renewal thread and forks the command.
#   cli.sh DLOCK_BINARY SOURCE_DIR
set -euo pipefail
dlock=$1 src=$2
. "$src/scripts/redis-lib.sh"
work=$(mktemp -d /tmp/dlock-valgrind-XXXXXX)
trap 'stop_redis; rm -rf "$work"' EXIT
start_redis "$work"
export DLOCK_REDIS="redis://127.0.0.1:$REDIS_PORT"

vg() {
  valgrind --quiet --error-exitcode=99 --leak-check=full --show-leak-kinds=definite,indirect \
    --errors-for-leak-kinds=definite,indirect --track-fds=no "$dlock" "$@"
}

token=$(vg acquire -t 10 vg:lock)
vg status vg:lock >/dev/null
vg extend -t 20 vg:lock "$token"
vg release vg:lock "$token"
# run: renewal thread (TTL 300 ms: several renewals), a child, a release
vg run -t 300ms vg:run -- sleep 1
# run: the lock lost while the command runs (exit 70)
(for _ in $(seq 300); do
   [ "$(redis-cli -p "$REDIS_PORT" exists vg:lost)" = 1 ] && break
   sleep 0.05
 done
 sleep 0.5
 redis-cli -p "$REDIS_PORT" del vg:lost >/dev/null) &
set +e
vg -q run -t 300ms vg:lost -- sleep 5 2>/dev/null
rc=$?
set -e
[ "$rc" -eq 70 ] || { echo "expected 70 after the loss, got $rc" >&2; exit 1; }
# busy, usage error, unreachable server
vg acquire -t 10 vg:busy >/dev/null
set +e
vg run -n vg:busy -- true 2>/dev/null; [ $? -eq 75 ] || exit 1
vg run --bogus 2>/dev/null; [ $? -eq 64 ] || exit 1
DLOCK_REDIS=redis://127.0.0.1:1 vg status vg:x 2>/dev/null; [ $? -eq 69 ] || exit 1
set -e
echo "valgrind: dlock clean in 9 runs"
