#!/usr/bin/env bash
# libdlock(3) names every function the header exports. (lintian, in
# scripts/package, checks that man renders it without a warning.)
#   manpage.sh SOURCE_DIR
set -euo pipefail
src=$1
page=$src/docs/libdlock.3
missing=0
while read -r f; do
  grep -Eq "(^|[^a-z_])$f([^a-z_0-9]|$)" "$page" || { echo "libdlock.3 does not name $f" >&2; missing=1; }
done < <(sed -n 's/^DLOCK_EXTERN[^(]*[ *]\(dlock_[a-z_0-9]*\)(.*/\1/p' "$src/include/dlock.h")
[ "$missing" = 0 ]
echo "libdlock.3 ok: every exported function is named"
