#!/usr/bin/env bash
# The four .debs, unpacked into a scratch root (dpkg -x), are what a system
# that installs them gets: the command runs the README's first example
# against a redis-server, a program builds against libdlock-dev with
# pkg-config and with find_package(dlock) and takes turns on a lock, the man
# pages and the bash completion are where man and bash look.
#   check.sh DEB_DIR SOURCE_DIR
set -euo pipefail
debs=$1 src=$2
root=$(mktemp -d /tmp/dlock-pkg-XXXXXX)
. "$src/scripts/redis-lib.sh"
trap 'stop_redis; rm -rf "$root"' EXIT

for deb in "$debs"/libdlock1_*.deb "$debs"/libdlock-dev_*.deb "$debs"/dlock_*.deb; do
  dpkg -x "$deb" "$root"
done
libdir=$root/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)
test -f "$root/usr/share/man/man1/dlock.1.gz"
test -f "$root/usr/share/man/man3/libdlock.3.gz"
test -f "$root/usr/share/bash-completion/completions/dlock"
test -f "$root/usr/share/dlock/dlock_fence.sql"
test -f "$root/usr/share/dlock/dlock_fence.lua"
# Under /usr the loader finds the library: no RUNPATH (Debian forbids one).
if readelf -d "$root/usr/bin/dlock" | grep -E 'RPATH|RUNPATH'; then
  echo "package: /usr/bin/dlock carries a search path" >&2
  exit 1
fi
# What the packages depend on is what the library needs.
dpkg-deb -f "$debs"/dlock_*.deb Depends | grep 'libdlock1 (>= ' >/dev/null

start_redis "$root"
url=redis://127.0.0.1:$REDIS_PORT
export LD_LIBRARY_PATH=$libdir # as if the library were in /usr/lib

# The README's first example: a job that takes its turn, and one that gives
# up at once on a busy lock.
"$root/usr/bin/dlock" -r "$url" run -n nightly-report -- true
"$root/usr/bin/dlock" -r "$url" run nightly-report -- sleep 1 &
holder=$!
sleep 0.3
rc=0
"$root/usr/bin/dlock" -q -r "$url" run -n nightly-report -- true || rc=$?
wait "$holder"
[ "$rc" = 75 ] || { echo "package: a busy lock gave $rc, not 75" >&2; exit 1; }

# A program built against the installed headers and library, with pkg-config.
export PKG_CONFIG_PATH=$libdir/pkgconfig
# shellcheck disable=SC2046 # pkg-config prints several words
cc -Wall -Werror -o "$root/mutex-pc" "$src/examples/mutex.c" $(pkg-config --cflags --libs dlock)
# ... from the scratch root, not from anything installed on this machine.
# shellcheck disable=SC2046
cc -M "$src/examples/mutex.c" $(pkg-config --cflags dlock) | grep "$root/.*/dlock.h" >/dev/null
ldd "$root/mutex-pc" | grep "libdlock.so.1 => $libdir/" >/dev/null
# And with the CMake package.
mkdir -p "$root/consumer"
cat >"$root/consumer/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.18)
project(consumer C)
find_package(dlock REQUIRED)
add_executable(mutex-cmake $src/examples/mutex.c)
target_link_libraries(mutex-cmake PRIVATE dlock::dlock)
CMAKE
cmake -S "$root/consumer" -B "$root/consumer/build" -DCMAKE_PREFIX_PATH="$root/usr" >/dev/null
cmake --build "$root/consumer/build" >/dev/null

# The two programs take turns on one lock: the second waits for the first's
# release, and its fence is larger.
"$root/mutex-pc" "$url" pkg:turns 1500 >"$root/first.out" &
first=$!
sleep 0.3
"$root/consumer/build/mutex-cmake" "$url" pkg:turns 100 >"$root/second.out"
wait "$first"
fence() { awk '/^got/ { print $NF }' "$1"; }
grep -q '^released' "$root/first.out"
[ "$(fence "$root/second.out")" -gt "$(fence "$root/first.out")" ]
grep -q 'attempt(s)' "$root/second.out"

# The Python module of python3-dlock, on the packaged library (found by the
# loader through its SONAME), excludes a second holder.
dpkg -x "$debs"/python3-dlock_*.deb "$root"
dpkg-deb -f "$debs"/python3-dlock_*.deb Depends | grep 'libdlock1 (>= ' >/dev/null
env -u DLOCK_LIBRARY PYTHONPATH="$root/usr/lib/python3/dist-packages" /usr/bin/python3 - "$url" "$root" <<'PY'
import sys
import dlock
url, root = sys.argv[1:]
assert dlock.__file__.startswith(root + "/"), dlock.__file__
with dlock.Client(url) as client:
    with client.lock("pkg:python", ttl=5) as lock:
        assert lock.held() and lock.fence > 0
        try:
            client.lock("pkg:python", wait=0)
            raise SystemExit("package: python3-dlock took a held lock twice")
        except dlock.Busy:
            pass
maps = open("/proc/self/maps").read()
assert f"{root}/usr/lib/" in maps and "libdlock.so.1" in maps, "not the packaged library"
PY
echo "package ok: dlock ran the README's example; pkg-config and find_package(dlock) programs took turns; python3-dlock took a lock"
