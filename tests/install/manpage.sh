#!/usr/bin/env bash
# libdlock(3) names every function the header exports, and man renders it
# without a warning.
#   manpage.sh SOURCE_DIR
set -euo pipefail
src=$1
page=$src/docs/libdlock.3
missing=0
for f in $(grep -A1 '^DLOCK_EXTERN' "$src/include/dlock.h" | grep -o 'dlock_[a-z_0-9]*(' | tr -d '(' | sort -u); do
  grep -Eq "(^|[^a-z_])$f([^a-z_0-9]|$)" "$page" || { echo "libdlock.3 does not name $f" >&2; missing=1; }
done
[ "$missing" = 0 ]
warnings=$(LC_ALL=C.UTF-8 MANROFFSEQ='' MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 -Z "$page" 2>&1 >/dev/null)
[ -z "$warnings" ] || { echo "$warnings" >&2; exit 1; }
echo "libdlock.3 ok: every exported function is named"
