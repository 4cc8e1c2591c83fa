#!/usr/bin/env bash
# Installs the build into a temporary prefix and builds a consumer against it,
# once with pkg-config and once with find_package(dlock).
set -euo pipefail
# (grep without -q after a pipe: an early exit would kill the writer with
# SIGPIPE, and pipefail would report that as a failure.)
build=$1 src=$2
prefix=$(mktemp -d /tmp/dlock-install-XXXXXX)
trap 'rm -rf "$prefix"' EXIT

"$CMAKE" --install "$build" --prefix "$prefix" >/dev/null
test -f "$prefix/include/dlock.h"
libdir=$(dirname "$(find "$prefix" -name 'libdlock.so.1' | head -1)")
test -L "$libdir/libdlock.so"
test -f "$libdir/libdlock.a"
objdump -p "$libdir/libdlock.so.1" | grep 'SONAME *libdlock.so.1' >/dev/null

# Only dlock_* symbols are exported.
if nm -D --defined-only "$libdir/libdlock.so.1" | awk '$2 ~ /[TDB]/ {print $3}' | grep -v '^dlock_'; then
  echo "unexpected exported symbols above" >&2
  exit 1
fi

# The installed command finds the installed library by itself (a RUNPATH
# relative to it: the prefix is not a system directory), without
# LD_LIBRARY_PATH or ldconfig.
env -u LD_LIBRARY_PATH "$prefix/bin/dlock" --version | grep dlock >/dev/null
env -u LD_LIBRARY_PATH ldd "$prefix/bin/dlock" | grep "libdlock.so.1 => $prefix/" >/dev/null
# shellcheck disable=SC2016 # the RUNPATH's own $ORIGIN
readelf -d "$prefix/bin/dlock" | grep 'RUNPATH.*\$ORIGIN/' >/dev/null
test -f "$prefix/share/man/man3/libdlock.3"
# The completion the build wrote, whole: it defines the completion function.
bash -c '. "$1" && declare -F _dlock' - "$prefix/share/bash-completion/completions/dlock" >/dev/null
# The guards at the resource, as they are in the tree (docs/fencing.md).
cmp "$prefix/share/dlock/dlock_fence.sql" "$src/contrib/postgresql/dlock_fence.sql"
cmp "$prefix/share/dlock/dlock_fence.lua" "$src/contrib/redis/dlock_fence.lua"

export PKG_CONFIG_PATH="$libdir/pkgconfig"
# shellcheck disable=SC2046 # pkg-config prints several words
cc -o "$prefix/consumer-pc" "$src/examples/mutex.c" $(pkg-config --cflags --libs dlock)
# It runs against the installed library (and, without arguments, says how to use it).
out=$(LD_LIBRARY_PATH="$libdir" "$prefix/consumer-pc" 2>&1) && exit 1
grep -q usage <<<"$out"

mkdir -p "$prefix/consumer"
cat > "$prefix/consumer/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.18)
project(consumer C)
find_package(dlock REQUIRED)
add_executable(consumer $src/examples/mutex.c)
target_link_libraries(consumer PRIVATE dlock::dlock)
CMAKE
"$CMAKE" -S "$prefix/consumer" -B "$prefix/consumer/build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
"$CMAKE" --build "$prefix/consumer/build" >/dev/null
test -x "$prefix/consumer/build/consumer"
echo "install ok: the installed dlock runs; pkg-config and find_package(dlock) consumers built"
