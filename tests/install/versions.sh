#!/usr/bin/env bash
# One version everywhere it is written by hand: CMakeLists.txt's project(),
# the header's DLOCK_VERSION_STRING, debian/changelog's top entry (its
# upstream part), the .TH lines of the man pages and the Python package's
# version.
#   versions.sh SOURCE_DIR
set -euo pipefail
src=$1
want=$(sed -n 's/^project(dlock VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
[ -n "$want" ] || { echo "versions: no project(dlock VERSION ...) in CMakeLists.txt" >&2; exit 1; }
bad=0
check() { # WHERE VERSION
  [ "$2" = "$want" ] || { echo "versions: $1 says '$2', CMakeLists.txt says $want" >&2; bad=1; }
}
check include/dlock.h "$(sed -n 's/^#define DLOCK_VERSION_STRING "\(.*\)"/\1/p' "$src/include/dlock.h")"
check debian/changelog "$(sed -n '1s/^dlock (\([^)-]*\).*/\1/p' "$src/debian/changelog")"
for page in docs/dlock.1 docs/libdlock.3; do
  check "$page" "$(sed -n 's/^\.TH .*"dlock \([^"]*\)".*/\1/p' "$src/$page")"
done
check bindings/python/pyproject.toml "$(sed -n 's/^version = "\(.*\)"/\1/p' "$src/bindings/python/pyproject.toml")"
check bindings/python/dlock/__init__.py "$(sed -n 's/^__version__ = "\(.*\)"/\1/p' "$src/bindings/python/dlock/__init__.py")"
[ "$bad" = 0 ]
echo "versions ok: $want everywhere"
