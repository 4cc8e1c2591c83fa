#!/usr/bin/env bash
# No source file of the library includes a header of a layer above its own
# (docs/architecture.md): base, net, engine, kinds, api, bottom up. So the
# engine never sees a kind: the API hands it one.
#   layers.sh SOURCE_DIR
set -euo pipefail
src=$1/src
layers=(base net engine kinds api)
rank() {
  for i in "${!layers[@]}"; do
    if [ "${layers[$i]}" = "$1" ]; then echo "$i"; fi
  done
}
bad=0
for layer in "${layers[@]}"; do
  own=$(rank "$layer")
  for file in "$src/$layer"/*.[ch]; do
    for header in $(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$file"); do
      for found in "$src"/*/"$header"; do
        [ -e "$found" ] || continue
        theirs=$(basename "$(dirname "$found")")
        if [ "$(rank "$theirs")" -gt "$own" ]; then
          echo "layers: ${file#"$1"/} includes $theirs/$header, a layer above $layer" >&2
          bad=1
        fi
      done
    done
  done
done
[ "$bad" -eq 0 ] || exit 1
echo "layers ok: no file includes a header of a layer above its own"
