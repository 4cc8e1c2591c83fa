#!/usr/bin/env bash
# debian/copyright carries LICENSE's text (after its title and copyright
# line, which are the Copyright field) as the Expat license.
#   license.sh SOURCE_DIR
set -euo pipefail
src=$1
ours=$(sed -n '/^Permission is hereby granted/,$p' "$src/LICENSE")
theirs=$(sed -n '/^License: Expat$/,$p' "$src/debian/copyright" | sed -n '/^ Permission/,$p' |
  sed 's/^ //; s/^\.$//')
[ -n "$ours" ] && [ "$ours" = "$theirs" ] || {
  echo "license: debian/copyright's Expat text differs from LICENSE" >&2
  diff <(printf '%s\n' "$ours") <(printf '%s\n' "$theirs") >&2 || true
  exit 1
}
grep -q '^Files: \*$' "$src/debian/copyright"
echo "license ok: debian/copyright carries LICENSE's text"
