#!/bin/sh
# A job that writes a report into Redis under the lock `report`, with the
# write guarded by the lock's fencing token: a holder that lost its lock
# while it was paused, and wakes after another holder has written, is
# refused (STALE) and writes nothing.
#
# Once per server:   dlock guard load-redis
# Each run:          dlock run report -- ./fence-redis.sh "the report's text"
#
# The data key and its fence key share a hash tag, so that they sit in one
# slot of a Redis Cluster. REDISCLI_ARGS: how to reach the server (-h, -p,
# --tls, --user...); the password, if any, in REDISCLI_AUTH.
set -eu
body=$1
# shellcheck disable=SC2086 # REDISCLI_ARGS is a list of options
reply=$(redis-cli ${REDISCLI_ARGS:-} FCALL dlock_fenced_set 2 '{report}:body' '{report}:fence' \
        "$body" "$DLOCK_FENCE")
# redis-cli exits 0 after an error reply: the reply says whether it worked.
if [ "$reply" != OK ]; then
  echo "report not written: $reply" >&2
  exit 1
fi
